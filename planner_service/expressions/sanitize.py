"""A filter with its values replaced by descriptions, as Iceberg Java's ExpressionUtil.sanitize writes the
filter of a ScanReport: numbers by their digits and kind ("(2-digit-int)"), dates and timestamps by their
distance from now ("(date-3-days-ago)", "(timestamp)"), times as "(time)", other values by a hash
("(hash-6132d65f)": Iceberg's bucket[Integer.MAX_VALUE] of the value's Java text). Bound first (as the
scan binds it, which folds what the schema decides), else sanitized unbound."""

from __future__ import annotations

import math
import re
import time
import uuid
from typing import Any

import mmh3

from planner_service.errors import PlannerError
from planner_service.expressions.binding import bind
from planner_service.expressions.expression import (
    SET_OPS,
    UNARY_OPS,
    BoundPredicate,
    BoundReference,
    BoundTerm,
    Expression,
    Reference,
    UnboundPredicate,
    UnboundTerm,
    UnboundTransform,
)
from planner_service.expressions.literals import Literal, convert
from planner_service.expressions.visitor import RebuildingVisitor, visit
from planner_service.metadata.json_values import to_json_value
from planner_service.metadata.types import IcebergType, PrimitiveType, Schema

MICROS_PER_HOUR = 3_600_000_000
FIVE_MINUTES_MICROS = 300_000_000
INT_MAX = 2**31 - 1
_TIME = r"\d{2}:\d{2}(:\d{2}(.\d{1,9})?)?"
_ZONE = r"([-+]\d{2}:\d{2}|Z)"
_STRING_FORMS = (  # ExpressionUtil's patterns, in its order: the first whose type parses the text
    (re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII), "date"),
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(.\d{7,9})?)?", re.ASCII), "timestamp_ns"),
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(.\d{7,9})?)?" + _ZONE, re.ASCII), "timestamptz_ns"),
    (re.compile(r"\d{4}-\d{2}-\d{2}T" + _TIME, re.ASCII), "timestamp"),
    (re.compile(r"\d{4}-\d{2}-\d{2}T" + _TIME + _ZONE, re.ASCII), "timestamptz"),
    (re.compile(_TIME, re.ASCII), "time"),
)


def sanitized(expr: Expression, schema: Schema, case_sensitive: bool = True, now_ms: int | None = None) -> Expression:
    """`expr` bound to `schema` (or, when it does not bind, as it is) with every value a description."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    sanitizer = _Sanitizer(now_ms * 1000, now_ms // 86_400_000)
    try:
        return visit(bind(schema, expr, case_sensitive), sanitizer)
    except PlannerError:  # it does not bind: sanitized unbound, as Java does
        return visit(expr, sanitizer)


class _Sanitizer(RebuildingVisitor):
    """Java ExpressionUtil's sanitizing visitors: predicates unbound, each value replaced by its description."""

    def __init__(self, now_micros: int, today: int) -> None:
        self._clock = (now_micros, today)

    def visit_bound_predicate(self, pred: BoundPredicate) -> Expression:
        term = _unbound(pred.term)
        if pred.op in UNARY_OPS:
            return UnboundPredicate(pred.op, term)
        values = pred.values if pred.op in SET_OPS else (pred.literal,)
        return UnboundPredicate(pred.op, term, tuple(_text(_of_type(pred.term.type, v, self._clock)) for v in values))

    def visit_unbound_predicate(self, pred: UnboundPredicate) -> Expression:
        if pred.literals is None:
            return pred
        return UnboundPredicate(
            pred.op, pred.term, tuple(_text(_of_literal(lit, self._clock)) for lit in pred.literals)
        )


def _unbound(term: BoundTerm) -> UnboundTerm:
    """ExpressionUtil.unbind: the reference by the name the filter used, a transform of it."""
    if isinstance(term, BoundReference):
        return Reference(term.name)
    return UnboundTransform(Reference(term.ref.name), term.transform)


def _text(description: str) -> Literal:
    return Literal("string", description)


def _of_type(typ: IcebergType, value: Any, clock: tuple[int, int]) -> str:
    """sanitize(Type, value): a bound value by its term's type."""
    kind = typ.kind if isinstance(typ, PrimitiveType) else ""
    if kind in ("int", "long"):
        return _number(value, "int")
    if kind in ("float", "double"):
        return _number(value, "float")
    if kind == "date":
        return _date(value, clock[1])
    if kind == "time":
        return "(time)"
    if kind in ("timestamp", "timestamptz"):
        return _timestamp(value, clock[0])
    if kind in ("timestamp_ns", "timestamptz_ns"):
        return _timestamp((value // 1000) // 1000, clock[0])  # (Java divides twice here)
    if kind == "string":
        return _string(value, clock)
    if kind == "unknown":
        return "(unknown)"
    return _hash(_java_text(typ, value))


def _of_literal(lit: Literal, clock: tuple[int, int]) -> str:
    """sanitize(Literal): an unbound value by its own kind."""
    if lit.kind == "string":
        return _string(lit.value, clock)
    if lit.kind == "date":
        return _date(lit.value, clock[1])
    if lit.kind in ("timestamp", "timestamptz"):
        return _timestamp(lit.value, clock[0])
    if lit.kind in ("timestamp_ns", "timestamptz_ns"):
        return _timestamp(lit.value // 1000, clock[0])
    if lit.kind == "time":
        return "(time)"
    if lit.kind in ("int", "long"):
        return _number(lit.value, "int")
    if lit.kind in ("float", "double"):
        return _number(lit.value, "float")
    return _hash(_java_text(None, lit.value))


def _java_text(typ: IcebergType | None, value: Any) -> str:
    """Java's toString() of an internal value: a BigDecimal at its scale, a UUID, a boolean, and for bytes
    the ByteBuffer itself (Java hashes "java.nio.HeapByteBuffer[pos=0 lim=N cap=N]", not the bytes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes | bytearray | memoryview):
        size = len(bytes(value))
        return f"java.nio.HeapByteBuffer[pos=0 lim={size} cap={size}]"
    if isinstance(value, uuid.UUID):
        return str(value)
    if typ is not None:
        text = to_json_value(typ, value)
        return text if isinstance(text, str) else str(text)
    return str(value)


def _number(value: Any, kind: str) -> str:
    number = abs(float(value))
    if number == 0.0:
        digits = 1
    elif math.isinf(number):
        digits = -(2**31)  # Java: (int) Infinity + 1 overflows
    else:
        digits = int(math.log10(number)) + 1
    return f"({digits}-digit-{kind})"


def _date(days: int, today: int) -> str:
    diff = abs(today - days)
    if diff == 0:
        return "(date-today)"
    if diff < 90:
        return f"(date-{diff}-days-{'ago' if today > days else 'from-now'})"
    return "(date)"


def _timestamp(micros: int, now: int) -> str:
    diff = abs(now - micros)
    if diff < FIVE_MINUTES_MICROS:
        return "(timestamp-about-now)"
    when = "ago" if now > micros else "from-now"
    hours = diff // MICROS_PER_HOUR
    if hours <= 72:
        return f"(timestamp-{hours}-hours-{when})"
    if hours < 90 * 24:
        return f"(timestamp-{hours // 24}-days-{when})"
    return "(timestamp)"


def _string(value: str, clock: tuple[int, int]) -> str:
    for pattern, kind in _STRING_FORMS:
        if pattern.fullmatch(value):
            if kind == "time":
                return "(time)"
            converted = _converted(value, kind)
            if converted is None:
                break
            if kind == "date":
                return _date(converted, clock[1])
            micros = converted // 1000 if kind.endswith("_ns") else converted
            return _timestamp(micros, clock[0])
    return _hash(value)


def _converted(text: str, kind: str) -> int | None:
    try:
        lit = convert(Literal("string", text), PrimitiveType(kind))
    except (PlannerError, ValueError):
        return None
    return lit.value if isinstance(lit, Literal) else None


def _hash(text: str) -> str:
    """Iceberg's bucket[Integer.MAX_VALUE] of a string, as hex."""
    code = (mmh3.hash(text.encode("utf-8"), 0) & INT_MAX) % INT_MAX
    return f"(hash-{code:08x})"

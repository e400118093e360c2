"""Expressions written as filter strings: the text `parse_filter` reads back as the same expression, for the
words people read (explain's reasons, the plan explorer) in the syntax they write.

`filter_text(expr)` writes an unbound or bound expression: AND, OR and NOT parenthesized only where the
parser's precedence (OR < AND < NOT < a predicate) and its left-to-right grouping need it; comparisons,
IN / NOT IN, IS [NOT] NULL, IS [NOT] NAN, LIKE 'prefix%' for starts-with; transforms as bucket(16, id),
truncate(4, name), day(ts); names in backticks where a bare word would not read as that column. For every
unbound expression the constructors can make, `parse_filter(filter_text(e)) == e`; the exceptions are what
the syntax cannot say: an empty IN list, a starts-with of a non-string value, an identity, void or unknown
transform (identity is written as its column, the others by name).

`value_text(type, value)` writes one value of an Iceberg type (internal form, as metadata/conversions.py
decodes it) as a filter writes a literal: 'text' with quotes doubled, DATE '2024-01-02', TIMESTAMP
'2024-01-02 03:04:05.5', DECIMAL '12.30', UUID '...', X'0A0B', null. Bound values read back as a literal
that binds to the same value: a timestamptz carries its offset (+00:00), a float its shortest text, and a
date, time or timestamp outside what the typed literals can spell is written as its number (which a long
binds to unchanged); infinity is 1e999, the number the parser reads as infinite.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any

import numpy as np

from planner_service.expressions.expression import (
    SET_OPS,
    UNARY_OPS,
    BoundPredicate,
    BoundReference,
    Expression,
    Op,
    Reference,
    Term,
    UnboundPredicate,
    predicate,
)
from planner_service.expressions.filter_string import FilterSyntaxError, parse_filter
from planner_service.expressions.literals import FLOAT_MAX, Literal, to_float32
from planner_service.expressions.visitor import ExpressionVisitor, visit
from planner_service.metadata.json_values import to_json_value
from planner_service.metadata.types import IcebergType, PrimitiveType

__all__ = ["filter_text", "literal_text", "name_text", "string_text", "term_text", "value_text"]


def filter_text(expr: Expression) -> str:
    """`expr` as a filter string (see the module's docstring)."""
    return visit(expr, _Writer()).text


# --- AND, OR, NOT and precedence ----------------------------------------------------------------------------

_OR, _AND, _NOT, _ATOM = range(4)  # how tightly each kind of text binds, loosest first
# predicates the parser folds a NOT in front of into their own negation (NOT x IN (..) is x NOT IN (..)):
# a NOT of one is written NOT (x IN (..)) to stay a NOT
_FOLDS_NOT = UNARY_OPS | SET_OPS | {Op.STARTS_WITH, Op.NOT_STARTS_WITH}


@dataclass(frozen=True)
class _Text:
    """Some filter text, how tightly it binds, and whether a NOT written before it would fold into it."""

    text: str
    binds: int = _ATOM
    folds_not: bool = False

    def within(self, binds: int, strictly: bool = False) -> str:
        """The text as an operand of an operator that binds `binds`: in parentheses when it binds less
        tightly (or no more tightly, when `strictly`: the right side of a left-grouping AND or OR)."""
        loose = self.binds <= binds if strictly else self.binds < binds
        return f"({self.text})" if loose else self.text


class _Writer(ExpressionVisitor[_Text]):
    """Each node's text from its children's; a predicate's from its term and values."""

    def visit_true(self) -> _Text:
        return _Text("true")

    def visit_false(self) -> _Text:
        return _Text("false")

    def visit_not(self, child: _Text) -> _Text:
        operand = f"({child.text})" if child.folds_not else child.within(_NOT)
        return _Text(f"NOT {operand}", _NOT)

    def visit_and(self, left: _Text, right: _Text) -> _Text:
        return _Text(f"{left.within(_AND)} AND {right.within(_AND, strictly=True)}", _AND)

    def visit_or(self, left: _Text, right: _Text) -> _Text:
        return _Text(f"{left.within(_OR)} OR {right.within(_OR, strictly=True)}", _OR)

    def visit_unbound_predicate(self, pred: UnboundPredicate) -> _Text:
        term = term_text(pred.term)
        if pred.op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
            prefix = pred.literal.value
            return _predicate(pred.op, term, [], prefix if pred.literal.kind == "string" else str(prefix))
        return _predicate(pred.op, term, [literal_text(lit) for lit in pred.literals or ()])

    def visit_bound_predicate(self, pred: BoundPredicate) -> _Text:
        term = term_text(pred.term)
        if pred.op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
            return _predicate(pred.op, term, [], str(pred.literal))
        values = pred.values if pred.op in SET_OPS else () if pred.op in UNARY_OPS else (pred.literal,)
        return _predicate(pred.op, term, [value_text(pred.term.type, v) for v in values])


# --- Predicates ---------------------------------------------------------------------------------------------

_COMPARISONS = {Op.EQ: "=", Op.NOT_EQ: "!=", Op.LT: "<", Op.LT_EQ: "<=", Op.GT: ">", Op.GT_EQ: ">="}
_UNARY = {Op.IS_NULL: "IS NULL", Op.NOT_NULL: "IS NOT NULL", Op.IS_NAN: "IS NAN", Op.NOT_NAN: "IS NOT NAN"}
_LIKE_ESCAPE = "!"


def _predicate(op: Op, term: str, values: list[str], prefix: str = "") -> _Text:
    """A predicate's text from its term's and its values' (or a starts-with's prefix)."""
    if op in _UNARY:
        text = f"{term} {_UNARY[op]}"
    elif op in SET_OPS:
        text = f"{term} {'IN' if op is Op.IN else 'NOT IN'} ({', '.join(values)})"
    elif op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        text = f"{term} {'LIKE' if op is Op.STARTS_WITH else 'NOT LIKE'} {_like_pattern(prefix)}"
    else:
        text = f"{term} {_COMPARISONS[op]} {values[0]}"
    return _Text(text, _ATOM, op in _FOLDS_NOT)


def _like_pattern(prefix: str) -> str:
    """'prefix%', with an ESCAPE clause when the prefix holds a wildcard of its own (% or _)."""
    if "%" not in prefix and "_" not in prefix:
        return string_text(prefix + "%")
    escaped = "".join(_LIKE_ESCAPE + c if c in ("%", "_", _LIKE_ESCAPE) else c for c in prefix)
    return f"{string_text(escaped + '%')} ESCAPE {string_text(_LIKE_ESCAPE)}"


# --- Terms and names ----------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WIDTH_FIRST = frozenset({"bucket", "truncate"})  # bucket(16, id), as Spark writes them
_BY_NAME = frozenset({"year", "month", "day", "hour"})  # day(ts)


def term_text(term: Term) -> str:
    """A column by its name, or a transform of one as a filter calls it."""
    if isinstance(term, Reference | BoundReference):
        return name_text(term.name)
    column, transform = name_text(term.ref.name), term.transform
    if transform.name in _WIDTH_FIRST:
        return f"{transform.name}({transform.param}, {column})"
    if transform.name == "identity":
        return column
    return f"{transform.name}({column})"  # year, month, day, hour (and void or an unknown one, unreadable)


@lru_cache(maxsize=4096)
def name_text(name: str) -> str:
    """A (dotted) column name as a filter writes it: plain words bare, other parts in backticks; all of them
    in backticks when the bare words would not read as this column (a keyword, `nan`, `current_date`)."""
    parts = name.split(".")
    quoted = ".".join(_backticked(part) for part in parts)
    text = ".".join(part if _WORD.fullmatch(part) else _backticked(part) for part in parts)
    return text if text == quoted or _reads_as_column(text, name) else quoted


def _backticked(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


def _reads_as_column(text: str, name: str) -> bool:
    """Does the filter parser read `text` as the column `name` (asked of the parser itself, which is the
    only complete list of the words it treats specially)?"""
    try:
        return parse_filter(f"{text} = 0") == predicate(Op.EQ, Reference(name), Literal("long", 0))
    except FilterSyntaxError:
        return False


# --- Values -------------------------------------------------------------------------------------------------


def literal_text(lit: Literal) -> str:
    """A literal as written in a filter: by the kind of value it is (a long 5, a double 5.0, a date)."""
    return value_text(PrimitiveType(lit.kind), lit.value)


def value_text(typ: IcebergType, value: Any) -> str:
    """One value of `typ` (its internal form) as a filter's literal; None is `null`."""
    if value is None:
        return "null"
    kind = typ.kind if isinstance(typ, PrimitiveType) else ""
    write = _VALUE_WRITERS.get(kind)
    return write(typ, value) if write is not None else str(value)


def string_text(text: str) -> str:
    """A quoted string, its quotes doubled."""
    return "'" + text.replace("'", "''") + "'"


def _boolean(typ: IcebergType, value: Any) -> str:
    return "true" if value else "false"


def _integer(typ: IcebergType, value: Any) -> str:
    return str(int(value))


def _double(typ: IcebergType, value: Any) -> str:
    """repr's shortest digits ('5.0' keeps a double a double); infinities as 1e999; NaN (a bound, never a
    literal) as NaN."""
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "1e999" if number > 0 else "-1e999"
    return repr(number)


def _float(typ: IcebergType, value: Any) -> str:
    """The shortest digits that name this float (0.1, not 0.10000000149011612), when they bind back to it;
    else the double's."""
    number = float(value)
    if not math.isfinite(number):
        return _double(typ, number)
    short = str(np.float32(number))
    again = float(short)
    return short if abs(again) <= FLOAT_MAX and to_float32(again) == number else _double(typ, number)


def _decimal(typ: IcebergType, value: Any) -> str:
    """DECIMAL 'digits': at the type's scale when bound (12.30 in a decimal(9,2)), else as written."""
    scale = typ.scale if isinstance(typ, PrimitiveType) else None
    text = str(value) if scale is None else str(to_json_value(typ, Decimal(value)))
    return f"DECIMAL {string_text(text)}"


def _string(typ: IcebergType, value: Any) -> str:
    return string_text(str(value))


def _uuid(typ: IcebergType, value: Any) -> str:
    return f"UUID {string_text(str(to_json_value(typ, value)))}"


def _bytes(typ: IcebergType, value: Any) -> str:
    return f"X'{bytes(value).hex().upper()}'"


_EPOCH_DATE = date(1970, 1, 1)
_DAY_SECONDS = 86_400


def _date(typ: IcebergType, value: Any) -> str:
    day = _day_text(int(value))
    return f"DATE '{day}'" if day is not None else str(int(value))


def _time(typ: IcebergType, value: Any) -> str:
    micros = int(value)
    if not 0 <= micros < _DAY_SECONDS * 10**6:
        return str(micros)
    return f"TIME '{_clock_text(micros, 10**6)}'"


def _timestamp(typ: IcebergType, value: Any) -> str:
    """TIMESTAMP '2024-01-02 03:04:05[.ffffff]' (TIMESTAMP_NS with nine digits), with +00:00 for a zoned type."""
    kind = typ.kind if isinstance(typ, PrimitiveType) else "timestamp"
    per_second = 10**9 if kind.endswith("_ns") else 10**6
    days, of_day = divmod(int(value), _DAY_SECONDS * per_second)
    day = _day_text(days)
    if day is None:
        return str(int(value))
    keyword = "TIMESTAMP_NS" if per_second == 10**9 else "TIMESTAMP"
    zone = "+00:00" if kind.startswith("timestamptz") else ""
    return f"{keyword} '{day} {_clock_text(of_day, per_second)}{zone}'"


def _day_text(days: int) -> str | None:
    """YYYY-MM-DD of a day from the epoch; None outside years 1 to 9999 (which DATE '...' cannot spell)."""
    try:
        return (_EPOCH_DATE + timedelta(days=days)).isoformat()
    except OverflowError:
        return None


def _clock_text(of_day: int, per_second: int) -> str:
    """HH:MM:SS of a time of day in 1/per_second units, with its fraction when it has one."""
    seconds, fraction = divmod(of_day, per_second)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    digits = len(str(per_second)) - 1
    tail = f".{fraction:0{digits}d}".rstrip("0") if fraction else ""
    return f"{hour:02d}:{minute:02d}:{second:02d}{tail}"


_VALUE_WRITERS = {
    "boolean": _boolean,
    "int": _integer,
    "long": _integer,
    "float": _float,
    "double": _double,
    "decimal": _decimal,
    "string": _string,
    "uuid": _uuid,
    "fixed": _bytes,
    "binary": _bytes,
    "date": _date,
    "time": _time,
    "timestamp": _timestamp,
    "timestamptz": _timestamp,
    "timestamp_ns": _timestamp,
    "timestamptz_ns": _timestamp,
}

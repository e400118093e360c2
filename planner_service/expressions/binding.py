"""Binding: resolve names against a schema and convert literals (Java Binder / UnboundPredicate.bind).

Binding can fold a predicate to a constant, exactly as Java does: a null test on a required column
whose ancestors are all required, a literal outside the column type's range, an IN list that loses
every value. The resulting tree is simplified with and_/or_/not_.
"""

from __future__ import annotations

import json

from planner_service.errors import BadRequestError
from planner_service.expressions.expression import (
    FALSE,
    SET_OPS,
    TRUE,
    UNARY_OPS,
    BoundPredicate,
    BoundReference,
    BoundTerm,
    BoundTransform,
    Expression,
    Op,
    Reference,
    UnboundPredicate,
    UnboundTerm,
)
from planner_service.expressions.filter_text import literal_text, string_text, term_text
from planner_service.expressions.literals import ABOVE_MAX, BELOW_MIN, Literal, convert
from planner_service.expressions.transforms import can_transform
from planner_service.expressions.visitor import RebuildingVisitor, visit
from planner_service.metadata.conversions import java_equality_key
from planner_service.metadata.types import IcebergType, PrimitiveType, Schema, java_type_string, unknown_column


class InvalidFilterError(BadRequestError):
    """The filter does not fit the table: an unknown column, a literal the column's type cannot take.

    The message is in the service's words (types as Iceberg names them, the nearest column names);
    `java_message` is Iceberg Java's message for the same refusal, which the parity tests hold it to
    (tests/conformance, tests/differential): the same refusal, for the same reason."""

    def __init__(self, message: str, java_message: str | None = None) -> None:
        super().__init__(message)
        self.java_message = message if java_message is None else java_message


def bind(schema: Schema, expr: Expression, case_sensitive: bool = True) -> Expression:
    """Bind every predicate of `expr` against `schema`; raises InvalidFilterError naming the problem."""
    return visit(expr, _Binder(schema, case_sensitive))


class _Binder(RebuildingVisitor):
    """Java Binder.BindVisitor: each unbound predicate bound, the tree rebuilt with and_/or_/not_."""

    def __init__(self, schema: Schema, case_sensitive: bool) -> None:
        self._schema, self._case_sensitive = schema, case_sensitive

    def visit_unbound_predicate(self, pred: UnboundPredicate) -> Expression:
        return bind_predicate(self._schema, pred, self._case_sensitive)

    def visit_bound_predicate(self, pred: BoundPredicate) -> Expression:
        raise ValueError(f"Found already bound predicate: {pred}")


def bind_term(schema: Schema, term: UnboundTerm, case_sensitive: bool = True) -> BoundTerm:
    ref = term if isinstance(term, Reference) else term.ref
    if not ref.name:
        raise InvalidFilterError("Invalid column name: (empty)")
    fld = schema.find_field_by_name(ref.name, case_sensitive)
    if fld is None:
        raise InvalidFilterError(
            f"Cannot find field '{ref.name}'{unknown_column(schema, ref.name)}",
            f"Cannot find field '{ref.name}' in struct: {java_type_string(schema.struct)}",
        )
    bound = BoundReference(fld, ref.name)
    if isinstance(term, Reference):
        return bound
    if not isinstance(fld.type, PrimitiveType) or not can_transform(term.transform, fld.type):
        raise InvalidFilterError(
            f"Cannot bind: {term.transform} cannot transform {java_type_string(fld.type)} values from '{ref.name}'"
        )
    return BoundTransform(bound, term.transform)


def bind_predicate(schema: Schema, pred: UnboundPredicate, case_sensitive: bool = True) -> Expression:
    term = bind_term(schema, pred.term, case_sensitive)
    if pred.op in UNARY_OPS:
        return _bind_unary(schema, pred.op, term)
    if pred.op in SET_OPS:
        return _bind_set(pred, term)
    return _bind_literal(pred, term)


def _bind_unary(schema: Schema, op: Op, term: BoundTerm) -> Expression:
    kind = term.type.kind if isinstance(term.type, PrimitiveType) else None
    if op in (Op.IS_NULL, Op.NOT_NULL):
        # 1.10.1+: a required field folds only when every enclosing field is required too
        if not term.produces_null and all(a.required for a in schema.ancestors(term.field_id)):
            return FALSE if op is Op.IS_NULL else TRUE
        if kind == "unknown":
            return TRUE if op is Op.IS_NULL else FALSE
        return BoundPredicate(op, term)
    if kind not in ("float", "double"):
        name = "IsNaN" if op is Op.IS_NAN else "NotNaN"
        raise InvalidFilterError(f"{name} cannot be used with a non-floating-point column ('{term.ref.name}')")
    return BoundPredicate(op, term)


# Java's Literal classes, which UnboundPredicate.bindInOperation names where bindLiteralOperation names the value's
_LITERAL_CLASSES = {
    "boolean": "BooleanLiteral",
    "int": "IntegerLiteral",
    "long": "LongLiteral",
    "float": "FloatLiteral",
    "double": "DoubleLiteral",
    "date": "DateLiteral",
    "time": "TimeLiteral",
    "timestamp": "TimestampLiteral",
    "timestamp_ns": "TimestampNanoLiteral",
    "decimal": "DecimalLiteral",
    "string": "StringLiteral",
    "uuid": "UUIDLiteral",
    "fixed": "FixedLiteral",
    "binary": "BinaryLiteral",
}
# how a value of a type is written as a string (in a JSON expression and in a filter string alike)
_WRITTEN = {
    "date": "'2024-01-31'",
    "time": "'10:15:30'",
    "timestamp": "'2024-01-31T10:15:30'",
    "timestamptz": "'2024-01-31T10:15:30+00:00' (with its offset)",
    "timestamp_ns": "'2024-01-31T10:15:30.123456789'",
    "timestamptz_ns": "'2024-01-31T10:15:30.123456789+00:00' (with its offset)",
    "uuid": "'f79c3e09-677c-4bbd-a479-3f349cb785e7'",
    "decimal": "'12.30'",
}
_NUMBERS = frozenset({"int", "long", "float", "double"})


def _conversion_error(term: BoundTerm, lit: Literal, in_set: bool = False) -> InvalidFilterError:
    """A literal the term's type cannot take, said in the service's words (the term, its type, the value as a
    filter writes it, how a value of the type is written), with Java's message for the parity tests."""
    typ = _type_name(term.type)
    message = f"Cannot compare {term_text(term)} ({typ}) with {_literal_words(lit)}{_how_written(term.type, lit)}"
    return InvalidFilterError(message, _java_conversion_message(term, lit, in_set))


def _type_name(typ: IcebergType) -> str:
    """A type as Iceberg names it: long, decimal(9, 2), fixed[16]; struct, list or map for a nested one."""
    return typ.name if isinstance(typ, PrimitiveType) else typ.kind


def _literal_words(lit: Literal) -> str:
    """The literal as a filter writes it, said with its kind where the text does not say it."""
    text = literal_text(lit)
    if lit.kind == "string":
        return f"the string {text}"
    if lit.kind in _NUMBERS:
        return f"the number {text}"
    if lit.kind == "boolean":
        return f"the boolean {text}"
    return text  # DATE '...', TIMESTAMP '...', DECIMAL '...', UUID '...', X'..' say their kind


def _how_written(typ: IcebergType, lit: Literal) -> str:
    """A hint for the usual mistakes: a string that does not read as a date, time, timestamp, uuid, decimal
    or bytes; a number for a string column."""
    kind = typ.kind if isinstance(typ, PrimitiveType) else None
    if lit.kind == "string" and kind in _WRITTEN:
        return f": a {kind} is written {_WRITTEN[kind]}"
    if lit.kind == "string" and isinstance(typ, PrimitiveType) and typ.kind == "fixed":
        return f": a {typ.name} value is {typ.length} bytes, written as {2 * (typ.length or 0)} hex digits"
    if lit.kind == "string" and kind == "binary":
        return ": bytes are written as hex digits, X'00FF' (in JSON \"00FF\")"
    if kind == "string" and lit.kind in _NUMBERS:
        return f": string values take single quotes ({string_text(literal_text(lit))})"
    return ""


def _java_conversion_message(term: BoundTerm, lit: Literal, in_set: bool) -> str:
    """Java's message: for in/not-in the literal as Literal.toString writes it and its Literal class (found
    by the differential fuzzer: 'Invalid value for conversion to type long: "7" (...Literals$StringLiteral)')."""
    typ = java_type_string(term.type)
    length = term.type.length if isinstance(term.type, PrimitiveType) and term.type.kind == "fixed" else None
    if length is not None and lit.hex and len(lit.value) != 2 * length:  # Java's SingleValueParser, given the schema
        return (
            f"Cannot parse default {typ} value: {json.dumps(lit.value)}, incorrect length: {len(lit.value)}"
            f" for column '{term.ref.name}'"
        )
    if in_set:
        text = str(lit).lower() if lit.kind == "boolean" else str(lit)
        java_class = f"org.apache.iceberg.expressions.Literals${_LITERAL_CLASSES[lit.kind]}"
        return f"Invalid value for conversion to type {typ}: {text} ({java_class}) for column '{term.ref.name}'"
    value = str(lit.value).lower() if lit.kind == "boolean" else lit.value  # Java's Boolean.toString
    return f"Invalid value for conversion to type {typ}: {value} ({lit.java_class}) for column '{term.ref.name}'"


def as_java_parsed(pred: UnboundPredicate, bound: Expression) -> UnboundPredicate:
    """`pred` as Java's ExpressionParser reads it given the schema (SingleValueParser): a hex string on a
    binary or fixed term is its bytes, which Java writes back as upper-case hex (in a residual, say)."""
    kind = (
        bound.term.type.kind
        if isinstance(bound, BoundPredicate) and isinstance(bound.term.type, PrimitiveType)
        else None
    )
    if kind not in ("binary", "fixed") or not pred.literals or not any(lit.hex for lit in pred.literals):
        return pred
    literals = tuple(Literal("binary", bytes.fromhex(lit.value)) if lit.hex else lit for lit in pred.literals)
    return UnboundPredicate(pred.op, pred.term, literals)


def _bind_literal(pred: UnboundPredicate, term: BoundTerm) -> Expression:
    op = pred.op
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH) and not (
        isinstance(term.type, PrimitiveType) and term.type.kind == "string"
    ):
        java_term = f"ref(id={term.field_id}, accessor-type={java_type_string(term.ref.type)})"  # Java's toString
        raise InvalidFilterError(
            f"Cannot use LIKE 'prefix%' (starts-with) on {term_text(term)} ({_type_name(term.type)}): it needs a"
            " string column",
            f"Term for STARTS_WITH or NOT_STARTS_WITH must produce a string: {java_term}: {java_type_string(term.type)}"
            f" (column '{term.ref.name}')",
        )
    converted = convert(pred.literal, term.type)
    if converted is None:
        raise _conversion_error(term, pred.literal)
    if converted is ABOVE_MAX:
        if op in (Op.LT, Op.LT_EQ, Op.NOT_EQ):
            return TRUE
        if op in (Op.GT, Op.GT_EQ, Op.EQ):
            return FALSE
    elif converted is BELOW_MIN:
        if op in (Op.GT, Op.GT_EQ, Op.NOT_EQ):
            return TRUE
        if op in (Op.LT, Op.LT_EQ, Op.EQ):
            return FALSE
    assert isinstance(converted, Literal)
    return BoundPredicate(op, term, converted.value)


def _bind_set(pred: UnboundPredicate, term: BoundTerm) -> Expression:
    values = []
    for lit in pred.literals or ():
        converted = convert(lit, term.type)
        if converted is None:
            raise _conversion_error(term, lit, in_set=True)
        if isinstance(converted, Literal):  # out-of-range values are dropped
            values.append(converted.value)
    if not values:
        return FALSE if pred.op is Op.IN else TRUE
    # a Java HashSet of the values: equal by Java's equals (1.5 != 1.50 for decimals, -0.0 != 0.0)
    distinct = tuple({java_equality_key(v): v for v in reversed(values)}.values())[::-1]
    if len(distinct) == 1:  # a single value: eq / not-eq
        return BoundPredicate(Op.EQ if pred.op is Op.IN else Op.NOT_EQ, term, values[0])
    return BoundPredicate(pred.op, term, literal_set=frozenset(distinct), values=distinct)

"""Partition projections of row filters (Iceberg Java `Projections` and each transform's `project`).

An inclusive projection is true for every partition that may hold a matching row; a strict projection
is true only for partitions whose rows all match. Both are built per partition field from a predicate
bound to the table schema, and produce an unbound predicate on the partition field's name whose
literals have the partition type's kind, ready to bind against the partition struct.

Java sources: api/.../expressions/Projections.java and api/.../transforms/{Identity,Bucket,Truncate,
Dates,Timestamps,TimeTransform,VoidTransform,UnknownTransform,ProjectionUtil}.java (reference §4.1-4.2).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from planner_service.expressions.binding import bind_predicate
from planner_service.expressions.expression import (
    FALSE,
    LITERAL_OPS,
    TRUE,
    UNARY_OPS,
    BoundPredicate,
    BoundTransform,
    Expression,
    Op,
    Reference,
    UnboundPredicate,
    and_,
    or_,
)
from planner_service.expressions.literals import Literal
from planner_service.expressions.transforms import bind_transform
from planner_service.expressions.visitor import RebuildingVisitor, rewrite_not, visit
from planner_service.metadata.partitioning import PartitionField, PartitionSpec
from planner_service.metadata.types import IcebergType, PrimitiveType, Schema

__all__ = [
    "inclusive_projection",
    "partition_fields_for",
    "project_inclusive",
    "project_strict",
    "strict_projection",
]

_TIME_TRANSFORMS = frozenset({"year", "month", "day", "hour"})
_LITERAL_KIND = {"timestamptz": "timestamp", "timestamptz_ns": "timestamp_ns"}  # Literal kinds have no tz

Apply = Callable[[Any], Any]
Step = Callable[[Any, int], Any]  # boundary ± 1 in the source type's arithmetic


# ---------------------------------------------------------------------------------------------------------
# Projecting whole expressions


def inclusive_projection(
    spec: PartitionSpec, schema: Schema, expr: Expression, case_sensitive: bool = True
) -> Expression:
    """Java `Projections.inclusive(spec, cs).project(expr)`: true for every partition that may match."""
    return visit(rewrite_not(expr), _Projector(spec, schema, case_sensitive, strict=False))


def strict_projection(spec: PartitionSpec, schema: Schema, expr: Expression, case_sensitive: bool = True) -> Expression:
    """Java `Projections.strict(spec, cs).project(expr)`: true only for partitions whose rows all match."""
    return visit(rewrite_not(expr), _Projector(spec, schema, case_sensitive, strict=True))


def partition_fields_for(spec: PartitionSpec, source_id: int) -> list[PartitionField]:
    """Java `spec.getFieldsBySourceId(id)`: the partition fields of one source column, in spec order."""
    return [f for f in spec.fields if f.source_id == source_id]


class _Projector(RebuildingVisitor):
    """Java BaseProjectionEvaluator over a NOT-free tree: each predicate bound (if it is not yet) and
    projected; a predicate that binding folds to a constant is kept as that constant."""

    def __init__(self, spec: PartitionSpec, schema: Schema, case_sensitive: bool, strict: bool) -> None:
        self._spec, self._schema, self._cs, self._strict = spec, schema, case_sensitive, strict

    def visit_not(self, child: Expression) -> Expression:
        raise ValueError("[BUG] project called on expression with a not")  # RewriteNot removed them all

    def visit_unbound_predicate(self, pred: UnboundPredicate) -> Expression:
        bound = bind_predicate(self._schema, pred, self._cs)
        return self.visit_bound_predicate(bound) if isinstance(bound, BoundPredicate) else bound

    def visit_bound_predicate(self, pred: BoundPredicate) -> Expression:
        return _project_predicate(self._spec, pred, self._strict)


def _project_predicate(spec: PartitionSpec, pred: BoundPredicate, strict: bool) -> Expression:
    """AND (inclusive) or OR (strict) the projections of every partition field of the predicate's column."""
    source_type = pred.ref.type
    result: Expression = FALSE if strict else TRUE  # no partition field: no constraint / no guarantee
    if not isinstance(source_type, PrimitiveType):
        return result  # partition sources are primitive, so nothing can match
    for field in partition_fields_for(spec, pred.ref.field_id):
        if strict:
            projected = project_strict(field, source_type, pred)
            result = result if projected is None else or_(result, projected)
        else:
            projected = project_inclusive(field, source_type, pred)
            result = result if projected is None else and_(result, projected)
    return result


# ---------------------------------------------------------------------------------------------------------
# Projecting one predicate through one partition field


def project_inclusive(
    field: PartitionField, source_type: PrimitiveType, pred: BoundPredicate
) -> UnboundPredicate | None:
    """`field.transform.project(field.name, pred)`: a predicate true for every partition that may match."""
    return _project(field, source_type, pred, strict=False)


def project_strict(field: PartitionField, source_type: PrimitiveType, pred: BoundPredicate) -> UnboundPredicate | None:
    """`field.transform.projectStrict(field.name, pred)`: true only for partitions whose rows all match."""
    return _project(field, source_type, pred, strict=True)


def _project(
    field: PartitionField, source_type: PrimitiveType, pred: BoundPredicate, strict: bool
) -> UnboundPredicate | None:
    transform = field.transform
    name = transform.name
    if name == "identity":
        return _copy_predicate(field.name, pred)  # Java Identity.projectStrict ignores a transform term
    if name not in ("bucket", "truncate") and name not in _TIME_TRANSFORMS:
        return None  # void and unknown transforms project to null
    if isinstance(pred.term, BoundTransform):
        # ProjectionUtil.projectTransformPredicate: only the same transform (by toString) projects
        return _copy_predicate(field.name, pred) if str(pred.term.transform) == str(transform) else None
    apply = bind_transform(transform, source_type)
    if pred.op in UNARY_OPS:
        return UnboundPredicate(pred.op, Reference(field.name))  # every transform keeps null-ness
    if name == "bucket":
        return _project_bucket(field.name, pred, apply, strict)
    if name == "truncate":
        return _project_truncate(field.name, source_type, pred, apply, transform.param or 0, strict)
    return _project_time(field.name, name, source_type, pred, apply, strict)


def _copy_predicate(name: str, pred: BoundPredicate) -> UnboundPredicate:
    """The same predicate on the partition field (ProjectionUtil.removeTransform / Identity.projectStrict)."""
    kind = _literal_kind(pred.term.type)
    if pred.op in UNARY_OPS:
        return UnboundPredicate(pred.op, Reference(name))
    if pred.op in LITERAL_OPS:
        return _literal_predicate(pred.op, name, kind, pred.literal)
    return _set_predicate(pred.op, name, kind, pred.values)


def _project_bucket(name: str, pred: BoundPredicate, apply: Apply, strict: bool) -> UnboundPredicate | None:
    """Java Bucket: inclusive eq/in, strict notEq/notIn; order comparisons cannot be projected."""
    equality, membership = (Op.NOT_EQ, Op.NOT_IN) if strict else (Op.EQ, Op.IN)
    if pred.op is equality:
        return _literal_predicate(pred.op, name, "int", apply(pred.literal))
    if pred.op is membership:
        return _set_predicate(pred.op, name, "int", [apply(v) for v in pred.values])
    return None


def _project_truncate(
    name: str, source_type: PrimitiveType, pred: BoundPredicate, apply: Apply, width: int, strict: bool
) -> UnboundPredicate | None:
    """Java Truncate{Integer,Long,Decimal,String,ByteBuffer}.project / projectStrict."""
    kind = _literal_kind(source_type)
    if pred.op in LITERAL_OPS:
        if kind == "string":
            return _truncate_string(name, pred, apply, width, strict)
        if kind == "binary":
            ops = _ARRAY_STRICT if strict else _ARRAY_INCLUSIVE
            return _literal_predicate(ops[pred.op], name, kind, apply(pred.literal)) if pred.op in ops else None
        step = _decimal_step if kind == "decimal" else _int_step(64 if kind == "long" else 32)
        return _truncate_bound(name, kind, pred, apply, step, strict)
    return _transform_set(name, kind, pred, apply, strict)


def _project_time(
    name: str, unit: str, source_type: PrimitiveType, pred: BoundPredicate, apply: Apply, strict: bool
) -> UnboundPredicate | None:
    """Java Dates / Timestamps (dispatched by TimeTransform): truncate-style bounds, then the pre-0.10 fix."""
    kind = "date" if unit == "day" else "int"  # day's result type is date, the others int
    is_date_source = source_type.kind == "date"
    if pred.op in LITERAL_OPS:
        step = _int_step(32 if is_date_source else 64)  # Dates work on Integer days, Timestamps on Long
        projected = _truncate_bound(name, kind, pred, apply, step, strict)
    else:
        projected = _transform_set(name, kind, pred, apply, strict)
    if is_date_source and unit == "day":
        return projected  # Java Dates.DAY skips the fix: day(date) is the identity, never written wrong
    return _fix_strict_time(projected) if strict else _fix_inclusive_time(projected)


# ---------------------------------------------------------------------------------------------------------
# ProjectionUtil: bounds, sets and strings


# (projected op, boundary adjustment) per op, for integers, decimals and times (truncateInteger etc.)
_BOUND_INCLUSIVE = {
    Op.LT: (Op.LT_EQ, -1),
    Op.LT_EQ: (Op.LT_EQ, 0),
    Op.GT: (Op.GT_EQ, 1),
    Op.GT_EQ: (Op.GT_EQ, 0),
    Op.EQ: (Op.EQ, 0),
}
_BOUND_STRICT = {
    Op.LT: (Op.LT, 0),
    Op.LT_EQ: (Op.LT, 1),
    Op.GT: (Op.GT, 0),
    Op.GT_EQ: (Op.GT, -1),
    Op.NOT_EQ: (Op.NOT_EQ, 0),
}
# projected op per op, for strings and binary (truncateArray / truncateArrayStrict)
_ARRAY_INCLUSIVE = {
    Op.LT: Op.LT_EQ,
    Op.LT_EQ: Op.LT_EQ,
    Op.GT: Op.GT_EQ,
    Op.GT_EQ: Op.GT_EQ,
    Op.EQ: Op.EQ,
    Op.STARTS_WITH: Op.STARTS_WITH,
}
_ARRAY_STRICT = {Op.LT: Op.LT, Op.LT_EQ: Op.LT, Op.GT: Op.GT, Op.GT_EQ: Op.GT, Op.NOT_EQ: Op.NOT_EQ}


def _truncate_bound(
    name: str, kind: str, pred: BoundPredicate, apply: Apply, step: Step, strict: bool
) -> UnboundPredicate | None:
    """ProjectionUtil.truncate{Integer,Long,Decimal}[Strict]: close open bounds by one unit, then transform.

    Inclusive `x < v` becomes `p <= t(v - 1)`; strict `x <= v` becomes `p < t(v + 1)`. Strict eq and
    inclusive notEq have no projection: neighbouring values share a partition.
    """
    entry = (_BOUND_STRICT if strict else _BOUND_INCLUSIVE).get(pred.op)
    if entry is None:
        return None
    op, delta = entry
    boundary = step(pred.literal, delta) if delta else pred.literal
    return _literal_predicate(op, name, kind, apply(boundary))


def _transform_set(name: str, kind: str, pred: BoundPredicate, apply: Apply, strict: bool) -> UnboundPredicate | None:
    """ProjectionUtil.transformSet: inclusive `in` and strict `not in` map each value; the rest is null."""
    if pred.op is (Op.NOT_IN if strict else Op.IN):
        return _set_predicate(pred.op, name, kind, [apply(v) for v in pred.values])
    return None


def _truncate_string(
    name: str, pred: BoundPredicate, apply: Apply, width: int, strict: bool
) -> UnboundPredicate | None:
    """Java TruncateString: prefixes compare Java's String.length() (UTF-16 units) with the width, while
    truncation keeps `width` code points."""
    value: str = pred.literal
    if pred.op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        length = _utf16_length(value)
        if length < width:
            return _literal_predicate(pred.op, name, "string", value)
        if length == width:
            equality = Op.EQ if pred.op is Op.STARTS_WITH else Op.NOT_EQ
            return _literal_predicate(equality, name, "string", value)
        if pred.op is Op.NOT_STARTS_WITH:
            # strict: no row starts with p if its partition does not start with t(p); inclusive: none
            return _literal_predicate(pred.op, name, "string", apply(value)) if strict else None
    ops = _ARRAY_STRICT if strict else _ARRAY_INCLUSIVE  # a long startsWith: inclusive only, on t(p)
    return _literal_predicate(ops[pred.op], name, "string", apply(value)) if pred.op in ops else None


def _fix_inclusive_time(projected: UnboundPredicate | None) -> UnboundPredicate | None:
    """ProjectionUtil.fixInclusiveTimeProjection: also match partitions that Iceberg <= 0.10.0 wrote one
    too large for pre-epoch values (c < 0 may have been written as c + 1)."""
    if projected is None or projected.literals is None:
        return projected  # unary predicates pass through
    op, values = projected.op, [lit.value for lit in projected.literals]
    if op in (Op.LT, Op.LT_EQ):
        return _with_values(projected, op, [values[0] + 1]) if values[0] < 0 else projected
    if op is Op.EQ:
        return _with_values(projected, Op.IN, [values[0], values[0] + 1]) if values[0] < 0 else projected
    if op is Op.IN:
        return _with_values(projected, op, _with_successors(values)) if min(values) < 0 else projected
    if op in (Op.NOT_EQ, Op.NOT_IN):
        return None
    return projected  # gt / gtEq: wrongly written values are already above the bound


def _fix_strict_time(projected: UnboundPredicate | None) -> UnboundPredicate | None:
    """ProjectionUtil.fixStrictTimeProjection: exclude partitions that may hold values Iceberg <= 0.10.0
    wrote one too large, so the projection still guarantees a match."""
    if projected is None or projected.literals is None:
        return None
    op, values = projected.op, [lit.value for lit in projected.literals]
    if op in (Op.LT, Op.LT_EQ):
        return projected  # the correct bound is also strict for the wrongly written values
    if op in (Op.GT, Op.GT_EQ):
        return _with_values(projected, op, [values[0] + 1]) if values[0] <= 0 else projected
    if op is Op.NOT_EQ:
        return _with_values(projected, Op.NOT_IN, [values[0], values[0] + 1]) if values[0] < 0 else projected
    if op is Op.NOT_IN:
        return _with_values(projected, op, _with_successors(values)) if min(values) < 0 else projected
    return None  # eq / in have no strict projection


def _with_successors(values: list[int]) -> list[int]:
    """The values plus c + 1 for every negative c (Java builds a HashSet; order does not matter)."""
    out: dict[int, None] = {}
    for value in values:
        out[value] = None
        if value < 0:
            out[value + 1] = None
    return list(out)


# ---------------------------------------------------------------------------------------------------------
# Small helpers


def _literal_predicate(op: Op, name: str, kind: str, value: Any) -> UnboundPredicate:
    return UnboundPredicate(op, Reference(name), (Literal(kind, value),))


def _set_predicate(op: Op, name: str, kind: str, values: Any) -> UnboundPredicate:
    return UnboundPredicate(op, Reference(name), tuple(Literal(kind, v) for v in values))


def _with_values(projected: UnboundPredicate, op: Op, values: list[int]) -> UnboundPredicate:
    """`projected` with another op and values of the same literal kind (Expressions.in/lessThan/...)."""
    assert projected.literals, projected
    kind = projected.literals[0].kind
    return UnboundPredicate(op, projected.term, tuple(Literal(kind, v) for v in values))


def _utf16_length(value: str) -> int:
    """Java String.length(): UTF-16 code units, two for a character outside the BMP."""
    return len(value) + sum(1 for c in value if ord(c) > 0xFFFF)


def _literal_kind(typ: IcebergType) -> str:
    """The Literal kind of a type's values (Java has one literal class for timestamp and timestamptz)."""
    kind = typ.kind
    return _LITERAL_KIND.get(kind, kind)


def _int_step(bits: int) -> Step:
    """boundary ± delta in Java int (32) or long (64) arithmetic, wrapping on overflow."""
    half = 1 << (bits - 1)

    def step(value: int, delta: int) -> int:
        return (value + delta + half) % (1 << bits) - half

    return step


def _decimal_step(value: Decimal, delta: int) -> Decimal:
    """Java `new BigDecimal(unscaled ± 1, scale)`: one unit at the literal's own scale, computed exactly."""
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int), value
    unscaled = int("".join(map(str, digits))) * (-1 if sign else 1) + delta
    return Decimal((int(unscaled < 0), tuple(int(d) for d in str(abs(unscaled))), exponent))

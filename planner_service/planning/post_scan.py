"""The filter a Spark read applies to the rows again, as Spark + Iceberg split it (Iceberg 1.10's
SparkScanBuilder.pushPredicates): each top-level conjunct of the scan's filter that selects whole
partitions in every spec of the table (ExpressionUtil.selectsPartitions: its inclusive and strict
projections are equivalent) is evaluated on the Iceberg side alone, on partition values and by Iceberg's
rules, under which a null partition value passes `x != 5`; every other conjunct is evaluated again by Spark
on the rows, with SQL's null rules. Spark's optimizer also infers `isnotnull(c)` for each column a conjunct
reaches through null-intolerant expressions (comparisons, NOT: InferFiltersFromConstraints), and that
holds for the rows too. A reader that means to read what Spark + Iceberg read applies exactly this.

    post_scan_filter(id != 18 OR id <= 48, [identity(id)]) = TRUE       (Iceberg decides it on partitions)
    post_scan_filter(id != 18, [identity(id)])             = id IS NOT NULL
    post_scan_filter(data = 'a' AND id = 1, [identity(id)]) = data = 'a' AND id IS NOT NULL
"""

from __future__ import annotations

from planner_service.expressions.binding import bind
from planner_service.expressions.expression import (
    TRUE,
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    BoundReference,
    BoundTransform,
    Expression,
    Not,
    Op,
    Or,
    Reference,
    UnboundPredicate,
    and_,
    predicate,
)
from planner_service.expressions.projections import inclusive_projection, strict_projection
from planner_service.expressions.visitor import conjuncts, rewrite_not
from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.types import PrimitiveType, Schema

__all__ = ["post_scan_filter", "selects_partitions"]

# Spark's null-intolerant comparisons (a null operand makes the result null)
_NULL_INTOLERANT = frozenset({Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ, Op.STARTS_WITH, Op.NOT_STARTS_WITH})
_INTEGRAL = frozenset({"int", "long", "date", "time", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"})


def post_scan_filter(
    row_filter: Expression, specs: dict[int, PartitionSpec], schema: Schema, case_sensitive: bool
) -> Expression:
    """What of `row_filter` (unbound, over the current `schema`) Spark evaluates again on the rows."""
    if isinstance(row_filter, AlwaysTrue):  # (a plan read back from its spill file has its own TRUE)
        return TRUE
    kept: list[Expression] = []
    for conjunct in conjuncts(row_filter):
        if not selects_partitions(conjunct, specs, schema, case_sensitive):
            kept.append(conjunct)
            continue
        kept += [predicate(Op.NOT_NULL, name) for name in dict.fromkeys(_null_intolerant_columns(conjunct))]
    out: Expression = TRUE
    for expr in kept:
        out = and_(out, expr)
    return out


def selects_partitions(expr: Expression, specs: dict[int, PartitionSpec], schema: Schema, case_sensitive: bool) -> bool:
    """Java ExpressionUtil.selectsPartitions(expr, table): in every spec, the inclusive and the strict
    projections are equivalent (never in an unpartitioned spec: TRUE against FALSE)."""
    for spec in specs.values():
        partition = Schema(0, spec.partition_type(schema))
        inclusive = inclusive_projection(spec, schema, expr, case_sensitive)
        strict = strict_projection(spec, schema, expr, case_sensitive)
        left = bind(partition, rewrite_not(inclusive), case_sensitive)
        right = bind(partition, rewrite_not(strict), case_sensitive)
        if not _equivalent(left, right):
            return False
    return bool(specs)


def _equivalent(left: Expression, right: Expression) -> bool:
    """Java Expression.isEquivalentTo: the same tree up to the order of AND's and OR's children, predicates
    on the same term with equal literals (`< 6` and `<= 5` alike on integral types)."""
    if isinstance(left, AlwaysTrue | AlwaysFalse):
        return type(left) is type(right)
    if isinstance(left, And | Or):
        if type(left) is not type(right):
            return False
        assert isinstance(right, And | Or)
        return (_equivalent(left.left, right.left) and _equivalent(left.right, right.right)) or (
            _equivalent(left.left, right.right) and _equivalent(left.right, right.left)
        )
    if isinstance(left, Not):
        return isinstance(right, Not) and _equivalent(left.child, right.child)
    if isinstance(left, BoundPredicate) and isinstance(right, BoundPredicate):
        return _same_term(left, right) and _same_values(left, right)
    return False


def _same_term(left: BoundPredicate, right: BoundPredicate) -> bool:
    a, b = left.term, right.term
    if isinstance(a, BoundReference) and isinstance(b, BoundReference):
        return a.field_id == b.field_id and a.type == b.type
    if isinstance(a, BoundTransform) and isinstance(b, BoundTransform):
        return a.field_id == b.field_id and str(a.transform) == str(b.transform)
    return False


def _same_values(left: BoundPredicate, right: BoundPredicate) -> bool:
    if left.op in (Op.IN, Op.NOT_IN) or right.op in (Op.IN, Op.NOT_IN):
        return left.op == right.op and left.literal_set == right.literal_set
    if left.op == right.op:
        return bool(left.literal == right.literal)
    typ = left.term.type
    if not (isinstance(typ, PrimitiveType) and typ.kind in _INTEGRAL):
        return False
    pairs = {(Op.LT, Op.LT_EQ): 1, (Op.LT_EQ, Op.LT): -1, (Op.GT, Op.GT_EQ): -1, (Op.GT_EQ, Op.GT): 1}
    step = pairs.get((left.op, right.op))  # `< 6` is `<= 5`; `> 5` is `>= 6`
    return step is not None and bool(left.literal == right.literal + step)


def _null_intolerant_columns(expr: Expression) -> list[str]:
    """The columns Spark infers `isnotnull` for from one conjunct: those reached through null-intolerant
    expressions (a comparison's column, under any NOT), none through AND, OR, IN or a null test."""
    if isinstance(expr, Not):
        return _null_intolerant_columns(expr.child)
    if isinstance(expr, UnboundPredicate) and expr.op in _NULL_INTOLERANT and isinstance(expr.term, Reference):
        return [expr.term.name]
    return []

"""Which manifests might hold matching files, from the manifest list's partition summaries
(Java ManifestEvaluator, 1.10): the row filter's inclusive projection onto the spec, evaluated on each
partition field's contains_null / contains_nan / lower / upper summary."""

from __future__ import annotations

from typing import Any

from planner_service.expressions.binding import bind
from planner_service.expressions.expression import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Op,
    Or,
    rewrite_not,
)
from planner_service.expressions.projections import inclusive_projection
from planner_service.metadata.conversions import compare, from_bytes, sort_key, to_bytes
from planner_service.metadata.manifest_list import FieldSummary, ManifestFile
from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.types import PrimitiveType, Schema

IN_PREDICATE_LIMIT = 200
ROWS_MIGHT_MATCH, ROWS_CANNOT_MATCH = True, False


class ManifestEvaluator:
    """Bound once per partition spec; `eval(manifest)` is ROWS_MIGHT_MATCH or ROWS_CANNOT_MATCH."""

    def __init__(self, partition_schema: Schema, partition_filter: Expression, case_sensitive: bool) -> None:
        self.expr = bind(partition_schema, rewrite_not(partition_filter), case_sensitive)
        self._positions = {f.field_id: i for i, f in enumerate(partition_schema.fields)}

    @classmethod
    def for_row_filter(
        cls, row_filter: Expression, spec: PartitionSpec, schema: Schema, case_sensitive: bool
    ) -> ManifestEvaluator:
        projected = inclusive_projection(spec, schema, row_filter, case_sensitive)
        return cls(Schema(0, spec.partition_type(schema)), projected, case_sensitive)

    def eval(self, manifest: ManifestFile) -> bool:
        if manifest.partitions is None:
            return ROWS_MIGHT_MATCH
        return self._visit(self.expr, manifest.partitions)

    def _visit(self, expr: Expression, stats: tuple[FieldSummary, ...]) -> bool:
        if isinstance(expr, AlwaysTrue):
            return ROWS_MIGHT_MATCH
        if isinstance(expr, AlwaysFalse):
            return ROWS_CANNOT_MATCH
        if isinstance(expr, And):  # short-circuits as Java's visitEvaluator
            return self._visit(expr.left, stats) and self._visit(expr.right, stats)
        if isinstance(expr, Or):
            return self._visit(expr.left, stats) or self._visit(expr.right, stats)
        if isinstance(expr, BoundPredicate):
            return _predicate(expr, stats[self._positions[expr.term.field_id]])
        raise ValueError(f"Not a bound, NOT-free expression: {expr}")


def _all_values_null(s: FieldSummary, kind: str) -> bool:
    all_null = s.contains_null and s.lower_bound is None
    if all_null and kind in ("float", "double"):
        # the lower bound is also null when every non-null value is NaN
        all_null = s.contains_nan is not None and not s.contains_nan
    return all_null


def _predicate(pred: BoundPredicate, s: FieldSummary) -> bool:
    typ = pred.term.type
    assert isinstance(typ, PrimitiveType)
    op, lit = pred.op, pred.literal
    if op is Op.IS_NULL:
        return s.contains_null
    if op is Op.NOT_NULL:
        return not _all_values_null(s, typ.kind)
    if op is Op.IS_NAN:
        if s.contains_nan is not None and not s.contains_nan:
            return ROWS_CANNOT_MATCH
        return not _all_values_null(s, typ.kind)
    if op is Op.NOT_NAN:
        return not (s.contains_nan and not s.contains_null and s.lower_bound is None)
    if op in (Op.NOT_EQ, Op.NOT_IN):
        return ROWS_MIGHT_MATCH
    if op is Op.NOT_STARTS_WITH:
        return _not_starts_with(s, to_bytes(typ, lit))
    if s.lower_bound is None:
        return ROWS_CANNOT_MATCH  # all values are null
    if op is Op.STARTS_WITH:
        prefix = to_bytes(typ, lit)  # byte-wise, lengths in UTF-8 bytes
        upper = s.upper_bound or b""
        return not (s.lower_bound[: len(prefix)] > prefix or upper[: len(prefix)] < prefix)
    lower = from_bytes(typ, s.lower_bound)
    upper = from_bytes(typ, s.upper_bound)
    if op is Op.LT:
        return compare(typ, lower, lit) < 0
    if op is Op.LT_EQ:
        return compare(typ, lower, lit) <= 0
    if op is Op.GT:
        return upper is not None and compare(typ, upper, lit) > 0
    if op is Op.GT_EQ:
        return upper is not None and compare(typ, upper, lit) >= 0
    if op is Op.EQ:
        # a missing upper bound sorts first under Java's nulls-first comparator: cannot match
        return compare(typ, lower, lit) <= 0 and upper is not None and compare(typ, upper, lit) >= 0
    if op is Op.IN:
        return _in(typ, lower, upper, pred.literal_set or frozenset())
    raise ValueError(f"Unknown predicate {pred}")


def _in(typ: PrimitiveType, lower: Any, upper: Any, values: frozenset[Any]) -> bool:
    if len(values) > IN_PREDICATE_LIMIT:
        return ROWS_MIGHT_MATCH
    key = sort_key(typ)
    return upper is not None and any(key(lower) <= key(v) <= key(upper) for v in values)


def _not_starts_with(s: FieldSummary, prefix: bytes) -> bool:
    if s.contains_null:
        return ROWS_MIGHT_MATCH
    lower, upper = s.lower_bound, s.upper_bound
    if lower is None or upper is None or len(lower) < len(prefix) or len(upper) < len(prefix):
        return ROWS_MIGHT_MATCH
    # every value starts with the prefix when both bounds do
    return not (lower[: len(prefix)] == prefix and upper[: len(prefix)] == prefix)

"""Which manifests might hold matching files, from the manifest list's partition summaries
(Java ManifestEvaluator, 1.10): the row filter's inclusive projection onto the spec, evaluated on each
partition field's contains_null / contains_nan / lower / upper summary."""

from __future__ import annotations

from typing import Any

from planner_service.expressions.binding import bind
from planner_service.expressions.expression import BoundTerm, Expression, Op
from planner_service.expressions.projections import inclusive_projection
from planner_service.expressions.visitor import BoundPredicateVisitor, rewrite_not, visit
from planner_service.metadata.conversions import compare, from_bytes, sort_key, to_bytes
from planner_service.metadata.manifest_list import FieldSummary, ManifestFile
from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.types import PrimitiveType, Schema
from planner_service.pruning.inclusive import IN_PREDICATE_LIMIT, ROWS_CANNOT_MATCH, ROWS_MIGHT_MATCH


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
        if manifest.partitions is None or self.expr.op == Op.TRUE:  # (a filter of no partition source)
            return ROWS_MIGHT_MATCH
        return visit(self.expr, _ManifestEvalVisitor(manifest.partitions, self._positions))


class _ManifestEvalVisitor(BoundPredicateVisitor[bool]):
    """Java ManifestEvaluator.ManifestEvalVisitor over one manifest's partition field summaries."""

    def __init__(self, summaries: tuple[FieldSummary, ...], positions: dict[int, int]) -> None:
        self._summaries, self._positions = summaries, positions

    def _stats(self, term: BoundTerm) -> tuple[FieldSummary, PrimitiveType]:
        typ = term.type
        assert isinstance(typ, PrimitiveType), typ  # partition fields are primitive
        return self._summaries[self._positions[term.field_id]], typ

    def _bounds(self, term: BoundTerm) -> tuple[PrimitiveType, Any, Any] | None:
        """The summary's lower and upper bound as values; None when every value is null (no lower bound)."""
        s, typ = self._stats(term)
        if s.lower_bound is None:
            return None
        return typ, from_bytes(typ, s.lower_bound), from_bytes(typ, s.upper_bound)

    def visit_true(self) -> bool:
        return ROWS_MIGHT_MATCH

    def visit_false(self) -> bool:
        return ROWS_CANNOT_MATCH

    def visit_not(self, child: bool) -> bool:
        raise ValueError("Not a NOT-free expression")  # rewrite_not removed them

    def visit_and(self, left: bool, right: bool) -> bool:
        return left and right

    def visit_or(self, left: bool, right: bool) -> bool:
        return left or right

    def is_null(self, term: BoundTerm) -> bool:
        return self._stats(term)[0].contains_null

    def not_null(self, term: BoundTerm) -> bool:
        return not _all_values_null(*self._stats(term))

    def is_nan(self, term: BoundTerm) -> bool:
        s, typ = self._stats(term)
        if s.contains_nan is not None and not s.contains_nan:
            return ROWS_CANNOT_MATCH
        return not _all_values_null(s, typ)

    def not_nan(self, term: BoundTerm) -> bool:
        s, _ = self._stats(term)
        return not (s.contains_nan and not s.contains_null and s.lower_bound is None)

    def lt(self, term: BoundTerm, literal: Any) -> bool:
        bounds = self._bounds(term)
        return bounds is not None and compare(bounds[0], bounds[1], literal) < 0

    def lt_eq(self, term: BoundTerm, literal: Any) -> bool:
        bounds = self._bounds(term)
        return bounds is not None and compare(bounds[0], bounds[1], literal) <= 0

    def gt(self, term: BoundTerm, literal: Any) -> bool:
        bounds = self._bounds(term)
        return bounds is not None and bounds[2] is not None and compare(bounds[0], bounds[2], literal) > 0

    def gt_eq(self, term: BoundTerm, literal: Any) -> bool:
        bounds = self._bounds(term)
        return bounds is not None and bounds[2] is not None and compare(bounds[0], bounds[2], literal) >= 0

    def eq(self, term: BoundTerm, literal: Any) -> bool:
        # a missing upper bound sorts first under Java's nulls-first comparator: cannot match
        return self.lt_eq(term, literal) and self.gt_eq(term, literal)

    def not_eq(self, term: BoundTerm, literal: Any) -> bool:
        return ROWS_MIGHT_MATCH  # the bounds are not necessarily values of the column

    def in_(self, term: BoundTerm, literals: frozenset[Any]) -> bool:
        bounds = self._bounds(term)
        if bounds is None:
            return ROWS_CANNOT_MATCH  # all values are null
        if len(literals) > IN_PREDICATE_LIMIT:
            return ROWS_MIGHT_MATCH
        typ, lower, upper = bounds
        key = sort_key(typ)
        return upper is not None and any(key(lower) <= key(v) <= key(upper) for v in literals)

    def not_in(self, term: BoundTerm, literals: frozenset[Any]) -> bool:
        return ROWS_MIGHT_MATCH

    def starts_with(self, term: BoundTerm, literal: Any) -> bool:
        s, typ = self._stats(term)
        if s.lower_bound is None:
            return ROWS_CANNOT_MATCH  # all values are null
        prefix = to_bytes(typ, literal)  # byte-wise, lengths in UTF-8 bytes
        upper = s.upper_bound or b""
        return not (s.lower_bound[: len(prefix)] > prefix or upper[: len(prefix)] < prefix)

    def not_starts_with(self, term: BoundTerm, literal: Any) -> bool:
        s, typ = self._stats(term)
        if s.contains_null:
            return ROWS_MIGHT_MATCH
        prefix = to_bytes(typ, literal)
        lower, upper = s.lower_bound, s.upper_bound
        if lower is None or upper is None or len(lower) < len(prefix) or len(upper) < len(prefix):
            return ROWS_MIGHT_MATCH
        # every value starts with the prefix when both bounds do
        return not (lower[: len(prefix)] == prefix and upper[: len(prefix)] == prefix)


def _all_values_null(s: FieldSummary, typ: PrimitiveType) -> bool:
    all_null = s.contains_null and s.lower_bound is None
    if all_null and typ.kind in ("float", "double"):
        # the lower bound is also null when every non-null value is NaN
        all_null = s.contains_nan is not None and not s.contains_nan
    return all_null

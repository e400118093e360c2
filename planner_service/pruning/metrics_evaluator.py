"""Which files might hold matching rows, from their column metrics (Java InclusiveMetricsEvaluator, 1.10).

Evaluated for all files of a manifest at once: every rule of Java's per-file visitor is written here as
an operation over arrays (StatsColumns), so a manifest of thousands of entries is pruned with a handful
of vector operations. The result is ROWS_MIGHT_MATCH (True) or ROWS_CANNOT_MATCH (False) per file.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner_service.expressions.binding import bind
from planner_service.expressions.expression import BoundReference, BoundTerm, BoundTransform, Expression, Op
from planner_service.expressions.transforms import bind_transform
from planner_service.expressions.visitor import BoundPredicateVisitor, conjuncts, rewrite_not, visit
from planner_service.metadata.conversions import sort_key
from planner_service.metadata.stats_columns import BoolArray, BoundColumn, StatsColumns
from planner_service.metadata.types import PrimitiveType, Schema
from planner_service.pruning.inclusive import IN_PREDICATE_LIMIT

VALUE_COUNTS, NULL_COUNTS, NAN_COUNTS = "value_counts", "null_value_counts", "nan_value_counts"
LOWER, UPPER = "lower_bounds", "upper_bounds"


class InclusiveMetricsEvaluator:
    """Bind once (after rewriting NOTs) against the table schema; evaluate many manifests."""

    def __init__(self, schema: Schema, row_filter: Expression, case_sensitive: bool = True) -> None:
        self.expr = bind(schema, rewrite_not(row_filter), case_sensitive)

    def eval(self, stats: StatsColumns) -> BoolArray:
        """Might each file contain rows matching the filter?"""
        records = stats.record_count
        might = visit(self.expr, _MetricsEvalVisitor(stats))
        # Java: record_count == 0 cannot match; < 0 (unknown, imported Avro) might
        return np.where(records == 0, False, np.where(records < 0, True, might))

    def eval_conjuncts(self, stats: StatsColumns) -> list[tuple[Expression, BoolArray]]:
        """Each top-level conjunct of the bound filter with its own might-match mask (for explanations)."""
        visitor = _MetricsEvalVisitor(stats)
        return [(c, visit(c, visitor)) for c in conjuncts(self.expr)]


class _MetricsEvalVisitor(BoundPredicateVisitor[BoolArray]):
    """Java InclusiveMetricsEvaluator.MetricsEvalVisitor over the files of one StatsColumns at once."""

    def __init__(self, stats: StatsColumns) -> None:
        self.stats = stats
        self.n = len(stats)

    def visit_true(self) -> BoolArray:
        return np.ones(self.n, dtype=bool)

    def visit_false(self) -> BoolArray:
        return np.zeros(self.n, dtype=bool)

    def visit_not(self, child: BoolArray) -> BoolArray:
        raise ValueError("Not a NOT-free expression")  # rewrite_not removed them

    def visit_and(self, left: BoolArray, right: BoolArray) -> BoolArray:
        return left & right

    def visit_or(self, left: BoolArray, right: BoolArray) -> BoolArray:
        return left | right

    # -- statistics helpers (Java's private methods, per file) ------------------------------------------

    def _may_contain_null(self, fid: int) -> BoolArray:
        # nullCounts == null || !containsKey(id) || count != 0
        nulls, present = self.stats.counts(NULL_COUNTS, fid)
        may: BoolArray = ~present | (nulls != 0)
        return may

    def _nulls_only(self, fid: int) -> BoolArray:
        values, has_values = self.stats.counts(VALUE_COUNTS, fid)
        nulls, has_nulls = self.stats.counts(NULL_COUNTS, fid)
        only: BoolArray = has_values & has_nulls & (values == nulls)
        return only

    def _nans_only(self, fid: int) -> BoolArray:
        nans, has_nans = self.stats.counts(NAN_COUNTS, fid)
        values, has_values = self.stats.counts(VALUE_COUNTS, fid)
        # nanCounts.get(id).equals(valueCounts.get(id)): false when the value count is missing
        only: BoolArray = has_nans & has_values & (nans == values)
        return only

    def _bound(self, which: str, term: BoundTerm) -> BoundColumn | None:
        """The term's bounds; a transform's only when it preserves order (applied to the column's bound)."""
        column = self.stats.bounds(which, term.field_id, term.ref.type)
        if isinstance(term, BoundReference):
            return column
        if not term.transform.preserves_order:
            return None
        source = term.ref.type
        assert isinstance(source, PrimitiveType)
        fn = bind_transform(term.transform, source)
        values = column.values if column.keys is None else column.keys.to_list()
        values = [None if v is None else fn(_internal(source, v)) for v in values]
        result_type = term.type
        assert isinstance(result_type, PrimitiveType)
        nan = np.zeros(self.n, dtype=bool)
        return BoundColumn(column.present, nan, None, values, result_type)

    # -- the rules ---------------------------------------------------------------------------------------

    def is_null(self, term: BoundTerm) -> BoolArray:
        if isinstance(term, BoundTransform) and not term.transform.preserves_order:
            return np.ones(self.n, dtype=bool)
        return self._may_contain_null(term.field_id)

    def not_null(self, term: BoundTerm) -> BoolArray:
        return ~self._nulls_only(term.field_id)

    def is_nan(self, term: BoundTerm) -> BoolArray:
        cannot = self._nulls_only(term.field_id)
        if isinstance(term, BoundReference):
            nans, has_nans = self.stats.counts(NAN_COUNTS, term.field_id)
            cannot = cannot | (has_nans & (nans == 0))
        return ~cannot

    def not_nan(self, term: BoundTerm) -> BoolArray:
        if isinstance(term, BoundReference):
            return ~self._nans_only(term.field_id)
        return np.ones(self.n, dtype=bool)

    def lt(self, term: BoundTerm, literal: Any) -> BoolArray:
        return self._comparison(Op.LT, term, literal)

    def lt_eq(self, term: BoundTerm, literal: Any) -> BoolArray:
        return self._comparison(Op.LT_EQ, term, literal)

    def gt(self, term: BoundTerm, literal: Any) -> BoolArray:
        return self._comparison(Op.GT, term, literal)

    def gt_eq(self, term: BoundTerm, literal: Any) -> BoolArray:
        return self._comparison(Op.GT_EQ, term, literal)

    def eq(self, term: BoundTerm, literal: Any) -> BoolArray:
        return self._comparison(Op.EQ, term, literal)

    def not_eq(self, term: BoundTerm, literal: Any) -> BoolArray:
        return np.ones(self.n, dtype=bool)  # bounds are not necessarily values of the column

    def in_(self, term: BoundTerm, literals: frozenset[Any]) -> BoolArray:
        return ~self._nulls_or_nans_only(term) & self._in(term, literals)

    def not_in(self, term: BoundTerm, literals: frozenset[Any]) -> BoolArray:
        return np.ones(self.n, dtype=bool)  # bounds are not necessarily values of the column

    def _nulls_or_nans_only(self, term: BoundTerm) -> BoolArray:
        return self._nulls_only(term.field_id) | self._nans_only(term.field_id)

    def _comparison(self, op: Op, term: BoundTerm, literal: Any) -> BoolArray:
        return ~self._nulls_or_nans_only(term) & self._compare(op, term, literal)

    def _compare(self, op: Op, term: BoundTerm, literal: Any) -> BoolArray:
        ones = np.ones(self.n, dtype=bool)
        lower = self._bound(LOWER, term)
        upper = self._bound(UPPER, term)
        if op in (Op.LT, Op.LT_EQ):
            if lower is None:
                return ones
            # a missing or NaN lower bound is unreliable: might match
            cannot = lower.compare(">=" if op is Op.LT else ">", literal) & ~lower.is_nan
            return ~cannot
        if op in (Op.GT, Op.GT_EQ):
            if upper is None:
                return ones
            return ~upper.compare("<=" if op is Op.GT else "<", literal)  # a NaN upper compares greatest
        assert op is Op.EQ, op
        cannot = np.zeros(self.n, dtype=bool)
        if lower is not None:
            cannot |= lower.compare(">", literal) & ~lower.is_nan
        if upper is not None:
            cannot |= upper.compare("<", literal)
        return ~cannot

    def _in(self, term: BoundTerm, literal_set: frozenset[Any]) -> BoolArray:
        ones = np.ones(self.n, dtype=bool)
        if len(literal_set) > IN_PREDICATE_LIMIT:
            return ones
        lower, upper = self._bound(LOWER, term), self._bound(UPPER, term)
        if lower is None:
            return ones
        values = sorted(literal_set, key=sort_key(term.type))
        # might match iff some value v has lower <= v and (upper unknown or v <= upper)
        might = np.zeros(self.n, dtype=bool)
        for v in values:
            fits = ~lower.compare(">", v)
            if upper is not None:
                fits &= ~upper.compare("<", v) | ~upper.present
            might |= fits
        unknown = ~lower.present | lower.is_nan
        return might | unknown

    def starts_with(self, term: BoundTerm, literal: Any) -> BoolArray:
        ones = np.ones(self.n, dtype=bool)
        if isinstance(term, BoundTransform) and term.transform.name != "identity":
            return ones  # truncate terms: the result is always or never compatible
        cannot = self._nulls_only(term.field_id)
        lower, upper = self._bound(LOWER, term), self._bound(UPPER, term)
        key = utf16_key(literal)
        n_units = len(key)
        if lower is not None:
            cannot |= _bool_map(_values(lower), lambda v: utf16_key(v)[:n_units] > key)
            if upper is not None:
                # the upper bound only counts where the lower bound is known
                upper_cannot = _bool_map(_values(upper), lambda v: utf16_key(v)[:n_units] < key)
                cannot |= upper_cannot & lower.present
        return ~cannot

    def not_starts_with(self, term: BoundTerm, literal: Any) -> BoolArray:
        lower, upper = self._bound(LOWER, term), self._bound(UPPER, term)
        if lower is None or upper is None:
            return np.ones(self.n, dtype=bool)
        key = utf16_key(literal)
        n_units = len(key)

        def all_match(lo: Any, hi: Any) -> bool:
            if lo is None or hi is None:
                return False
            lo_key, hi_key = utf16_key(lo), utf16_key(hi)
            return len(lo_key) >= n_units and lo_key[:n_units] == key and hi_key[:n_units] == key

        cannot = np.fromiter(
            (all_match(lo, hi) for lo, hi in zip(_values(lower), _values(upper), strict=True)),
            dtype=bool,
            count=self.n,
        )
        return ~(cannot & ~self._may_contain_null(term.field_id))


def utf16_key(text: str) -> tuple[int, ...]:
    """A string as UTF-16 code units, surrogates ranked above the BMP (Java CharSeqComparator)."""
    if text.isascii():
        return tuple(text.encode())
    units = text.encode("utf-16-be", "surrogatepass")
    out = []
    for i in range(0, len(units), 2):
        u = units[i] << 8 | units[i + 1]
        out.append(u + 0x10000 if 0xD800 <= u <= 0xDFFF else u)
    return tuple(out)


def _values(column: BoundColumn) -> list[Any]:
    return column.values if column.keys is None else column.keys.to_list()


def _bool_map(values: list[Any], fn: Any) -> BoolArray:
    return np.fromiter((v is not None and bool(fn(v)) for v in values), dtype=bool, count=len(values))


def _internal(typ: PrimitiveType, key: Any) -> Any:
    """A vector key back to the internal value (float keys are IEEE bits in Java order)."""
    if typ.kind in ("float", "double"):
        bits = key ^ 0x7FFFFFFFFFFFFFFF if key < 0 else key
        return float(np.array([bits], dtype=np.int64).view(np.float64)[0])
    return key

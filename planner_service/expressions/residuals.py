"""Residual filters: what a data file's partition does not already decide (Iceberg Java `ResidualEvaluator`).

For each predicate of the row filter and each partition field of its column (spec order), the strict
projection evaluated on the partition tuple may prove the predicate true for every row (→ TRUE), and
the inclusive projection may prove it false for every row (→ FALSE); otherwise the original, unbound
predicate stays. The original tree is walked as written (no RewriteNot, no short-circuit) and recombined
with and_/or_/not_, so the residual text matches Java's. Reference §5.

Everything that does not depend on the partition (binding the filter, projecting, binding projections
to the partition struct) happens once, in the constructor; `residual_for` only evaluates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner_service.errors import PlannerError
from planner_service.expressions.binding import as_java_parsed, bind_predicate
from planner_service.expressions.evaluator import Evaluator
from planner_service.expressions.expression import FALSE, TRUE, BoundPredicate, Expression, UnboundPredicate
from planner_service.expressions.projections import partition_fields_for, project_inclusive, project_strict
from planner_service.expressions.visitor import RebuildingVisitor, predicates, visit
from planner_service.metadata.conversions import java_equality_key
from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.types import PrimitiveType, Schema, StructType

__all__ = ["ResidualEvaluator"]

_CACHE_LIMIT = 8192  # distinct partitions remembered per evaluator before the memo starts over


class ResidualEvaluator:
    """Java `ResidualEvaluator.of(spec, expr, caseSensitive)`, bound once for `schema` (the spec's schema).

    Safe to share between threads: the only mutable state is a memo of finished residuals per distinct
    partition, a plain dict where a race at worst computes the same residual twice.
    """

    def __init__(self, spec: PartitionSpec, schema: Schema, expr: Expression, case_sensitive: bool = True) -> None:
        self._expr = expr
        # Java: a spec without fields gets UnpartitionedResidualEvaluator (a void-only spec does not)
        self._decisions = None if not spec.fields else _prepare(expr, spec, schema, case_sensitive)
        self._memo: dict[tuple[Any, ...], Expression] = {}

    def residual_for(self, partition: tuple[Any, ...]) -> Expression:
        """The residual filter for a file in `partition` (internal values in spec field order, None for null).

        Raises InvalidFilterError where Java throws while binding a projection to the partition type.
        """
        if self._decisions is None:
            return self._expr  # unpartitioned: returned as given, never bound
        # keyed by Java equality: 0.0 / -0.0 and 1.5 / 1.50 are different partitions for Java's comparisons
        key = tuple(java_equality_key(v) for v in partition)
        residual = self._memo.get(key)
        if residual is None:
            residual = visit(self._expr, _ResidualVisitor(self._decisions, partition))
            if len(self._memo) >= _CACHE_LIMIT:
                self._memo.clear()
            self._memo[key] = residual
        return residual


# ---------------------------------------------------------------------------------------------------------
# Each predicate's decisions, made once: the projections of every partition field bound to the partition


# A projection bound to the partition struct: an Evaluator to run on the partition, a constant binding
# folded it to, the error Java would throw when a partition first reaches it, or None when the transform
# has no projection (Java: project returns null).
_BoundProjection = Evaluator | Expression | PlannerError | None


@dataclass(frozen=True)
class _Checks:
    """The strict and inclusive projections of a predicate on each partition field of its column, in spec
    order, and what is left when none decides."""

    original: Expression  # the predicate as Java's parser reads it (hex strings on binary columns as bytes)
    fields: tuple[tuple[_BoundProjection, _BoundProjection], ...]


# What decides one predicate of the filter: a constant (binding folded it: a required column's null test,
# an out-of-range literal) or its checks.
_Decision = Expression | _Checks


def _prepare(expr: Expression, spec: PartitionSpec, schema: Schema, cs: bool) -> dict[int, _Decision]:
    """The decision of every predicate of `expr`, by the predicate's identity."""
    struct = spec.partition_type(schema)
    partition_schema = Schema(0, struct)
    decisions: dict[int, _Decision] = {}
    for pred in predicates(expr):
        if isinstance(pred, BoundPredicate):
            decisions[id(pred)] = _Checks(pred, _field_checks(pred, spec, partition_schema, struct, cs))
            continue
        bound = bind_predicate(schema, pred, cs)
        if isinstance(bound, BoundPredicate):
            original = as_java_parsed(pred, bound)
            decisions[id(pred)] = _Checks(original, _field_checks(bound, spec, partition_schema, struct, cs))
        else:
            decisions[id(pred)] = bound
    return decisions


def _field_checks(
    pred: BoundPredicate, spec: PartitionSpec, partition_schema: Schema, struct: StructType, cs: bool
) -> tuple[tuple[_BoundProjection, _BoundProjection], ...]:
    source_type = pred.ref.type
    if not isinstance(source_type, PrimitiveType):
        return ()  # partition sources are primitive: no field can decide a predicate on a nested type

    def bound(projected: UnboundPredicate | None) -> _BoundProjection:
        if projected is None:
            return None
        try:
            result = bind_predicate(partition_schema, projected, cs)
        except PlannerError as error:
            # Java binds lazily, per partition, and only reaches this field when earlier ones decided nothing
            return error
        return Evaluator(struct, result) if isinstance(result, BoundPredicate) else result

    return tuple(
        (bound(project_strict(field, source_type, pred)), bound(project_inclusive(field, source_type, pred)))
        for field in partition_fields_for(spec, pred.ref.field_id)
    )


# ---------------------------------------------------------------------------------------------------------
# The residual of one partition


class _ResidualVisitor(RebuildingVisitor):
    """Java ResidualVisitor: the original tree walked as written (Expressions.not/and/or simplify the results;
    nothing short-circuits); each predicate decided by the first partition field that decides it."""

    def __init__(self, decisions: dict[int, _Decision], partition: tuple[Any, ...]) -> None:
        self._decisions, self._partition = decisions, partition

    def visit_unbound_predicate(self, pred: UnboundPredicate) -> Expression:
        return self._decide(pred)

    def visit_bound_predicate(self, pred: BoundPredicate) -> Expression:
        return self._decide(pred)

    def _decide(self, pred: Expression) -> Expression:
        decision = self._decisions[id(pred)]
        if isinstance(decision, Expression):
            return decision
        for strict, inclusive in decision.fields:
            if self._outcome(strict) is TRUE:
                return TRUE  # every row of the partition matches
            if self._outcome(inclusive) is FALSE:
                return FALSE  # no row of the partition can match
        return decision.original  # Java returns the original unbound predicate, not the bound one

    def _outcome(self, projection: _BoundProjection) -> Expression | None:
        """A bound projection decided on the partition: TRUE, FALSE, or None when it decides nothing."""
        if projection is None or isinstance(projection, Expression):
            return projection
        if isinstance(projection, PlannerError):
            raise projection
        # Java ResidualVisitor: nulls-first comparisons, so a null partition value is below every literal.
        # Divergence: Java's startsWith/notStartsWith dereference a null partition value (NPE); we answer
        # as Java's row Evaluator does (startsWith null = false, notStartsWith null = true).
        return TRUE if projection.eval(self._partition) else FALSE

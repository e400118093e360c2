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
from planner_service.expressions.evaluator import eval_on_struct, java_equality_key
from planner_service.expressions.expression import (
    FALSE,
    TRUE,
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Not,
    Or,
    UnboundPredicate,
    and_,
    not_,
    or_,
)
from planner_service.expressions.projections import partition_fields_for, project_inclusive, project_strict
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
        self._unpartitioned = not spec.fields
        self._struct = spec.partition_type(schema)
        partition_schema = Schema(0, self._struct)
        self._plan = None if self._unpartitioned else _prepare(expr, spec, schema, partition_schema, case_sensitive)
        self._memo: dict[tuple[Any, ...], Expression] = {}

    def residual_for(self, partition: tuple[Any, ...]) -> Expression:
        """The residual filter for a file in `partition` (internal values in spec field order, None for null).

        Raises InvalidFilterError where Java throws while binding a projection to the partition type.
        """
        if self._plan is None:
            return self._expr  # unpartitioned: returned as given, never bound
        # keyed by Java equality: 0.0 / -0.0 and 1.5 / 1.50 are different partitions for Java's comparisons
        key = tuple(java_equality_key(v) for v in partition)
        residual = self._memo.get(key)
        if residual is None:
            residual = _residual(self._plan, partition, self._struct)
            if len(self._memo) >= _CACHE_LIMIT:
                self._memo.clear()
            self._memo[key] = residual
        return residual


# ---------------------------------------------------------------------------------------------------------
# The prepared tree: the filter's shape, with each predicate's projections bound to the partition struct


@dataclass(frozen=True)
class _Constant:
    """A subtree whose residual does not depend on the partition (TRUE, FALSE, a folded predicate)."""

    expr: Expression


@dataclass(frozen=True)
class _NotNode:
    child: _Node


@dataclass(frozen=True)
class _AndNode:
    left: _Node
    right: _Node


@dataclass(frozen=True)
class _OrNode:
    left: _Node
    right: _Node


# A projection bound to the partition struct: a BoundPredicate to evaluate, a constant from binding,
# None when the transform has no projection, or the error Java would throw when it gets there.
_Bound = Expression | PlannerError | None


@dataclass(frozen=True)
class _FieldCheck:
    """One partition field's strict and inclusive projection of a predicate."""

    strict: _Bound
    inclusive: _Bound


@dataclass(frozen=True)
class _PredicateNode:
    original: Expression  # returned when no partition field decides the predicate
    checks: tuple[_FieldCheck, ...]


_Node = _Constant | _NotNode | _AndNode | _OrNode | _PredicateNode


def _prepare(expr: Expression, spec: PartitionSpec, schema: Schema, partition_schema: Schema, cs: bool) -> _Node:
    """Mirror the filter's tree, binding each predicate to the schema and its projections to the partition."""
    if isinstance(expr, AlwaysTrue | AlwaysFalse):
        return _Constant(expr)
    if isinstance(expr, Not):
        return _NotNode(_prepare(expr.child, spec, schema, partition_schema, cs))
    if isinstance(expr, And | Or):
        left = _prepare(expr.left, spec, schema, partition_schema, cs)
        right = _prepare(expr.right, spec, schema, partition_schema, cs)
        return _AndNode(left, right) if isinstance(expr, And) else _OrNode(left, right)
    if isinstance(expr, UnboundPredicate):
        bound = bind_predicate(schema, expr, cs)
        if not isinstance(bound, BoundPredicate):
            return _Constant(bound)  # binding folded it (a required column's null test, an out-of-range literal)
        return _PredicateNode(as_java_parsed(expr, bound), _field_checks(bound, spec, partition_schema, cs))
    if isinstance(expr, BoundPredicate):
        return _PredicateNode(expr, _field_checks(expr, spec, partition_schema, cs))
    raise TypeError(f"Cannot compute residuals of {expr!r}")


def _field_checks(
    pred: BoundPredicate, spec: PartitionSpec, partition_schema: Schema, cs: bool
) -> tuple[_FieldCheck, ...]:
    source_type = pred.ref.type
    if not isinstance(source_type, PrimitiveType):
        return ()  # partition sources are primitive: no field can decide a predicate on a nested type
    return tuple(
        _FieldCheck(
            strict=_bind_projection(project_strict(field, source_type, pred), partition_schema, cs),
            inclusive=_bind_projection(project_inclusive(field, source_type, pred), partition_schema, cs),
        )
        for field in partition_fields_for(spec, pred.ref.field_id)
    )


def _bind_projection(projected: UnboundPredicate | None, partition_schema: Schema, cs: bool) -> _Bound:
    if projected is None:
        return None
    try:
        return bind_predicate(partition_schema, projected, cs)
    except PlannerError as error:
        # Java binds lazily, per partition, and only reaches this field when earlier ones decided nothing
        return error


# ---------------------------------------------------------------------------------------------------------
# Evaluating the prepared tree for one partition


def _residual(node: _Node, partition: tuple[Any, ...], struct: StructType) -> Expression:
    """ResidualVisitor: Java's Expressions.not/and/or simplify the results; nothing short-circuits."""
    if isinstance(node, _Constant):
        return node.expr
    if isinstance(node, _NotNode):
        return not_(_residual(node.child, partition, struct))
    if isinstance(node, _AndNode):
        return and_(_residual(node.left, partition, struct), _residual(node.right, partition, struct))
    if isinstance(node, _OrNode):
        return or_(_residual(node.left, partition, struct), _residual(node.right, partition, struct))
    for check in node.checks:
        if _outcome(check.strict, partition, struct) is TRUE:
            return TRUE  # every row of the partition matches
        if _outcome(check.inclusive, partition, struct) is FALSE:
            return FALSE  # no row of the partition can match
    return node.original  # Java returns the original unbound predicate, not the bound one


def _outcome(bound: _Bound, partition: tuple[Any, ...], struct: StructType) -> Expression | None:
    """A bound projection decided on the partition: TRUE, FALSE, or None when there is no projection."""
    if bound is None:
        return None
    if isinstance(bound, PlannerError):
        raise bound
    if isinstance(bound, BoundPredicate):
        # Java ResidualVisitor: nulls-first comparisons, so a null partition value is below every literal.
        # Divergence: Java's startsWith/notStartsWith dereference a null partition value (NPE); we answer
        # as Java's row Evaluator does (startsWith null = false, notStartsWith null = true).
        return TRUE if eval_on_struct(bound, partition, struct) else FALSE
    return bound

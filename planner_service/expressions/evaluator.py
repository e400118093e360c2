"""Evaluate a bound expression on one flat struct of values (Iceberg Java `Evaluator`).

A partition tuple is the main use: the residual evaluator decides each projected predicate on one
partition with `eval_on_struct`. Comparisons use the literal type's comparator with nulls first, as
Java's `Literal.comparator()` does, so a null value is below every literal. Set membership follows
Java's `equals`, which differs from Python's `==` for decimals and floating point (see
`java_equality_key`).
"""

from __future__ import annotations

import math
from typing import Any

from planner_service.expressions.expression import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    BoundReference,
    BoundTerm,
    Expression,
    Not,
    Op,
    Or,
)
from planner_service.expressions.transforms import bind_transform
from planner_service.metadata.conversions import compare, java_equality_key
from planner_service.metadata.types import IcebergType, PrimitiveType, StructType

__all__ = ["eval_on_struct"]

_KEYED_KINDS = frozenset({"float", "double", "decimal"})  # kinds whose Java equals differs from Python ==


def eval_on_struct(bound_expr: Expression, values: tuple[Any, ...], struct: StructType) -> bool:
    """Java `new Evaluator(struct, expr).eval(row)` for a flat `struct` whose values are `values`.

    `values[i]` is the internal value (metadata/conversions.py) of `struct.fields[i]`, None for null.
    The struct is needed because a BoundReference names its field, not a position.
    """
    if len(values) != len(struct.fields):
        raise ValueError(f"Expected {len(struct.fields)} values for {struct}, got {len(values)}")
    positions = {f.field_id: pos for pos, f in enumerate(struct.fields)}
    return _eval(bound_expr, values, positions)


def _eval(expr: Expression, values: tuple[Any, ...], positions: dict[int, int]) -> bool:
    """One step of the evaluator; And/Or short-circuit left to right, as Java's visitEvaluator does."""
    if isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, Not):
        return not _eval(expr.child, values, positions)
    if isinstance(expr, And):
        return _eval(expr.left, values, positions) and _eval(expr.right, values, positions)
    if isinstance(expr, Or):
        return _eval(expr.left, values, positions) or _eval(expr.right, values, positions)
    if isinstance(expr, BoundPredicate):
        return eval_predicate(expr, _term_value(expr.term, values, positions))
    raise TypeError(f"Cannot evaluate an unbound expression: {expr}")


def _term_value(term: BoundTerm, values: tuple[Any, ...], positions: dict[int, int]) -> Any:
    """The term's value in the struct: the field's value, transformed for a BoundTransform."""
    ref: BoundReference = term.ref
    pos = positions.get(ref.field_id)
    if pos is None:
        raise ValueError(f"Field {ref.field_id} ({ref.name}) is not a top-level field of the struct")
    value = values[pos]
    if isinstance(term, BoundReference):
        return value
    assert isinstance(ref.type, PrimitiveType), ref.type  # binding only allows transforms of primitives
    return bind_transform(term.transform, ref.type)(value)  # Java BoundTransform.eval: null stays null


def eval_predicate(pred: BoundPredicate, value: Any) -> bool:
    """Java Evaluator's answer for one predicate, given the term's value (None for null)."""
    op = pred.op
    if op is Op.IS_NULL:
        return value is None
    if op is Op.NOT_NULL:
        return value is not None
    if op is Op.IS_NAN:
        return _is_nan(value)
    if op is Op.NOT_NAN:
        return not _is_nan(value)
    if op is Op.IN:
        return _contains(pred, value)
    if op is Op.NOT_IN:
        return not _contains(pred, value)
    if op is Op.STARTS_WITH:
        return value is not None and str(value).startswith(pred.literal)  # Java: evalRes != null && ...
    if op is Op.NOT_STARTS_WITH:
        return not (value is not None and str(value).startswith(pred.literal))  # Java: !startsWith(...)
    cmp = _compare_nulls_first(pred.term.type, value, pred.literal)
    if op is Op.LT:
        return cmp < 0
    if op is Op.LT_EQ:
        return cmp <= 0
    if op is Op.GT:
        return cmp > 0
    if op is Op.GT_EQ:
        return cmp >= 0
    if op is Op.EQ:
        return cmp == 0
    if op is Op.NOT_EQ:
        return cmp != 0
    raise ValueError(f"Invalid operation for a bound predicate: {op}")


def _compare_nulls_first(typ: IcebergType, value: Any, literal: Any) -> int:
    """Java `lit.comparator().compare(value, lit)`: nullsFirst, so null is below every literal."""
    if value is None:
        return -1
    return compare(typ, value, literal)


def _is_nan(value: Any) -> bool:
    """Java NaNUtil.isNaN: only a Float or Double can be NaN; null is not NaN."""
    return isinstance(value, float) and math.isnan(value)


def _contains(pred: BoundPredicate, value: Any) -> bool:
    """Java `literalSet.contains(value)`: HashSet (CharSequenceSet for strings) membership by `equals`."""
    if value is None:
        return False  # the set never holds null (literals cannot be null)
    assert pred.literal_set is not None, pred
    typ = pred.term.type
    if isinstance(typ, PrimitiveType) and typ.kind in _KEYED_KINDS:
        key = java_equality_key(value)
        return any(java_equality_key(v) == key for v in pred.literal_set)
    return value in pred.literal_set

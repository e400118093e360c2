"""Evaluate a bound expression on one flat struct of values (Iceberg Java `Evaluator`).

A partition tuple is the main use: the residual evaluator decides each projected predicate on one
partition with an `Evaluator`. Comparisons use the literal type's comparator with nulls first, as
Java's `Literal.comparator()` does, so a null value is below every literal. Set membership follows
Java's `equals`, which differs from Python's `==` for decimals and floating point (see
`java_equality_key`).
"""

from __future__ import annotations

import math
from typing import Any

from planner_service.expressions.expression import BoundReference, BoundTerm, Expression
from planner_service.expressions.transforms import bind_transform
from planner_service.expressions.visitor import BoundPredicateVisitor, visit
from planner_service.metadata.conversions import compare, java_equality_key
from planner_service.metadata.types import IcebergType, PrimitiveType, StructType

__all__ = ["Evaluator"]

_KEYED_KINDS = frozenset({"float", "double", "decimal"})  # kinds whose Java equals differs from Python ==


class Evaluator:
    """Java `new Evaluator(struct, expr)`: a bound expression over a flat struct, `eval(values)` per row.

    `values[i]` is the internal value (metadata/conversions.py) of `struct.fields[i]`, None for null; the
    struct is needed because a BoundReference names its field, not a position.
    """

    def __init__(self, struct: StructType, bound_expr: Expression) -> None:
        self.expr = bound_expr
        self._width = len(struct.fields)
        self._positions = {f.field_id: pos for pos, f in enumerate(struct.fields)}

    def eval(self, values: tuple[Any, ...]) -> bool:
        if len(values) != self._width:
            raise ValueError(f"Expected {self._width} values, got {len(values)}")
        return visit(self.expr, _EvalVisitor(values, self._positions))


class _EvalVisitor(BoundPredicateVisitor[bool]):
    """Java Evaluator.EvalVisitor over one row. (Java short-circuits and/or; nothing here has side effects, so
    evaluating both sides gives the same answer.)"""

    def __init__(self, values: tuple[Any, ...], positions: dict[int, int]) -> None:
        self._values, self._positions = values, positions

    def _value(self, term: BoundTerm) -> Any:
        """The term's value in the row: the field's value, transformed for a BoundTransform."""
        ref: BoundReference = term.ref
        pos = self._positions.get(ref.field_id)
        if pos is None:
            raise ValueError(f"Field {ref.field_id} ({ref.name}) is not a top-level field of the struct")
        value = self._values[pos]
        if isinstance(term, BoundReference):
            return value
        assert isinstance(ref.type, PrimitiveType), ref.type  # binding only allows transforms of primitives
        return bind_transform(term.transform, ref.type)(value)  # Java BoundTransform.eval: null stays null

    def _compare(self, term: BoundTerm, literal: Any) -> int:
        """Java `lit.comparator().compare(value, lit)`: nullsFirst, so null is below every literal."""
        value = self._value(term)
        return -1 if value is None else compare(term.type, value, literal)

    def visit_true(self) -> bool:
        return True

    def visit_false(self) -> bool:
        return False

    def visit_not(self, child: bool) -> bool:
        return not child

    def visit_and(self, left: bool, right: bool) -> bool:
        return left and right

    def visit_or(self, left: bool, right: bool) -> bool:
        return left or right

    def is_null(self, term: BoundTerm) -> bool:
        return self._value(term) is None

    def not_null(self, term: BoundTerm) -> bool:
        return self._value(term) is not None

    def is_nan(self, term: BoundTerm) -> bool:
        return _is_nan(self._value(term))

    def not_nan(self, term: BoundTerm) -> bool:
        return not _is_nan(self._value(term))

    def lt(self, term: BoundTerm, literal: Any) -> bool:
        return self._compare(term, literal) < 0

    def lt_eq(self, term: BoundTerm, literal: Any) -> bool:
        return self._compare(term, literal) <= 0

    def gt(self, term: BoundTerm, literal: Any) -> bool:
        return self._compare(term, literal) > 0

    def gt_eq(self, term: BoundTerm, literal: Any) -> bool:
        return self._compare(term, literal) >= 0

    def eq(self, term: BoundTerm, literal: Any) -> bool:
        return self._compare(term, literal) == 0

    def not_eq(self, term: BoundTerm, literal: Any) -> bool:
        return self._compare(term, literal) != 0

    def starts_with(self, term: BoundTerm, literal: Any) -> bool:
        value = self._value(term)
        return value is not None and str(value).startswith(literal)  # Java: evalRes != null && ...

    def not_starts_with(self, term: BoundTerm, literal: Any) -> bool:
        return not self.starts_with(term, literal)  # Java: !startsWith(...)

    def in_(self, term: BoundTerm, literals: frozenset[Any]) -> bool:
        return _contains(term.type, literals, self._value(term))

    def not_in(self, term: BoundTerm, literals: frozenset[Any]) -> bool:
        return not self.in_(term, literals)


def _is_nan(value: Any) -> bool:
    """Java NaNUtil.isNaN: only a Float or Double can be NaN; null is not NaN."""
    return isinstance(value, float) and math.isnan(value)


def _contains(typ: IcebergType, literals: frozenset[Any], value: Any) -> bool:
    """Java `literalSet.contains(value)`: HashSet (CharSequenceSet for strings) membership by `equals`."""
    if value is None:
        return False  # the set never holds null (literals cannot be null)
    if isinstance(typ, PrimitiveType) and typ.kind in _KEYED_KINDS:
        key = java_equality_key(value)
        return any(java_equality_key(v) == key for v in literals)
    return value in literals

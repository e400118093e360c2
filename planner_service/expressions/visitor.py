"""One visitor protocol over expressions and one dispatch (Iceberg Java ExpressionVisitors, PyIceberg
visitors.py, iceberg-rust bound_predicate_visitor.rs).

`visit(expr, visitor)` walks the tree post-order: each method gets what its children's visits returned, so
a visitor never recurses by itself and a new node type is one more `register` here. A
`BoundPredicateVisitor` also dispatches each bound predicate on its operation (Java BoundExpressionVisitor),
so that every rule of an evaluator is a method named after the operation it decides.

Visitors keep no state between visits of different inputs: an evaluator builds a fresh visitor for each
input (a manifest, a partition, a set of files) and is therefore safe to share between threads.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import singledispatch
from typing import Any, Generic, TypeVar

from planner_service.expressions.expression import (
    FALSE,
    TRUE,
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    BoundTerm,
    Expression,
    Not,
    Op,
    Or,
    UnboundPredicate,
    and_,
    not_,
    or_,
)

__all__ = [
    "BoundPredicateVisitor",
    "ExpressionVisitor",
    "RebuildingVisitor",
    "bound_predicates",
    "conjuncts",
    "predicates",
    "rewrite_not",
    "visit",
]

R = TypeVar("R")


class ExpressionVisitor(Generic[R]):
    """What a walk makes of each kind of node, given the results of its children."""

    def visit_true(self) -> R:
        raise NotImplementedError

    def visit_false(self) -> R:
        raise NotImplementedError

    def visit_not(self, child: R) -> R:
        raise NotImplementedError

    def visit_and(self, left: R, right: R) -> R:
        raise NotImplementedError

    def visit_or(self, left: R, right: R) -> R:
        raise NotImplementedError

    def visit_unbound_predicate(self, pred: UnboundPredicate) -> R:
        raise TypeError(f"{type(self).__name__} takes bound expressions, not {pred}")

    def visit_bound_predicate(self, pred: BoundPredicate) -> R:
        raise TypeError(f"{type(self).__name__} takes unbound expressions, not {pred}")


@singledispatch
def visit(expr: Expression, visitor: ExpressionVisitor[R]) -> R:
    """Walk `expr` post-order with `visitor`."""
    raise TypeError(f"Not an expression: {expr!r}")


@visit.register
def _(expr: AlwaysTrue, visitor: ExpressionVisitor[R]) -> R:
    return visitor.visit_true()


@visit.register
def _(expr: AlwaysFalse, visitor: ExpressionVisitor[R]) -> R:
    return visitor.visit_false()


@visit.register
def _(expr: Not, visitor: ExpressionVisitor[R]) -> R:
    return visitor.visit_not(visit(expr.child, visitor))


@visit.register
def _(expr: And, visitor: ExpressionVisitor[R]) -> R:
    return visitor.visit_and(visit(expr.left, visitor), visit(expr.right, visitor))


@visit.register
def _(expr: Or, visitor: ExpressionVisitor[R]) -> R:
    return visitor.visit_or(visit(expr.left, visitor), visit(expr.right, visitor))


@visit.register
def _(expr: UnboundPredicate, visitor: ExpressionVisitor[R]) -> R:
    return visitor.visit_unbound_predicate(expr)


@visit.register
def _(expr: BoundPredicate, visitor: ExpressionVisitor[R]) -> R:
    return visitor.visit_bound_predicate(expr)


class BoundPredicateVisitor(ExpressionVisitor[R]):
    """Java BoundExpressionVisitor: a bound predicate goes to the method of its operation, with its term and
    its literal (an internal value of the term's type) or its set of literals."""

    def visit_bound_predicate(self, pred: BoundPredicate) -> R:
        result: R = _BY_OP[pred.op](self, pred)
        return result

    def is_null(self, term: BoundTerm) -> R:
        raise NotImplementedError

    def not_null(self, term: BoundTerm) -> R:
        raise NotImplementedError

    def is_nan(self, term: BoundTerm) -> R:
        raise NotImplementedError

    def not_nan(self, term: BoundTerm) -> R:
        raise NotImplementedError

    def lt(self, term: BoundTerm, literal: Any) -> R:
        raise NotImplementedError

    def lt_eq(self, term: BoundTerm, literal: Any) -> R:
        raise NotImplementedError

    def gt(self, term: BoundTerm, literal: Any) -> R:
        raise NotImplementedError

    def gt_eq(self, term: BoundTerm, literal: Any) -> R:
        raise NotImplementedError

    def eq(self, term: BoundTerm, literal: Any) -> R:
        raise NotImplementedError

    def not_eq(self, term: BoundTerm, literal: Any) -> R:
        raise NotImplementedError

    def starts_with(self, term: BoundTerm, literal: Any) -> R:
        raise NotImplementedError

    def not_starts_with(self, term: BoundTerm, literal: Any) -> R:
        raise NotImplementedError

    def in_(self, term: BoundTerm, literals: frozenset[Any]) -> R:
        raise NotImplementedError

    def not_in(self, term: BoundTerm, literals: frozenset[Any]) -> R:
        raise NotImplementedError


_Rule = Callable[[BoundPredicateVisitor[Any], BoundPredicate], Any]
_BY_OP: dict[Op, _Rule] = {
    Op.IS_NULL: lambda v, p: v.is_null(p.term),
    Op.NOT_NULL: lambda v, p: v.not_null(p.term),
    Op.IS_NAN: lambda v, p: v.is_nan(p.term),
    Op.NOT_NAN: lambda v, p: v.not_nan(p.term),
    Op.LT: lambda v, p: v.lt(p.term, p.literal),
    Op.LT_EQ: lambda v, p: v.lt_eq(p.term, p.literal),
    Op.GT: lambda v, p: v.gt(p.term, p.literal),
    Op.GT_EQ: lambda v, p: v.gt_eq(p.term, p.literal),
    Op.EQ: lambda v, p: v.eq(p.term, p.literal),
    Op.NOT_EQ: lambda v, p: v.not_eq(p.term, p.literal),
    Op.STARTS_WITH: lambda v, p: v.starts_with(p.term, p.literal),
    Op.NOT_STARTS_WITH: lambda v, p: v.not_starts_with(p.term, p.literal),
    Op.IN: lambda v, p: v.in_(p.term, p.literal_set or frozenset()),
    Op.NOT_IN: lambda v, p: v.not_in(p.term, p.literal_set or frozenset()),
}


# --- Small walks every layer uses -------------------------------------------------------------------------


class RebuildingVisitor(ExpressionVisitor[Expression]):
    """A visitor that makes an expression of the same shape: constants stay, and NOT/AND/OR are rebuilt with
    Java's simplifying Expressions.not/and/or (the predicates are each subclass's business)."""

    def visit_true(self) -> Expression:
        return TRUE

    def visit_false(self) -> Expression:
        return FALSE

    def visit_not(self, child: Expression) -> Expression:
        return not_(child)

    def visit_and(self, left: Expression, right: Expression) -> Expression:
        return and_(left, right)

    def visit_or(self, left: Expression, right: Expression) -> Expression:
        return or_(left, right)


class _RewriteNot(RebuildingVisitor):
    """Java RewriteNot: a NOT is pushed into its (already rewritten) child."""

    def visit_not(self, child: Expression) -> Expression:
        return child.negate()

    def visit_unbound_predicate(self, pred: UnboundPredicate) -> Expression:
        return pred

    def visit_bound_predicate(self, pred: BoundPredicate) -> Expression:
        return pred


def rewrite_not(expr: Expression) -> Expression:
    """`expr` without NOT nodes: each pushed down to the predicates it negates (Java RewriteNot)."""
    return visit(expr, _RewriteNot())


class _Predicates(ExpressionVisitor[list[Any]]):
    """Every predicate of a tree, left to right."""

    def visit_true(self) -> list[Any]:
        return []

    def visit_false(self) -> list[Any]:
        return []

    def visit_not(self, child: list[Any]) -> list[Any]:
        return child

    def visit_and(self, left: list[Any], right: list[Any]) -> list[Any]:
        return left + right

    def visit_or(self, left: list[Any], right: list[Any]) -> list[Any]:
        return left + right

    def visit_unbound_predicate(self, pred: UnboundPredicate) -> list[Any]:
        return [pred]

    def visit_bound_predicate(self, pred: BoundPredicate) -> list[Any]:
        return [pred]


def predicates(expr: Expression) -> list[BoundPredicate | UnboundPredicate]:
    """The predicates of `expr`, left to right (Java Binder.boundReferences walks the same way)."""
    return visit(expr, _Predicates())


def bound_predicates(expr: Expression) -> list[BoundPredicate]:
    """The bound predicates of `expr`, left to right."""
    return [pred for pred in predicates(expr) if isinstance(pred, BoundPredicate)]


def conjuncts(expr: Expression) -> list[Expression]:
    """The top-level terms of a chain of ANDs (the expression itself when it is not an AND)."""
    out: list[Expression] = []
    pending = [expr]
    while pending:
        node = pending.pop()
        if isinstance(node, And):
            pending += (node.right, node.left)
        else:
            out.append(node)
    return out

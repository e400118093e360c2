"""The expression tree: constants, and/or/not, and predicates over terms (Iceberg Java's Expression API).

A few generic node types instead of one class per operator: `UnboundPredicate` holds typed literals as
the caller wrote them (JSON or a filter string); binding against a schema (binding.py) turns it into a
`BoundPredicate` whose values are converted to the term's type, in Iceberg's internal representation
(metadata/conversions.py). The constructors `and_`, `or_` and `not_` simplify exactly as Java's
`Expressions.and/or/not` do, which matters because residuals are compared with Java's.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from planner_service.expressions.literals import Literal
from planner_service.metadata.partitioning import Transform
from planner_service.metadata.types import IcebergType, NestedField


class Op(enum.Enum):
    """Predicate and connective operations; values are the REST spec's expression type names."""

    TRUE = "true"
    FALSE = "false"
    IS_NULL = "is-null"
    NOT_NULL = "not-null"
    IS_NAN = "is-nan"
    NOT_NAN = "not-nan"
    LT = "lt"
    LT_EQ = "lt-eq"
    GT = "gt"
    GT_EQ = "gt-eq"
    EQ = "eq"
    NOT_EQ = "not-eq"
    STARTS_WITH = "starts-with"
    NOT_STARTS_WITH = "not-starts-with"
    IN = "in"
    NOT_IN = "not-in"
    NOT = "not"
    AND = "and"
    OR = "or"

    def negate(self) -> Op:
        return _NEGATED[self]


_NEGATED = {
    Op.IS_NULL: Op.NOT_NULL,
    Op.NOT_NULL: Op.IS_NULL,
    Op.IS_NAN: Op.NOT_NAN,
    Op.NOT_NAN: Op.IS_NAN,
    Op.LT: Op.GT_EQ,
    Op.LT_EQ: Op.GT,
    Op.GT: Op.LT_EQ,
    Op.GT_EQ: Op.LT,
    Op.EQ: Op.NOT_EQ,
    Op.NOT_EQ: Op.EQ,
    Op.IN: Op.NOT_IN,
    Op.NOT_IN: Op.IN,
    Op.STARTS_WITH: Op.NOT_STARTS_WITH,
    Op.NOT_STARTS_WITH: Op.STARTS_WITH,
}
UNARY_OPS = frozenset({Op.IS_NULL, Op.NOT_NULL, Op.IS_NAN, Op.NOT_NAN})
LITERAL_OPS = frozenset({Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ, Op.STARTS_WITH, Op.NOT_STARTS_WITH})
SET_OPS = frozenset({Op.IN, Op.NOT_IN})


class Expression:
    """Base of every node. `negate()` is RewriteNot's step: push a NOT one level down."""

    op: Op

    def negate(self) -> Expression:
        raise NotImplementedError


@dataclass(frozen=True)
class AlwaysTrue(Expression):
    op = Op.TRUE

    def negate(self) -> Expression:
        return FALSE

    def __str__(self) -> str:
        return "true"


@dataclass(frozen=True)
class AlwaysFalse(Expression):
    op = Op.FALSE

    def negate(self) -> Expression:
        return TRUE

    def __str__(self) -> str:
        return "false"


TRUE = AlwaysTrue()
FALSE = AlwaysFalse()


@dataclass(frozen=True)
class And(Expression):
    left: Expression
    right: Expression
    op = Op.AND

    def negate(self) -> Expression:
        return or_(self.left.negate(), self.right.negate())

    def __str__(self) -> str:
        return f"({self.left} and {self.right})"


@dataclass(frozen=True)
class Or(Expression):
    left: Expression
    right: Expression
    op = Op.OR

    def negate(self) -> Expression:
        return and_(self.left.negate(), self.right.negate())

    def __str__(self) -> str:
        return f"({self.left} or {self.right})"


@dataclass(frozen=True)
class Not(Expression):
    child: Expression
    op = Op.NOT

    def negate(self) -> Expression:
        return self.child

    def __str__(self) -> str:
        return f"not({self.child})"


def and_(left: Expression, right: Expression, *more: Expression) -> Expression:
    """Expressions.and: false absorbs, true is dropped (Java compares by identity; ours are singletons)."""
    if more:
        result = and_(left, right)
        for expr in more:
            result = and_(result, expr)
        return result
    if left is FALSE or right is FALSE:
        return FALSE
    if left is TRUE:
        return right
    if right is TRUE:
        return left
    return And(left, right)


def or_(left: Expression, right: Expression, *more: Expression) -> Expression:
    """Expressions.or: true absorbs, false is dropped."""
    if more:
        result = or_(left, right)
        for expr in more:
            result = or_(result, expr)
        return result
    if left is TRUE or right is TRUE:
        return TRUE
    if left is FALSE:
        return right
    if right is FALSE:
        return left
    return Or(left, right)


def not_(child: Expression) -> Expression:
    """Expressions.not: not(true) = false, not(false) = true, not(not(x)) = x."""
    if child is TRUE:
        return FALSE
    if child is FALSE:
        return TRUE
    if isinstance(child, Not):
        return child.child
    return Not(child)


# --- Terms ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """A column by name: a dotted full name for nested fields ("a.b", "tags.element", "m.key")."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class UnboundTransform:
    """A transform of a column, e.g. bucket[16](id), as a predicate term."""

    ref: Reference
    transform: Transform

    def __str__(self) -> str:
        return f"{self.transform}({self.ref})"


UnboundTerm = Reference | UnboundTransform


@dataclass(frozen=True)
class BoundReference:
    """A column resolved to its field; `name` is the name the filter used (Java keeps it for residuals)."""

    field: NestedField
    name: str

    @property
    def field_id(self) -> int:
        return self.field.field_id

    @property
    def type(self) -> IcebergType:
        return self.field.type

    @property
    def produces_null(self) -> bool:
        return not self.field.required

    @property
    def ref(self) -> BoundReference:
        return self

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class BoundTransform:
    ref: BoundReference
    transform: Transform

    @property
    def field_id(self) -> int:
        return self.ref.field_id

    @property
    def type(self) -> IcebergType:
        return self.transform.result_type(self.ref.type)

    @property
    def produces_null(self) -> bool:
        # Java BoundTransform: nulls map to null; a transform that does not preserve order may also make nulls
        return self.ref.produces_null or not self.transform.preserves_order

    def __str__(self) -> str:
        return f"{self.transform}({self.ref.name})"


BoundTerm = BoundReference | BoundTransform
Term = UnboundTerm | BoundTerm


# --- Predicates -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnboundPredicate(Expression):
    """A predicate before binding: literals exactly as given (None for unary operations)."""

    op: Op
    term: UnboundTerm
    literals: tuple[Literal, ...] | None = None

    @property
    def literal(self) -> Literal:
        assert self.literals is not None and len(self.literals) == 1, self
        return self.literals[0]

    def negate(self) -> Expression:
        return UnboundPredicate(self.op.negate(), self.term, self.literals)

    def __str__(self) -> str:
        values = None if self.literals is None else [str(x) for x in self.literals]
        return _predicate_text(self.op, str(self.term), values)


@dataclass(frozen=True, eq=False)
class BoundPredicate(Expression):
    """A bound predicate: `literal` (literal ops) or `literal_set` (in / not-in) hold internal values of the
    term's type. `values` keeps the set's values in the order given, for JSON output."""

    op: Op
    term: BoundTerm
    literal: Any = None
    literal_set: frozenset[Any] | None = None
    values: tuple[Any, ...] = ()

    @property
    def ref(self) -> BoundReference:
        return self.term.ref

    def negate(self) -> Expression:
        return BoundPredicate(self.op.negate(), self.term, self.literal, self.literal_set, self.values)

    def __str__(self) -> str:
        if self.op in SET_OPS:
            return _predicate_text(self.op, str(self.term), [repr(v) for v in self.values])
        return _predicate_text(self.op, str(self.term), None if self.op in UNARY_OPS else [repr(self.literal)])


def _predicate_text(op: Op, term: str, values: list[str] | None) -> str:
    if values is None:
        return f"{op.value.replace('-', '_')}({term})"
    if op in SET_OPS:
        return f"{term} {op.value.replace('-', ' ')} ({', '.join(values)})"
    return f"{term} {_SYMBOLS.get(op, op.value)} {values[0]}"


_SYMBOLS = {Op.LT: "<", Op.LT_EQ: "<=", Op.GT: ">", Op.GT_EQ: ">=", Op.EQ: "==", Op.NOT_EQ: "!="}


def predicate(op: Op, term: UnboundTerm | str, *values: Any) -> UnboundPredicate:
    """An unbound predicate from Python values (Literal objects, or values Literal.of accepts)."""
    from planner_service.expressions.literals import literal_of

    ref = Reference(term) if isinstance(term, str) else term
    if op in UNARY_OPS:
        if values:
            raise ValueError(f"{op.value} takes no value")
        return UnboundPredicate(op, ref)
    lits = tuple(v if isinstance(v, Literal) else literal_of(v) for v in values)
    if op in LITERAL_OPS and len(lits) != 1:
        raise ValueError(f"{op.value} takes exactly one value")
    return UnboundPredicate(op, ref, lits)

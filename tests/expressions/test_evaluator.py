"""Evaluating bound expressions on one struct, as Iceberg Java's Evaluator does. Expected values follow
Java 1.10: nulls-first literal comparators (reference §3.3, §5), Evaluator.startsWith/notStartsWith on
null, HashSet membership by `equals` (BigDecimal.equals includes the scale; Double.equals compares bits)."""

from __future__ import annotations

import math
import uuid
from decimal import Decimal
from typing import Any

import pytest

from planner_service.expressions.binding import bind
from planner_service.expressions.evaluator import Evaluator
from planner_service.expressions.expression import (
    FALSE,
    TRUE,
    Expression,
    Op,
    Reference,
    UnboundTransform,
    and_,
    not_,
    or_,
    predicate,
)
from planner_service.expressions.literals import Literal
from planner_service.metadata.conversions import java_equality_key
from planner_service.metadata.partitioning import Transform
from planner_service.metadata.types import NestedField, Schema, StructType, parse_primitive

STRUCT = StructType(
    tuple(
        NestedField(field_id, name, parse_primitive(typ), required=False)
        for field_id, name, typ in [
            (1000, "a", "int"),
            (1001, "s", "string"),
            (1002, "f", "double"),
            (1003, "d", "decimal(9, 2)"),
            (1004, "u", "uuid"),
            (1005, "b", "binary"),
        ]
    )
)
SCHEMA = Schema(0, STRUCT)
NAMES = [f.name for f in STRUCT.fields]


def _eval(expr: Expression, **values: Any) -> bool:
    row = tuple(values.get(name) for name in NAMES)
    return Evaluator(STRUCT, bind(SCHEMA, expr)).eval(row)


NULL_CASES = [
    # Java: the comparator is nullsFirst, so null is below every literal
    (Op.LT, True),
    (Op.LT_EQ, True),
    (Op.NOT_EQ, True),
    (Op.GT, False),
    (Op.GT_EQ, False),
    (Op.EQ, False),
]


@pytest.mark.parametrize(("op", "expected"), NULL_CASES)
def test_null_is_below_every_literal(op: Op, expected: bool) -> None:
    assert _eval(predicate(op, "a", 5), a=None) is expected


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    [
        (Op.LT, 4, True),
        (Op.LT, 5, False),
        (Op.LT_EQ, 5, True),
        (Op.LT_EQ, 6, False),
        (Op.GT, 6, True),
        (Op.GT, 5, False),
        (Op.GT_EQ, 5, True),
        (Op.GT_EQ, 4, False),
        (Op.EQ, 5, True),
        (Op.EQ, 4, False),
        (Op.NOT_EQ, 4, True),
        (Op.NOT_EQ, 5, False),
    ],
)
def test_comparisons(op: Op, value: int, expected: bool) -> None:
    assert _eval(predicate(op, "a", 5), a=value) is expected


def test_null_tests_and_sets() -> None:
    assert _eval(predicate(Op.IS_NULL, "a"), a=None) is True
    assert _eval(predicate(Op.IS_NULL, "a"), a=0) is False
    assert _eval(predicate(Op.NOT_NULL, "a"), a=None) is False
    assert _eval(predicate(Op.NOT_NULL, "a"), a=0) is True
    assert _eval(predicate(Op.IN, "a", 5, 6), a=6) is True
    assert _eval(predicate(Op.IN, "a", 5, 6), a=7) is False
    assert _eval(predicate(Op.IN, "a", 5, 6), a=None) is False  # HashSet.contains(null): no null literals
    assert _eval(predicate(Op.NOT_IN, "a", 5, 6), a=None) is True
    assert _eval(predicate(Op.NOT_IN, "a", 5, 6), a=5) is False
    assert _eval(predicate(Op.IN, "s", "x", "y"), s="y") is True  # CharSequenceSet compares characters
    assert _eval(predicate(Op.IN, "s", "x", "y"), s=None) is False


def test_starts_with() -> None:
    assert _eval(predicate(Op.STARTS_WITH, "s", "ab"), s="abc") is True
    assert _eval(predicate(Op.STARTS_WITH, "s", "ab"), s="a") is False
    assert _eval(predicate(Op.NOT_STARTS_WITH, "s", "ab"), s="abc") is False
    # Java Evaluator: startsWith(null) is false and notStartsWith is its negation
    assert _eval(predicate(Op.STARTS_WITH, "s", "ab"), s=None) is False
    assert _eval(predicate(Op.NOT_STARTS_WITH, "s", "ab"), s=None) is True


def test_nan_and_signed_zero() -> None:
    nan = math.nan
    assert _eval(predicate(Op.IS_NAN, "f"), f=nan) is True
    assert _eval(predicate(Op.IS_NAN, "f"), f=None) is False  # NaNUtil.isNaN(null) is false
    assert _eval(predicate(Op.NOT_NAN, "f"), f=None) is True
    assert _eval(predicate(Op.NOT_NAN, "f"), f=1.0) is True
    assert _eval(predicate(Op.GT, "f", math.inf), f=nan) is True  # Double.compare: NaN above +inf
    assert _eval(predicate(Op.EQ, "f", 0.0), f=-0.0) is False  # Double.compare(-0.0, 0.0) < 0
    assert _eval(predicate(Op.LT, "f", 0.0), f=-0.0) is True
    assert _eval(predicate(Op.IN, "f", 0.0, 1.0), f=-0.0) is False  # Double.equals compares bits
    assert _eval(predicate(Op.IN, "f", 0.0, 1.0), f=0.0) is True
    assert _eval(predicate(Op.NOT_IN, "f", 0.0, 1.0), f=-0.0) is True


def _dec(text: str) -> Literal:
    return Literal("decimal", Decimal(text))


def test_decimals_compare_by_value_but_sets_include_the_scale() -> None:
    # a decimal literal keeps its own scale when bound (DecimalLiteral.to)
    assert _eval(predicate(Op.EQ, "d", _dec("1.5")), d=Decimal("1.50")) is True  # compareTo ignores scale
    assert _eval(predicate(Op.LT, "d", _dec("1.6")), d=Decimal("1.50")) is True
    assert _eval(predicate(Op.IN, "d", _dec("1.5"), _dec("2.5")), d=Decimal("1.50")) is False  # equals: scale
    assert _eval(predicate(Op.IN, "d", _dec("1.50"), _dec("2.50")), d=Decimal("1.50")) is True
    assert _eval(predicate(Op.NOT_IN, "d", _dec("1.5"), _dec("2.5")), d=Decimal("1.50")) is True


def test_uuid_binary_and_string_orders() -> None:
    high = uuid.UUID("80000000-0000-0000-0000-000000000000")  # negative most-significant long
    low = Literal("uuid", uuid.UUID("00000000-0000-0000-0000-000000000001"))
    assert _eval(predicate(Op.LT, "u", low), u=high) is True  # UUID.compareTo is signed
    assert _eval(predicate(Op.GT, "b", b"\x01\x02"), b=b"\xff") is True  # unsigned bytes
    assert _eval(predicate(Op.GT, "b", b"\x01\x02"), b=b"\x01") is False  # a prefix sorts first
    assert _eval(predicate(Op.GT, "s", "\uffff"), s="😀") is True  # code-point order (reference §3.3)


def test_connectives_and_constants() -> None:
    lt5, is_null = predicate(Op.LT, "a", 5), predicate(Op.IS_NULL, "s")
    assert _eval(and_(lt5, is_null), a=1, s=None) is True
    assert _eval(and_(lt5, is_null), a=1, s="x") is False
    assert _eval(or_(lt5, is_null), a=9, s="x") is False
    assert _eval(or_(lt5, is_null), a=9, s=None) is True
    assert _eval(not_(lt5), a=9) is True
    assert _eval(TRUE) is True
    assert _eval(FALSE) is False


def test_transform_terms_apply_the_transform() -> None:
    term = UnboundTransform(Reference("s"), Transform("bucket", 16))
    assert _eval(predicate(Op.EQ, term, 9), s="iceberg") is True  # hash 1210000089 (spec Appendix B) % 16
    assert _eval(predicate(Op.IS_NULL, term), s=None) is True


def test_bad_input() -> None:
    bound = bind(SCHEMA, predicate(Op.EQ, "a", 1))
    with pytest.raises(ValueError):
        Evaluator(STRUCT, bound).eval((1,))
    with pytest.raises(TypeError):
        Evaluator(STRUCT, predicate(Op.EQ, "a", 1)).eval((None,) * len(NAMES))


def test_java_equality_key() -> None:
    assert java_equality_key(0.0) != java_equality_key(-0.0)
    assert java_equality_key(math.nan) == java_equality_key(float("nan"))
    assert java_equality_key(Decimal("1.5")) != java_equality_key(Decimal("1.50"))
    assert java_equality_key(Decimal("1.50")) == java_equality_key(Decimal("1.50"))
    assert java_equality_key("x") == "x"

"""Partition projections. Expected values are derived by hand from Iceberg Java 1.10's Identity, Bucket,
Truncate, Dates, Timestamps and ProjectionUtil (reference §4.1-4.2); transform values from the spec's
Appendix B hashes and the DateTimeUtil quirks verified on the Java classes (reference §4.3-4.4)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from planner_service.expressions.binding import InvalidFilterError, bind_predicate
from planner_service.expressions.expression import (
    FALSE,
    SET_OPS,
    TRUE,
    And,
    BoundPredicate,
    Expression,
    Not,
    Op,
    Or,
    Reference,
    UnboundPredicate,
    UnboundTransform,
    and_,
    not_,
    or_,
    predicate,
)
from planner_service.expressions.literals import Literal
from planner_service.expressions.projections import (
    inclusive_projection,
    project_inclusive,
    project_strict,
    strict_projection,
)
from planner_service.metadata.partitioning import PartitionField, PartitionSpec, Transform, parse_transform
from planner_service.metadata.types import NestedField, PrimitiveType, Schema, StructType, parse_primitive

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
DAY_US = 86_400_000_000
HOUR_US = 3_600_000_000
TS = 1_510_871_468_000_000  # 2017-11-16T22:31:08 (reference §4.4)

COLUMNS = [
    ("id", "long"),
    ("i", "int"),
    ("l", "long"),
    ("d", "decimal(9, 2)"),
    ("s", "string"),
    ("b", "binary"),
    ("ts", "timestamp"),
    ("tstz", "timestamptz"),
    ("tsns", "timestamp_ns"),
    ("dt", "date"),
    ("f", "double"),
]
_FIELDS = [NestedField(n, name, parse_primitive(typ), required=False) for n, (name, typ) in enumerate(COLUMNS, 1)]
_FIELDS.append(NestedField(len(COLUMNS) + 1, "req", parse_primitive("int"), required=True))
SCHEMA = Schema(0, StructType(tuple(_FIELDS)))


def _field(column: str, transform: str, name: str = "p", field_id: int = 1000) -> PartitionField:
    source = SCHEMA.find_field_by_name(column)
    assert source is not None
    return PartitionField(source.field_id, field_id, name, parse_transform(transform))


def _bound(op: Op, column: str | UnboundTransform, *values: Any) -> BoundPredicate:
    bound = bind_predicate(SCHEMA, predicate(op, column, *values))
    assert isinstance(bound, BoundPredicate), bound
    return bound


def _project(transform: str, column: str, op: Op, *values: Any, strict: bool) -> UnboundPredicate | None:
    field = _field(column, transform)
    source = SCHEMA.find_field(field.source_id)
    assert source is not None and isinstance(source.type, PrimitiveType)
    source_type = source.type
    project = project_strict if strict else project_inclusive
    return project(field, source_type, _bound(op, column, *values))


def _expected(op: Op | None, kind: str = "", *values: Any, name: str = "p") -> UnboundPredicate | None:
    if op is None:
        return None
    if not values:
        return UnboundPredicate(op, Reference(name))
    return UnboundPredicate(op, Reference(name), tuple(Literal(kind, v) for v in values))


def _normalized(pred: UnboundPredicate | None) -> Any:
    """Set predicates compare as sets: Java builds them from HashSets, so their order is arbitrary."""
    if pred is None or pred.op not in SET_OPS or pred.literals is None:
        return pred
    return (pred.op, pred.term, frozenset(pred.literals))


def _check(transform: str, column: str, case: tuple[Any, ...], strict: bool) -> None:
    (op, *values), expected = case[0], case[1]
    actual = _project(transform, column, op, *values, strict=strict)
    assert _normalized(actual) == _normalized(expected)


# --- identity: every op is copied, inclusive and strict ----------------------------------------------------

IDENTITY_CASES = [
    ((Op.LT, 5), _expected(Op.LT, "int", 5)),
    ((Op.LT_EQ, 5), _expected(Op.LT_EQ, "int", 5)),
    ((Op.GT, 5), _expected(Op.GT, "int", 5)),
    ((Op.GT_EQ, 5), _expected(Op.GT_EQ, "int", 5)),
    ((Op.EQ, 5), _expected(Op.EQ, "int", 5)),
    ((Op.NOT_EQ, 5), _expected(Op.NOT_EQ, "int", 5)),
    ((Op.IN, 5, 6), _expected(Op.IN, "int", 5, 6)),
    ((Op.NOT_IN, 5, 6), _expected(Op.NOT_IN, "int", 5, 6)),
    ((Op.IS_NULL,), _expected(Op.IS_NULL)),
    ((Op.NOT_NULL,), _expected(Op.NOT_NULL)),
]


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("case", IDENTITY_CASES)
def test_identity_copies_every_predicate(case: tuple[Any, ...], strict: bool) -> None:
    _check("identity", "i", case, strict)


@pytest.mark.parametrize("strict", [False, True])
def test_identity_copies_string_prefixes_nan_tests_and_literal_kinds(strict: bool) -> None:
    assert _project("identity", "s", Op.STARTS_WITH, "ab", strict=strict) == _expected(Op.STARTS_WITH, "string", "ab")
    assert _project("identity", "s", Op.NOT_STARTS_WITH, "ab", strict=strict) == _expected(
        Op.NOT_STARTS_WITH, "string", "ab"
    )
    assert _project("identity", "f", Op.IS_NAN, strict=strict) == _expected(Op.IS_NAN)
    # timestamptz values are Java TimestampLiterals: the Literal kind has no zone
    assert _project("identity", "tstz", Op.EQ, TS, strict=strict) == _expected(Op.EQ, "timestamp", TS)
    # a decimal literal keeps its own scale through binding and projection (DecimalLiteral.to)
    projected = _project("identity", "d", Op.EQ, Decimal("1.5"), strict=strict)
    assert projected is not None and projected.literal == Literal("decimal", Decimal("1.5"))
    assert str(projected.literal.value) == "1.5"


# --- bucket[16]: bucket(34L) = 3, bucket(1510871468000001L) = 6, bucket("iceberg") = 9 -----------------------
# (hashes 2017239379, -1207196810 and 1210000089 from the spec's Appendix B; (h & MAX) % 16)

BUCKET_INCLUSIVE = [
    ((Op.EQ, 34), _expected(Op.EQ, "int", 3)),
    ((Op.IN, 34, TS + 1), _expected(Op.IN, "int", 3, 6)),
    ((Op.NOT_EQ, 34), None),
    ((Op.NOT_IN, 34, TS + 1), None),
    ((Op.LT, 34), None),
    ((Op.LT_EQ, 34), None),
    ((Op.GT, 34), None),
    ((Op.GT_EQ, 34), None),
    ((Op.IS_NULL,), _expected(Op.IS_NULL)),
    ((Op.NOT_NULL,), _expected(Op.NOT_NULL)),
]
BUCKET_STRICT = [
    ((Op.NOT_EQ, 34), _expected(Op.NOT_EQ, "int", 3)),
    ((Op.NOT_IN, 34, TS + 1), _expected(Op.NOT_IN, "int", 3, 6)),
    ((Op.EQ, 34), None),
    ((Op.IN, 34, TS + 1), None),
    ((Op.LT, 34), None),
    ((Op.GT_EQ, 34), None),
    ((Op.IS_NULL,), _expected(Op.IS_NULL)),
    ((Op.NOT_NULL,), _expected(Op.NOT_NULL)),
]


@pytest.mark.parametrize("case", BUCKET_INCLUSIVE)
def test_bucket_inclusive(case: tuple[Any, ...]) -> None:
    _check("bucket[16]", "id", case, strict=False)


@pytest.mark.parametrize("case", BUCKET_STRICT)
def test_bucket_strict(case: tuple[Any, ...]) -> None:
    _check("bucket[16]", "id", case, strict=True)


def test_bucket_other_source_types() -> None:
    assert _project("bucket[16]", "s", Op.EQ, "iceberg", strict=False) == _expected(Op.EQ, "int", 9)
    assert _project("bucket[16]", "s", Op.STARTS_WITH, "ice", strict=False) is None
    assert _project("bucket[16]", "s", Op.NOT_STARTS_WITH, "ice", strict=True) is None
    # decimal 14.20 hashes to -500754589 -> 3; date 2017-11-16 (day 17486) to -653330422 -> 10
    assert _project("bucket[16]", "d", Op.EQ, Decimal("14.20"), strict=False) == _expected(Op.EQ, "int", 3)
    assert _project("bucket[16]", "dt", Op.NOT_EQ, Literal("date", 17486), strict=True) == _expected(
        Op.NOT_EQ, "int", 10
    )


# --- truncate[10] on int: ±1 with Java int wrap-around ------------------------------------------------------

TRUNCATE_INT_INCLUSIVE = [
    ((Op.LT, 5), _expected(Op.LT_EQ, "int", 0)),
    ((Op.LT, 10), _expected(Op.LT_EQ, "int", 0)),  # t(9)
    ((Op.LT, -1), _expected(Op.LT_EQ, "int", -10)),  # t(-2)
    ((Op.LT_EQ, 5), _expected(Op.LT_EQ, "int", 0)),
    ((Op.GT, 5), _expected(Op.GT_EQ, "int", 0)),  # t(6)
    ((Op.GT, 9), _expected(Op.GT_EQ, "int", 10)),  # t(10)
    ((Op.GT, -11), _expected(Op.GT_EQ, "int", -10)),  # t(-10)
    ((Op.GT_EQ, 5), _expected(Op.GT_EQ, "int", 0)),
    ((Op.EQ, 5), _expected(Op.EQ, "int", 0)),
    ((Op.NOT_EQ, 5), None),
    ((Op.IN, 5, 15), _expected(Op.IN, "int", 0, 10)),
    ((Op.NOT_IN, 5, 15), None),
    ((Op.IS_NULL,), _expected(Op.IS_NULL)),
    ((Op.NOT_NULL,), _expected(Op.NOT_NULL)),
    # Java `boundary - 1` wraps: t(Integer.MAX_VALUE) = 2147483640
    ((Op.LT, INT_MIN), _expected(Op.LT_EQ, "int", 2147483640)),
    # `boundary + 1` wraps to MIN_VALUE; truncateInt(10, MIN) = MIN - 2, which wraps to 2147483646
    ((Op.GT, INT_MAX), _expected(Op.GT_EQ, "int", 2147483646)),
]
TRUNCATE_INT_STRICT = [
    ((Op.LT, 5), _expected(Op.LT, "int", 0)),
    ((Op.LT_EQ, 5), _expected(Op.LT, "int", 0)),  # t(6)
    ((Op.LT_EQ, 9), _expected(Op.LT, "int", 10)),  # t(10)
    ((Op.GT, 5), _expected(Op.GT, "int", 0)),
    ((Op.GT_EQ, 5), _expected(Op.GT, "int", 0)),  # t(4)
    ((Op.GT_EQ, 10), _expected(Op.GT, "int", 0)),  # t(9)
    ((Op.NOT_EQ, 5), _expected(Op.NOT_EQ, "int", 0)),
    ((Op.EQ, 5), None),
    ((Op.IN, 5, 15), None),
    ((Op.NOT_IN, 5, 15), _expected(Op.NOT_IN, "int", 0, 10)),
    ((Op.IS_NULL,), _expected(Op.IS_NULL)),
    ((Op.LT_EQ, INT_MAX), _expected(Op.LT, "int", 2147483646)),  # t(MIN_VALUE) after the wrap
    ((Op.GT_EQ, INT_MIN), _expected(Op.GT, "int", 2147483640)),  # t(MAX_VALUE) after the wrap
]


@pytest.mark.parametrize("case", TRUNCATE_INT_INCLUSIVE)
def test_truncate_int_inclusive(case: tuple[Any, ...]) -> None:
    _check("truncate[10]", "i", case, strict=False)


@pytest.mark.parametrize("case", TRUNCATE_INT_STRICT)
def test_truncate_int_strict(case: tuple[Any, ...]) -> None:
    _check("truncate[10]", "i", case, strict=True)


def test_truncate_long_wraps_as_java_long() -> None:
    assert _project("truncate[10]", "l", Op.LT, 5, strict=False) == _expected(Op.LT_EQ, "long", 0)
    assert _project("truncate[10]", "l", Op.LT, LONG_MIN, strict=False) == _expected(
        Op.LT_EQ, "long", 9223372036854775800
    )
    # LONG_MIN % 10 = -8 in Java, so t(LONG_MIN) = LONG_MIN - 2, wrapping to LONG_MAX - 1
    assert _project("truncate[10]", "l", Op.GT, LONG_MAX, strict=False) == _expected(
        Op.GT_EQ, "long", 9223372036854775806
    )
    assert _project("truncate[10]", "l", Op.GT_EQ, LONG_MIN, strict=True) == _expected(
        Op.GT, "long", 9223372036854775800
    )


# --- truncate[10] on decimal(9, 2): ±1 is one unit at the literal's own scale -------------------------------


def _dec(text: str) -> Literal:
    return Literal("decimal", Decimal(text))


TRUNCATE_DECIMAL = [
    # (op, literal, strict, expected op, expected value text)
    (Op.LT, "12.34", False, Op.LT_EQ, "12.30"),  # t(12.33)
    (Op.LT_EQ, "12.34", False, Op.LT_EQ, "12.30"),
    (Op.GT, "12.34", False, Op.GT_EQ, "12.30"),  # t(12.35)
    (Op.GT, "12.39", False, Op.GT_EQ, "12.40"),  # t(12.40)
    (Op.GT_EQ, "12.34", False, Op.GT_EQ, "12.30"),
    (Op.EQ, "12.34", False, Op.EQ, "12.30"),
    (Op.LT, "-0.01", False, Op.LT_EQ, "-0.10"),  # t(-0.02): Java -2 % 10 = -2, so -2 - 8 = -10 unscaled
    (Op.GT, "1.5", False, Op.GT_EQ, "1.0"),  # scale 1 kept: t(1.6) truncates unscaled 16 to 10
    (Op.LT, "12.34", True, Op.LT, "12.30"),
    (Op.LT_EQ, "12.34", True, Op.LT, "12.30"),  # t(12.35)
    (Op.LT_EQ, "12.39", True, Op.LT, "12.40"),  # t(12.40)
    (Op.GT, "12.34", True, Op.GT, "12.30"),
    (Op.GT_EQ, "12.30", True, Op.GT, "12.20"),  # t(12.29)
    (Op.NOT_EQ, "12.34", True, Op.NOT_EQ, "12.30"),
]


@pytest.mark.parametrize(("op", "value", "strict", "expected_op", "expected"), TRUNCATE_DECIMAL)
def test_truncate_decimal(op: Op, value: str, strict: bool, expected_op: Op, expected: str) -> None:
    projected = _project("truncate[10]", "d", op, _dec(value), strict=strict)
    assert projected is not None and projected.op is expected_op and projected.term == Reference("p")
    assert projected.literal.kind == "decimal"
    assert str(projected.literal.value) == expected  # the scale too


def test_truncate_decimal_no_projection_and_sets() -> None:
    assert _project("truncate[10]", "d", Op.NOT_EQ, _dec("12.34"), strict=False) is None
    assert _project("truncate[10]", "d", Op.EQ, _dec("12.34"), strict=True) is None
    projected = _project("truncate[10]", "d", Op.IN, _dec("12.34"), _dec("12.56"), strict=False)
    assert _normalized(projected) == _normalized(_expected(Op.IN, "decimal", Decimal("12.30"), Decimal("12.50")))
    projected = _project("truncate[10]", "d", Op.NOT_IN, _dec("12.34"), _dec("12.56"), strict=True)
    assert _normalized(projected) == _normalized(_expected(Op.NOT_IN, "decimal", Decimal("12.30"), Decimal("12.50")))


# --- truncate[3] on string: prefix length in UTF-16 units, truncation in code points ------------------------

TRUNCATE_STRING_INCLUSIVE = [
    ((Op.STARTS_WITH, "ab"), _expected(Op.STARTS_WITH, "string", "ab")),
    ((Op.STARTS_WITH, "abc"), _expected(Op.EQ, "string", "abc")),
    ((Op.STARTS_WITH, "abcd"), _expected(Op.STARTS_WITH, "string", "abc")),
    ((Op.NOT_STARTS_WITH, "ab"), _expected(Op.NOT_STARTS_WITH, "string", "ab")),
    ((Op.NOT_STARTS_WITH, "abc"), _expected(Op.NOT_EQ, "string", "abc")),
    ((Op.NOT_STARTS_WITH, "abcd"), None),
    ((Op.LT, "abcd"), _expected(Op.LT_EQ, "string", "abc")),
    ((Op.LT_EQ, "abcd"), _expected(Op.LT_EQ, "string", "abc")),
    ((Op.GT, "abcd"), _expected(Op.GT_EQ, "string", "abc")),
    ((Op.GT_EQ, "abcd"), _expected(Op.GT_EQ, "string", "abc")),
    ((Op.EQ, "abcd"), _expected(Op.EQ, "string", "abc")),
    ((Op.NOT_EQ, "abcd"), None),
    ((Op.IN, "abcd", "xyz12"), _expected(Op.IN, "string", "abc", "xyz")),
    ((Op.NOT_IN, "abcd", "xyz12"), None),
    ((Op.IS_NULL,), _expected(Op.IS_NULL)),
    # "😀😀" is 4 UTF-16 units (> 3) but 2 code points, so t(p) = p
    ((Op.STARTS_WITH, "😀😀"), _expected(Op.STARTS_WITH, "string", "😀😀")),
    ((Op.STARTS_WITH, "a😀"), _expected(Op.EQ, "string", "a😀")),  # 3 UTF-16 units == width
    ((Op.NOT_STARTS_WITH, "😀😀"), None),
    ((Op.EQ, "😀😀😀😀"), _expected(Op.EQ, "string", "😀😀😀")),  # 3 code points
]
TRUNCATE_STRING_STRICT = [
    ((Op.STARTS_WITH, "ab"), _expected(Op.STARTS_WITH, "string", "ab")),
    ((Op.STARTS_WITH, "abc"), _expected(Op.EQ, "string", "abc")),
    ((Op.STARTS_WITH, "abcd"), None),
    ((Op.NOT_STARTS_WITH, "ab"), _expected(Op.NOT_STARTS_WITH, "string", "ab")),
    ((Op.NOT_STARTS_WITH, "abc"), _expected(Op.NOT_EQ, "string", "abc")),
    ((Op.NOT_STARTS_WITH, "abcd"), _expected(Op.NOT_STARTS_WITH, "string", "abc")),
    ((Op.LT, "abcd"), _expected(Op.LT, "string", "abc")),
    ((Op.LT_EQ, "abcd"), _expected(Op.LT, "string", "abc")),
    ((Op.GT, "abcd"), _expected(Op.GT, "string", "abc")),
    ((Op.GT_EQ, "abcd"), _expected(Op.GT, "string", "abc")),
    ((Op.NOT_EQ, "abcd"), _expected(Op.NOT_EQ, "string", "abc")),
    ((Op.EQ, "abcd"), None),
    ((Op.IN, "abcd", "xyz12"), None),
    ((Op.NOT_IN, "abcd", "xyz12"), _expected(Op.NOT_IN, "string", "abc", "xyz")),
    ((Op.NOT_NULL,), _expected(Op.NOT_NULL)),
    ((Op.STARTS_WITH, "😀😀"), None),  # 4 UTF-16 units > 3
    ((Op.NOT_STARTS_WITH, "😀😀"), _expected(Op.NOT_STARTS_WITH, "string", "😀😀")),
    ((Op.NOT_STARTS_WITH, "a😀"), _expected(Op.NOT_EQ, "string", "a😀")),
]


@pytest.mark.parametrize("case", TRUNCATE_STRING_INCLUSIVE)
def test_truncate_string_inclusive(case: tuple[Any, ...]) -> None:
    _check("truncate[3]", "s", case, strict=False)


@pytest.mark.parametrize("case", TRUNCATE_STRING_STRICT)
def test_truncate_string_strict(case: tuple[Any, ...]) -> None:
    _check("truncate[3]", "s", case, strict=True)


# --- truncate[2] on binary ----------------------------------------------------------------------------------

B3, B2, C3, C2 = b"\x01\x02\x03", b"\x01\x02", b"\x0a\x0b\x0c", b"\x0a\x0b"
TRUNCATE_BINARY_INCLUSIVE = [
    ((Op.LT, B3), _expected(Op.LT_EQ, "binary", B2)),
    ((Op.LT_EQ, B3), _expected(Op.LT_EQ, "binary", B2)),
    ((Op.GT, B3), _expected(Op.GT_EQ, "binary", B2)),
    ((Op.GT_EQ, B3), _expected(Op.GT_EQ, "binary", B2)),
    ((Op.EQ, B3), _expected(Op.EQ, "binary", B2)),
    ((Op.NOT_EQ, B3), None),
    ((Op.IN, B3, C3), _expected(Op.IN, "binary", B2, C2)),
    ((Op.NOT_IN, B3, C3), None),
]
TRUNCATE_BINARY_STRICT = [
    ((Op.LT, B3), _expected(Op.LT, "binary", B2)),
    ((Op.LT_EQ, B3), _expected(Op.LT, "binary", B2)),
    ((Op.GT, B3), _expected(Op.GT, "binary", B2)),
    ((Op.GT_EQ, B3), _expected(Op.GT, "binary", B2)),
    ((Op.NOT_EQ, B3), _expected(Op.NOT_EQ, "binary", B2)),
    ((Op.EQ, B3), None),
    ((Op.IN, B3, C3), None),
    ((Op.NOT_IN, B3, C3), _expected(Op.NOT_IN, "binary", B2, C2)),
]


@pytest.mark.parametrize("case", TRUNCATE_BINARY_INCLUSIVE)
def test_truncate_binary_inclusive(case: tuple[Any, ...]) -> None:
    _check("truncate[2]", "b", case, strict=False)


@pytest.mark.parametrize("case", TRUNCATE_BINARY_STRICT)
def test_truncate_binary_strict(case: tuple[Any, ...]) -> None:
    _check("truncate[2]", "b", case, strict=True)


# --- time transforms ----------------------------------------------------------------------------------------
# microsToDays(-1) = -1; microsToDays(-86_399_000_001) = -2 (Java's quirk; floor is -1, reference §4.3);
# microsToDays(-86_400_000_001) = -2; microsToHours(-3_599_000_001) = -2 (quirk); 2017-11-16 is day 17486.

DAY_TIMESTAMP_INCLUSIVE = [
    ((Op.LT, 0), _expected(Op.LT_EQ, "date", 0)),  # t(-1) = -1, fixed to -1 + 1
    ((Op.LT, -DAY_US + 1_000_000), _expected(Op.LT_EQ, "date", -1)),  # t(-86_399_000_001) = -2, fixed to -1
    ((Op.LT_EQ, -1), _expected(Op.LT_EQ, "date", 0)),  # t(-1) = -1, fixed
    ((Op.LT, DAY_US), _expected(Op.LT_EQ, "date", 0)),  # t(DAY - 1) = 0: no fix for c >= 0
    ((Op.GT, -1), _expected(Op.GT_EQ, "date", 0)),  # t(0)
    ((Op.GT_EQ, -DAY_US), _expected(Op.GT_EQ, "date", -1)),  # gt/gtEq are never fixed
    ((Op.GT, DAY_US), _expected(Op.GT_EQ, "date", 1)),
    ((Op.EQ, -1), _expected(Op.IN, "date", -1, 0)),  # eq c < 0 -> in(c, c + 1)
    ((Op.EQ, TS), _expected(Op.EQ, "date", 17486)),
    ((Op.NOT_EQ, -1), None),
    ((Op.IN, -1, DAY_US), _expected(Op.IN, "date", -1, 0, 1)),  # -1 gains 0
    ((Op.IN, 0, DAY_US), _expected(Op.IN, "date", 0, 1)),  # no negative value: unchanged
    ((Op.NOT_IN, -1, DAY_US), None),
    ((Op.IS_NULL,), _expected(Op.IS_NULL)),
    ((Op.NOT_NULL,), _expected(Op.NOT_NULL)),
]
DAY_TIMESTAMP_STRICT = [
    ((Op.LT, 0), _expected(Op.LT, "date", 0)),  # lt/ltEq are never fixed
    ((Op.LT_EQ, -DAY_US + 999_999), _expected(Op.LT, "date", -1)),  # t(-86_399_000_000) = -1
    ((Op.GT_EQ, -DAY_US), _expected(Op.GT, "date", -1)),  # t(-86_400_000_001) = -2, <= 0 so + 1
    ((Op.GT, -1), _expected(Op.GT, "date", 0)),  # t(-1) = -1, fixed to 0
    ((Op.GT, 0), _expected(Op.GT, "date", 1)),  # t(0) = 0 <= 0, fixed to 1
    ((Op.GT, DAY_US), _expected(Op.GT, "date", 1)),  # t(DAY) = 1: no fix
    ((Op.GT_EQ, 2 * DAY_US), _expected(Op.GT, "date", 1)),  # t(2 DAY - 1) = 1
    ((Op.NOT_EQ, -1), _expected(Op.NOT_IN, "date", -1, 0)),  # notEq c < 0 -> notIn(c, c + 1)
    ((Op.NOT_EQ, TS), _expected(Op.NOT_EQ, "date", 17486)),
    ((Op.NOT_IN, -1, DAY_US), _expected(Op.NOT_IN, "date", -1, 0, 1)),
    ((Op.EQ, -1), None),
    ((Op.IN, -1, DAY_US), None),
    ((Op.IS_NULL,), _expected(Op.IS_NULL)),
]


@pytest.mark.parametrize("case", DAY_TIMESTAMP_INCLUSIVE)
def test_day_of_timestamp_inclusive(case: tuple[Any, ...]) -> None:
    _check("day", "ts", case, strict=False)


@pytest.mark.parametrize("case", DAY_TIMESTAMP_STRICT)
def test_day_of_timestamp_strict(case: tuple[Any, ...]) -> None:
    _check("day", "ts", case, strict=True)


def test_hour_of_timestamp_pre_epoch_quirk_and_fix() -> None:
    # t(-3_599_000_001) = -2 (convertMicros quirk), then the inclusive fix adds one
    assert _project("hour", "ts", Op.LT_EQ, -HOUR_US + 999_999, strict=False) == _expected(Op.LT_EQ, "int", -1)
    # strict: t(-3_599_000_000) = -1, an lt bound, unchanged
    assert _project("hour", "ts", Op.LT_EQ, -HOUR_US + 999_999, strict=True) == _expected(Op.LT, "int", -1)
    assert _project("hour", "tstz", Op.EQ, TS, strict=False) == _expected(Op.EQ, "int", 17486 * 24 + 22)


def test_year_and_month_of_timestamps() -> None:
    assert _project("year", "ts", Op.GT_EQ, TS, strict=False) == _expected(Op.GT_EQ, "int", 47)
    assert _project("year", "ts", Op.GT_EQ, TS, strict=True) == _expected(Op.GT, "int", 47)  # t(TS - 1)
    assert _project("month", "tstz", Op.LT, TS, strict=False) == _expected(Op.LT_EQ, "int", 47 * 12 + 10)
    assert _project("month", "ts", Op.LT, 0, strict=False) == _expected(Op.LT_EQ, "int", 0)  # -1, fixed


def test_timestamp_ns_uses_the_nanos_transforms() -> None:
    def ns(value: int) -> Literal:
        return Literal("timestamp_ns", value)

    assert _project("day", "tsns", Op.LT, ns(0), strict=False) == _expected(Op.LT_EQ, "date", 0)  # t(-1ns) = -1
    one_day = 86_400_000_000_000
    # t(1 day - 1 ns) = 0, and a strict gt bound <= 0 is raised by one
    assert _project("day", "tsns", Op.GT_EQ, ns(one_day), strict=True) == _expected(Op.GT, "date", 1)
    # long arithmetic: LONG_MIN - 1 wraps to LONG_MAX, in 2262, 292 years after 1970
    assert _project("year", "tsns", Op.LT, ns(LONG_MIN), strict=False) == _expected(Op.LT_EQ, "int", 292)


DATE_DAY = [
    # Dates.DAY gets no pre-epoch fix
    ((Op.LT, 0), False, _expected(Op.LT_EQ, "date", -1)),
    ((Op.EQ, -1), False, _expected(Op.EQ, "date", -1)),
    ((Op.IN, -1, 3), False, _expected(Op.IN, "date", -1, 3)),
    ((Op.GT, -5), False, _expected(Op.GT_EQ, "date", -4)),
    ((Op.GT_EQ, -1), True, _expected(Op.GT, "date", -2)),
    ((Op.NOT_EQ, -1), True, _expected(Op.NOT_EQ, "date", -1)),
    ((Op.NOT_IN, -1, 3), True, _expected(Op.NOT_IN, "date", -1, 3)),
    ((Op.LT_EQ, -1), True, _expected(Op.LT, "date", 0)),
    # int arithmetic: Integer.MIN_VALUE - 1 wraps to MAX_VALUE
    ((Op.LT, INT_MIN), False, _expected(Op.LT_EQ, "date", INT_MAX)),
]


@pytest.mark.parametrize(("case", "strict", "expected"), DATE_DAY)
def test_day_of_date_is_not_fixed(case: tuple[Any, ...], strict: bool, expected: UnboundPredicate) -> None:
    _check("day", "dt", (case, expected), strict=strict)


DATE_YEAR_MONTH = [
    # 1969-12-31 is day -1 (year -1, month -1); 1969-01-01 is day -365 (year -1); 1968-12-31 year -2
    ("year", (Op.LT, 0), False, _expected(Op.LT_EQ, "int", 0)),  # t(-1) = -1, fixed
    ("year", (Op.EQ, -1), False, _expected(Op.IN, "int", -1, 0)),
    ("year", (Op.GT_EQ, -365), False, _expected(Op.GT_EQ, "int", -1)),
    ("year", (Op.GT_EQ, -365), True, _expected(Op.GT, "int", -1)),  # t(-366) = -2 <= 0, fixed
    ("year", (Op.NOT_EQ, -1), True, _expected(Op.NOT_IN, "int", -1, 0)),
    ("year", (Op.LT, 0), True, _expected(Op.LT, "int", 0)),
    ("month", (Op.LT, 0), False, _expected(Op.LT_EQ, "int", 0)),  # t(-1) = -1, fixed
    ("month", (Op.IN, -1, 31), False, _expected(Op.IN, "int", -1, 0, 1)),  # 1970-02-01 is month 1
    ("month", (Op.GT, 30), True, _expected(Op.GT, "int", 1)),  # t(30) = 0 <= 0, fixed
]


@pytest.mark.parametrize(("transform", "case", "strict", "expected"), DATE_YEAR_MONTH)
def test_year_and_month_of_date_are_fixed(
    transform: str, case: tuple[Any, ...], strict: bool, expected: UnboundPredicate
) -> None:
    _check(transform, "dt", (case, expected), strict=strict)


# --- void, unknown, transform terms -------------------------------------------------------------------------


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("transform", ["void", "zorder(id)"])
@pytest.mark.parametrize("case", [(Op.EQ, 5), (Op.IS_NULL,), (Op.NOT_IN, 1, 2)])
def test_void_and_unknown_transforms_never_project(transform: str, case: tuple[Any, ...], strict: bool) -> None:
    assert _project(transform, "i", *case, strict=strict) is None


def _term(column: str, transform: str) -> UnboundTransform:
    return UnboundTransform(Reference(column), parse_transform(transform))


@pytest.mark.parametrize("strict", [False, True])
def test_transform_terms_project_only_onto_the_same_transform(strict: bool) -> None:
    project = project_strict if strict else project_inclusive
    long_type = parse_primitive("long")
    pred = _bound(Op.EQ, _term("id", "bucket[16]"), 3)
    assert project(_field("id", "bucket[16]"), long_type, pred) == _expected(Op.EQ, "int", 3)
    assert project(_field("id", "bucket[8]"), long_type, pred) is None
    assert project(_field("id", "truncate[16]"), long_type, pred) is None
    in_pred = _bound(Op.IN, _term("id", "bucket[16]"), 3, 4)
    assert _normalized(project(_field("id", "bucket[16]"), long_type, in_pred)) == _normalized(
        _expected(Op.IN, "int", 3, 4)
    )
    # the term's literal is copied as is, even an eq that has no strict projection on the column
    day_pred = _bound(Op.EQ, _term("ts", "day"), "2017-11-16")
    assert project(_field("ts", "day"), parse_primitive("timestamp"), day_pred) == _expected(Op.EQ, "date", 17486)
    assert project(_field("ts", "hour"), parse_primitive("timestamp"), day_pred) is None
    # Identity.project never looks at the term: bucket[16](id) == 3 becomes id == 3
    assert project(_field("id", "identity"), long_type, pred) == _expected(Op.EQ, "int", 3)


# --- whole expressions --------------------------------------------------------------------------------------


def _spec(*fields: PartitionField) -> PartitionSpec:
    return PartitionSpec(1, fields)


def _named(op: Op, name: str, kind: str, *values: Any) -> UnboundPredicate:
    result = _expected(op, kind, *values, name=name)
    assert result is not None
    return result


def test_inclusive_ands_and_strict_ors_over_fields_in_spec_order() -> None:
    spec = _spec(_field("ts", "day", "ts_day", 1000), _field("ts", "hour", "ts_hour", 1001))
    assert inclusive_projection(spec, SCHEMA, predicate(Op.GT_EQ, "ts", DAY_US)) == And(
        _named(Op.GT_EQ, "ts_day", "date", 1), _named(Op.GT_EQ, "ts_hour", "int", 24)
    )
    assert strict_projection(spec, SCHEMA, predicate(Op.GT, "ts", DAY_US)) == Or(
        _named(Op.GT, "ts_day", "date", 1), _named(Op.GT, "ts_hour", "int", 24)
    )


def test_unprojectable_parts_become_true_or_false() -> None:
    spec = _spec(_field("id", "bucket[16]", "id_bucket"))
    expr = and_(predicate(Op.EQ, "id", 34), predicate(Op.EQ, "s", "x"))
    assert inclusive_projection(spec, SCHEMA, expr) == _named(Op.EQ, "id_bucket", "int", 3)
    assert strict_projection(spec, SCHEMA, expr) is FALSE
    expr = or_(predicate(Op.NOT_EQ, "id", 34), predicate(Op.EQ, "s", "x"))
    assert strict_projection(spec, SCHEMA, expr) == _named(Op.NOT_EQ, "id_bucket", "int", 3)
    assert inclusive_projection(spec, SCHEMA, expr) is TRUE
    # a field whose transform gives no projection counts as absent
    assert inclusive_projection(spec, SCHEMA, predicate(Op.LT, "id", 34)) is TRUE
    assert strict_projection(spec, SCHEMA, predicate(Op.LT, "id", 34)) is FALSE
    assert inclusive_projection(_spec(), SCHEMA, predicate(Op.EQ, "id", 34)) is TRUE
    assert strict_projection(_spec(), SCHEMA, predicate(Op.EQ, "id", 34)) is FALSE


def test_not_is_rewritten_before_projecting() -> None:
    spec = _spec(_field("i", "identity", "i"))
    expr: Expression = Not(predicate(Op.LT, "i", 5))
    assert inclusive_projection(spec, SCHEMA, expr) == _named(Op.GT_EQ, "i", "int", 5)
    expr = not_(or_(predicate(Op.LT, "i", 5), predicate(Op.IS_NULL, "i")))
    assert strict_projection(spec, SCHEMA, expr) == And(_named(Op.GT_EQ, "i", "int", 5), _named(Op.NOT_NULL, "i", ""))


def test_constants_from_binding_are_kept() -> None:
    spec = _spec(_field("req", "identity", "req"))
    assert inclusive_projection(spec, SCHEMA, predicate(Op.IS_NULL, "req")) is FALSE  # required column
    assert strict_projection(spec, SCHEMA, predicate(Op.NOT_NULL, "req")) is TRUE
    # a long literal above Integer.MAX_VALUE on an int column: aboveMax, lt folds to true
    assert strict_projection(spec, SCHEMA, predicate(Op.LT, "req", 2**40)) is TRUE
    assert inclusive_projection(spec, SCHEMA, TRUE) is TRUE


def test_case_insensitive_binding() -> None:
    spec = _spec(_field("i", "identity", "i_part"))
    assert inclusive_projection(spec, SCHEMA, predicate(Op.EQ, "I", 5), case_sensitive=False) == _named(
        Op.EQ, "i_part", "int", 5
    )
    with pytest.raises(InvalidFilterError):
        inclusive_projection(spec, SCHEMA, predicate(Op.EQ, "I", 5))


def test_projections_bind_to_the_partition_type() -> None:
    spec = _spec(
        _field("ts", "day", "ts_day", 1000),
        _field("d", "truncate[10]", "d_trunc", 1001),
        _field("id", "bucket[16]", "id_bucket", 1002),
        _field("tstz", "identity", "tstz", 1003),
    )
    partition = Schema(0, spec.partition_type(SCHEMA))
    for expr in [
        predicate(Op.EQ, "ts", -1),
        predicate(Op.LT, "d", _dec("1.5")),
        predicate(Op.IN, "id", 34, TS + 1),
        predicate(Op.EQ, "tstz", TS),
    ]:
        projected = inclusive_projection(spec, SCHEMA, expr)
        assert isinstance(projected, UnboundPredicate)
        assert isinstance(bind_predicate(partition, projected), BoundPredicate)


def test_transform_unknown_to_java_is_not_a_spec_error() -> None:
    spec = _spec(PartitionField(2, 1000, "i_z", Transform("zorder")))
    assert inclusive_projection(spec, SCHEMA, predicate(Op.EQ, "i", 5)) is TRUE

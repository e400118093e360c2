"""Expressions written as filter strings (filter_text.py): what parse_filter reads back as the same expression,
for generated unbound expressions and generated values of every type; and a table of expressions whose text
is written here by hand from the filter syntax."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner_service.expressions.binding import bind
from planner_service.expressions.expression import (
    FALSE,
    LITERAL_OPS,
    SET_OPS,
    TRUE,
    UNARY_OPS,
    BoundPredicate,
    Expression,
    Op,
    Reference,
    UnboundPredicate,
    UnboundTerm,
    UnboundTransform,
    and_,
    not_,
    or_,
    predicate,
)
from planner_service.expressions.filter_string import parse_filter
from planner_service.expressions.filter_text import filter_text, name_text, value_text
from planner_service.expressions.literals import FLOAT_MAX, Literal, to_float32
from planner_service.metadata.partitioning import MAX_TRANSFORM_WIDTH, Transform
from planner_service.metadata.types import NestedField, PrimitiveType, Schema, StructType, parse_primitive
from planner_service.nesting import ensure_recursion_headroom

ensure_recursion_headroom()  # (as parse_filter does: before hypothesis notes the limit, which it wants unchanged)
ROUND_TRIPS = settings(max_examples=300, deadline=None, derandomize=True, database=None)


# --- Unbound expressions, generated -------------------------------------------------------------------------

# names that need no quoting, words the parser treats specially, and any text at all
names = st.one_of(
    st.sampled_from(["id", "region", "a.b", "a.b.c", "Region", "_x1", "st.x"]),
    st.sampled_from(["select", "nan", "NaN", "true", "null", "and", "not", "in", "is", "like", "case", "current_date"]),
    st.sampled_from(["day", "bucket", "date", "timestamp", "x.end", "a.`b", "a b", "it's", "", ".", "a..b"]),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}(\.[A-Za-z_][A-Za-z0-9_]{0,4}){0,2}", fullmatch=True),
    st.text(max_size=8),
)
transforms = st.one_of(
    st.builds(Transform, st.sampled_from(["bucket", "truncate"]), st.integers(1, MAX_TRANSFORM_WIDTH)),
    st.builds(Transform, st.sampled_from(["year", "month", "day", "hour"])),
)
terms: st.SearchStrategy[UnboundTerm] = st.one_of(
    st.builds(Reference, names), st.builds(UnboundTransform, st.builds(Reference, names), transforms)
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(moment: datetime) -> int:
    delta = moment.replace(tzinfo=UTC) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


# every kind of literal a filter string can write, with the values it can write
literals: st.SearchStrategy[Literal] = st.one_of(
    st.builds(Literal, st.just("long"), st.integers(-(2**63), 2**63 - 1)),
    st.builds(Literal, st.just("double"), st.floats(allow_nan=False)),
    st.builds(Literal, st.just("string"), st.text()),
    st.builds(Literal, st.just("boolean"), st.booleans()),
    st.builds(Literal, st.just("date"), st.dates().map(lambda d: (d - date(1970, 1, 1)).days)),
    st.builds(Literal, st.just("time"), st.integers(0, 86_400 * 10**6 - 1)),
    st.builds(Literal, st.just("timestamp"), st.datetimes().map(_micros)),
    st.builds(Literal, st.just("timestamp_ns"), st.integers(-(2**63), 2**63 - 1)),
    st.builds(Literal, st.just("decimal"), st.decimals(allow_nan=False, allow_infinity=False)),
    st.builds(Literal, st.just("uuid"), st.uuids()),
    st.builds(Literal, st.just("binary"), st.binary(max_size=8)),
)
_COMPARED = sorted(LITERAL_OPS - {Op.STARTS_WITH, Op.NOT_STARTS_WITH}, key=lambda op: op.value)
unbound_predicates = st.one_of(
    st.builds(UnboundPredicate, st.sampled_from(sorted(UNARY_OPS, key=lambda op: op.value)), terms),
    st.builds(predicate, st.sampled_from(_COMPARED), terms, literals),
    st.builds(
        predicate,
        st.sampled_from([Op.STARTS_WITH, Op.NOT_STARTS_WITH]),
        terms,
        st.builds(Literal, st.just("string"), st.text(alphabet="ab%_!'\\ ", max_size=6) | st.text(max_size=4)),
    ),
    st.builds(
        lambda op, term, values: predicate(op, term, *values),
        st.sampled_from(sorted(SET_OPS, key=lambda op: op.value)),
        terms,
        st.lists(literals, min_size=1, max_size=4),
    ),
)
expressions: st.SearchStrategy[Expression] = st.recursive(
    st.one_of(unbound_predicates, st.sampled_from([TRUE, FALSE])),
    lambda children: st.one_of(
        st.builds(and_, children, children),
        st.builds(or_, children, children),
        st.builds(not_, children),
    ),
    max_leaves=10,
)


@ROUND_TRIPS
@given(expressions)
def test_an_expression_reads_back_as_itself(expr: Expression) -> None:
    assert parse_filter(filter_text(expr)) == expr


@ROUND_TRIPS
@given(names)
def test_a_name_reads_back_as_itself(name: str) -> None:
    assert parse_filter(f"{name_text(name)} IS NULL") == predicate(Op.IS_NULL, name)


# --- Values of every type, bound ----------------------------------------------------------------------------

_LONGS = st.integers(-(2**63), 2**63 - 1)
# internal values of each type: those typed literals spell, and those only a number can (a date past 9999)
typed_values: dict[str, st.SearchStrategy[Any]] = {
    "boolean": st.booleans(),
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": _LONGS,
    "float": st.floats(width=32, allow_nan=False, allow_infinity=False),
    "double": st.floats(allow_nan=False),
    "decimal(9, 2)": st.decimals(-(10**7) + 1, 10**7 - 1, places=2),
    "decimal(38, 0)": st.integers(-(10**38) + 1, 10**38 - 1).map(Decimal),
    "string": st.text(),
    "uuid": st.uuids(),
    "fixed[3]": st.binary(min_size=3, max_size=3),
    "binary": st.binary(max_size=8),
    "date": st.integers(-(2**31), 2**31 - 1),
    "time": st.one_of(st.integers(0, 86_400 * 10**6 - 1), _LONGS),
    "timestamp": _LONGS,
    "timestamptz": _LONGS,
    "timestamp_ns": _LONGS,
    "timestamptz_ns": _LONGS,
}


@st.composite
def typed_value(draw: st.DrawFn) -> tuple[PrimitiveType, Any]:
    name = draw(st.sampled_from(sorted(typed_values)))
    return parse_primitive(name), draw(typed_values[name])


@ROUND_TRIPS
@given(typed_value())
def test_a_value_binds_back_to_itself(typed: tuple[PrimitiveType, Any]) -> None:
    """A value written as a literal binds, to a column of its type, to the same value."""
    typ, value = typed
    schema = Schema(0, StructType((NestedField(1, "c", typ, required=False),)))
    bound = bind(schema, parse_filter(f"c = {value_text(typ, value)}"))
    assert isinstance(bound, BoundPredicate) and bound.op is Op.EQ
    assert bound.literal == value and type(bound.literal) is type(value)


def test_a_float_is_written_with_its_shortest_digits() -> None:
    assert value_text(PrimitiveType("float"), to_float32(0.1)) == "0.1"
    assert (
        value_text(PrimitiveType("float"), to_float32(FLOAT_MAX)) == "3.4028234663852886e+38"
    )  # 3.4028235e+38 overflows
    assert value_text(PrimitiveType("double"), 0.1) == "0.1"
    assert value_text(PrimitiveType("double"), 5.0) == "5.0"


# --- By hand ------------------------------------------------------------------------------------------------


def _days(d: date) -> int:
    return (d - date(1970, 1, 1)).days


def _p(op: Op, term: str | UnboundTerm, *values: Any) -> UnboundPredicate:
    return predicate(op, term, *values)


ID_LT_5 = _p(Op.LT, "id", 5)
REGION_EU = _p(Op.EQ, "region", "eu")
NAME_AB = _p(Op.STARTS_WITH, "name", "ab")

BY_HAND: list[tuple[Expression, str]] = [
    (TRUE, "true"),
    (FALSE, "false"),
    (ID_LT_5, "id < 5"),
    (_p(Op.LT_EQ, "id", -5), "id <= -5"),
    (_p(Op.GT, "id", 5), "id > 5"),
    (_p(Op.GT_EQ, "a.b", 5), "a.b >= 5"),
    (_p(Op.NOT_EQ, "id", 5), "id != 5"),
    (REGION_EU, "region = 'eu'"),
    (_p(Op.EQ, "name", "it's"), "name = 'it''s'"),
    (_p(Op.EQ, "flag", True), "flag = true"),
    (_p(Op.EQ, "price", 12.5), "price = 12.5"),
    (_p(Op.EQ, "price", 5.0), "price = 5.0"),
    (_p(Op.LT, "price", float("inf")), "price < 1e999"),
    (_p(Op.EQ, "price", Decimal("12.30")), "price = DECIMAL '12.30'"),
    (_p(Op.EQ, "price", Decimal("-0.5")), "price = DECIMAL '-0.5'"),
    (_p(Op.EQ, "d", Literal("date", _days(date(2024, 1, 2)))), "d = DATE '2024-01-02'"),
    (_p(Op.EQ, "d", Literal("date", -1)), "d = DATE '1969-12-31'"),
    (_p(Op.EQ, "t", Literal("time", (10 * 3600 + 15 * 60 + 30) * 10**6 + 500_000)), "t = TIME '10:15:30.5'"),
    (
        _p(Op.GT_EQ, "ts", Literal("timestamp", _days(date(2024, 1, 1)) * 86_400 * 10**6)),
        "ts >= TIMESTAMP '2024-01-01 00:00:00'",
    ),
    (_p(Op.LT, "ts", Literal("timestamp", -1)), "ts < TIMESTAMP '1969-12-31 23:59:59.999999'"),
    (
        _p(Op.EQ, "ts", Literal("timestamp_ns", _days(date(2024, 1, 1)) * 86_400 * 10**9 + 123_456_789)),
        "ts = TIMESTAMP_NS '2024-01-01 00:00:00.123456789'",
    ),
    (
        _p(Op.EQ, "u", uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")),
        "u = UUID 'f79c3e09-677c-4bbd-a479-3f349cb785e7'",
    ),
    (_p(Op.EQ, "b", b"\x0a\x0b"), "b = X'0A0B'"),
    (_p(Op.EQ, "b", b""), "b = X''"),
    (_p(Op.IN, "id", 1, -2, "three"), "id IN (1, -2, 'three')"),
    (_p(Op.NOT_IN, "id", 1), "id NOT IN (1)"),
    (_p(Op.IS_NULL, "x"), "x IS NULL"),
    (_p(Op.NOT_NULL, "x"), "x IS NOT NULL"),
    (_p(Op.IS_NAN, "f"), "f IS NAN"),
    (_p(Op.NOT_NAN, "f"), "f IS NOT NAN"),
    (NAME_AB, "name LIKE 'ab%'"),
    (_p(Op.NOT_STARTS_WITH, "name", "ab"), "name NOT LIKE 'ab%'"),
    (_p(Op.STARTS_WITH, "p", "100%"), "p LIKE '100!%%' ESCAPE '!'"),
    (_p(Op.STARTS_WITH, "p", "a_b!"), "p LIKE 'a!_b!!%' ESCAPE '!'"),
    (_p(Op.STARTS_WITH, "p", "a!"), "p LIKE 'a!%'"),
    (_p(Op.EQ, UnboundTransform(Reference("id"), Transform("bucket", 8)), 3), "bucket(8, id) = 3"),
    (_p(Op.EQ, UnboundTransform(Reference("name"), Transform("truncate", 4)), "ab"), "truncate(4, name) = 'ab'"),
    (
        _p(Op.GT_EQ, UnboundTransform(Reference("ts"), Transform("day")), Literal("date", _days(date(2024, 1, 2)))),
        "day(ts) >= DATE '2024-01-02'",
    ),
    (_p(Op.IS_NULL, UnboundTransform(Reference("a.ts"), Transform("hour"))), "hour(a.ts) IS NULL"),
    # names: a bare word when it reads as the column, else in backticks (backticks doubled)
    (_p(Op.EQ, "Weird Name", 1), "`Weird Name` = 1"),
    (_p(Op.EQ, "a.b c.d", 1), "a.`b c`.d = 1"),
    (_p(Op.EQ, "a`b", 1), "`a``b` = 1"),
    (_p(Op.EQ, "select", 1), "`select` = 1"),
    (_p(Op.EQ, "nan", 1), "`nan` = 1"),
    (_p(Op.EQ, "ünï", 1), "`ünï` = 1"),
    (_p(Op.EQ, "day", 1), "day = 1"),
    # connectives: parentheses only where precedence (OR < AND < NOT) or left-to-right grouping needs them
    (and_(REGION_EU, ID_LT_5), "region = 'eu' AND id < 5"),
    (and_(REGION_EU, ID_LT_5, NAME_AB), "region = 'eu' AND id < 5 AND name LIKE 'ab%'"),
    (and_(REGION_EU, and_(ID_LT_5, NAME_AB)), "region = 'eu' AND (id < 5 AND name LIKE 'ab%')"),
    (or_(REGION_EU, and_(ID_LT_5, NAME_AB)), "region = 'eu' OR id < 5 AND name LIKE 'ab%'"),
    (and_(or_(REGION_EU, ID_LT_5), NAME_AB), "(region = 'eu' OR id < 5) AND name LIKE 'ab%'"),
    (or_(REGION_EU, or_(ID_LT_5, NAME_AB)), "region = 'eu' OR (id < 5 OR name LIKE 'ab%')"),
    (not_(ID_LT_5), "NOT id < 5"),
    (not_(or_(REGION_EU, ID_LT_5)), "NOT (region = 'eu' OR id < 5)"),
    (and_(not_(REGION_EU), ID_LT_5), "NOT region = 'eu' AND id < 5"),
    # a NOT the parser would fold into the predicate stays a NOT
    (not_(_p(Op.IN, "id", 1, 2)), "NOT (id IN (1, 2))"),
    (not_(_p(Op.IS_NULL, "x")), "NOT (x IS NULL)"),
    (not_(NAME_AB), "NOT (name LIKE 'ab%')"),
]


@pytest.mark.parametrize(("expr", "text"), BY_HAND, ids=[text for _, text in BY_HAND])
def test_by_hand(expr: Expression, text: str) -> None:
    assert filter_text(expr) == text
    assert parse_filter(text) == expr


def _bound(column_type: str, text: str) -> Expression:
    schema = Schema(0, StructType((NestedField(1, "c", parse_primitive(column_type), required=False),)))
    return bind(schema, parse_filter(text))


@pytest.mark.parametrize(
    ("column_type", "text", "written"),
    [
        ("int", "c IN (3, 1, 2)", "c IN (3, 1, 2)"),
        ("int", "c IN (7)", "c = 7"),  # binding makes a one-value IN an eq
        ("long", "c IS NULL", "c IS NULL"),
        ("float", "c < 0.1", "c < 0.1"),
        ("decimal(9, 2)", "c >= 12.3", "c >= DECIMAL '12.30'"),
        ("date", "c = DATE '2024-01-02'", "c = DATE '2024-01-02'"),
        ("date", "c < 3000000", "c < 3000000"),  # past year 9999: only a number says it
        ("timestamptz", "c >= TIMESTAMP '2024-01-01 02:00:00+02:00'", "c >= TIMESTAMP '2024-01-01 00:00:00+00:00'"),
        ("timestamp", "c < TIMESTAMP '2024-01-01 00:00:00.25'", "c < TIMESTAMP '2024-01-01 00:00:00.25'"),
        ("timestamp_ns", "c = 0", "c = TIMESTAMP_NS '1970-01-01 00:00:00'"),
        ("time", "c = TIME '23:59:59.999999'", "c = TIME '23:59:59.999999'"),
        ("fixed[2]", "c = X'0a0B'", "c = X'0A0B'"),
        ("string", "c LIKE '50!%%' ESCAPE '!' AND c != 'x'", "c LIKE '50!%%' ESCAPE '!' AND c != 'x'"),
        ("uuid", "c = UUID 'F79C3E09-677C-4BBD-A479-3F349CB785E7'", "c = UUID 'f79c3e09-677c-4bbd-a479-3f349cb785e7'"),
        ("double", "c IS NAN OR c > 1e999", "c IS NAN OR c > 1e999"),
    ],
)
def test_bound_expressions_by_hand(column_type: str, text: str, written: str) -> None:
    """A bound expression is written with its values as the column's type holds them."""
    assert filter_text(_bound(column_type, text)) == written


def test_bound_transforms_by_hand() -> None:
    assert filter_text(_bound("long", "bucket(4, c) = 1")) == "bucket(4, c) = 1"
    assert filter_text(_bound("timestamptz", "day(c) >= DATE '2024-01-02'")) == "day(c) >= DATE '2024-01-02'"


def test_values_by_hand() -> None:
    assert value_text(PrimitiveType("string"), None) == "null"
    assert value_text(PrimitiveType("string"), "a'b") == "'a''b'"
    assert value_text(PrimitiveType("long"), -3) == "-3"
    assert value_text(PrimitiveType("boolean"), False) == "false"
    assert value_text(parse_primitive("decimal(5, 3)"), Decimal("1.5")) == "DECIMAL '1.500'"
    assert value_text(PrimitiveType("date"), 0) == "DATE '1970-01-01'"
    assert value_text(PrimitiveType("time"), 0) == "TIME '00:00:00'"
    assert value_text(PrimitiveType("timestamptz_ns"), 1) == "TIMESTAMP_NS '1970-01-01 00:00:00.000000001+00:00'"
    assert value_text(PrimitiveType("double"), float("nan")) == "NaN"  # a bound, never a literal
    assert value_text(PrimitiveType("double"), float("-inf")) == "-1e999"


@settings(ROUND_TRIPS, max_examples=50, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(unbound_predicates, min_size=2, max_size=30))
def test_long_chains_group_as_written(preds: list[Expression]) -> None:
    """A left-grouped chain of ANDs (as the parser makes it) is written with no parentheses of its own."""
    chain = and_(*preds)
    assert filter_text(chain) == " AND ".join(filter_text(p) for p in preds)
    assert parse_filter(filter_text(chain)) == chain

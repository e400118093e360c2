"""Filter strings parse to the unbound expressions the grammar defines, built here with the model's own
constructors; every rejected filter names its position or offending text."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from planner_service.api.error_kinds import error_kind
from planner_service.errors import BadRequestError
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
from planner_service.expressions.filter_string import FilterSyntaxError, parse_filter
from planner_service.expressions.literals import Literal
from planner_service.metadata.partitioning import Transform


def _micros(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> int:
    """Epoch microseconds of a UTC date and time, computed without the parser's helpers."""
    delta = datetime(year, month, day, hour, minute, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


_UUID = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")


def _days(d: date) -> int:
    return (d - date(1970, 1, 1)).days


def _error(text: str) -> str:
    with pytest.raises(FilterSyntaxError) as info:
        parse_filter(text)
    return info.value.message


# --- The example and the connectives ----------------------------------------------------------------------


def test_the_readme_example() -> None:
    text = (
        "region = 'eu' AND (id < 10 OR name LIKE 'ab%') AND ts >= TIMESTAMP '2024-01-01 00:00:00' "
        "AND price IS NOT NULL AND NOT flag"
    )
    expected = and_(
        predicate(Op.EQ, "region", Literal("string", "eu")),
        or_(predicate(Op.LT, "id", Literal("long", 10)), predicate(Op.STARTS_WITH, "name", Literal("string", "ab"))),
        predicate(Op.GT_EQ, "ts", Literal("timestamp", _micros(2024, 1, 1))),
        predicate(Op.NOT_NULL, "price"),
        not_(predicate(Op.EQ, "flag", Literal("boolean", True))),
    )
    assert parse_filter(text) == expected


def test_and_binds_tighter_than_or() -> None:
    a, b, c = (predicate(Op.EQ, name, Literal("long", 1)) for name in "abc")
    assert parse_filter("a = 1 OR b = 1 AND c = 1") == or_(a, and_(b, c))
    assert parse_filter("a = 1 AND b = 1 OR c = 1") == or_(and_(a, b), c)
    assert parse_filter("(a = 1 OR b = 1) AND c = 1") == and_(or_(a, b), c)
    assert parse_filter("a = 1 AND b = 1 AND c = 1") == and_(and_(a, b), c)


def test_not_binds_tighter_than_and() -> None:
    a, b = (predicate(Op.EQ, name, Literal("long", 1)) for name in "ab")
    assert parse_filter("NOT a = 1 AND b = 1") == and_(not_(a), b)
    assert parse_filter("NOT (a = 1 OR b = 1)") == not_(or_(a, b))
    assert parse_filter("NOT NOT a = 1") == a


def test_keywords_are_case_insensitive() -> None:
    expected = or_(
        and_(predicate(Op.IN, "x", Literal("long", 1)), predicate(Op.NOT_NULL, "y")),
        predicate(Op.NOT_STARTS_WITH, "z", Literal("string", "a")),
    )
    assert parse_filter("x in (1) and y is not null or z not like 'a%'") == expected
    assert parse_filter("x In (1) AnD y Is NoT nUlL Or z NOT Like 'a%'") == expected


def test_true_and_false_are_constants_and_simplify() -> None:
    x = predicate(Op.EQ, "x", Literal("long", 1))
    assert parse_filter("TRUE") is TRUE
    assert parse_filter("false") is FALSE
    assert parse_filter("x = 1 AND true") == x
    assert parse_filter("x = 1 OR TRUE") is TRUE
    assert parse_filter("NOT FALSE") is TRUE


def test_a_bare_column_is_a_boolean_test() -> None:
    flag = predicate(Op.EQ, "flag", Literal("boolean", True))
    assert parse_filter("flag") == flag
    assert parse_filter("NOT flag") == not_(flag)
    assert parse_filter("flag AND a.b") == and_(flag, predicate(Op.EQ, "a.b", Literal("boolean", True)))
    assert parse_filter("flag = false") == predicate(Op.EQ, "flag", Literal("boolean", False))


# --- Predicates -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("id = 5", Op.EQ),
        ("id == 5", Op.EQ),
        ("id != 5", Op.NOT_EQ),
        ("id <> 5", Op.NOT_EQ),
        ("id < 5", Op.LT),
        ("id <= 5", Op.LT_EQ),
        ("id > 5", Op.GT),
        ("id >= 5", Op.GT_EQ),
    ],
)
def test_comparisons(text: str, op: Op) -> None:
    assert parse_filter(text) == predicate(op, "id", Literal("long", 5))


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("5 = id", Op.EQ),
        ("5 != id", Op.NOT_EQ),
        ("5 < id", Op.GT),
        ("5 <= id", Op.GT_EQ),
        ("5 > id", Op.LT),
        ("5 >= id", Op.LT_EQ),
    ],
)
def test_a_value_on_the_left_flips_the_comparison(text: str, op: Op) -> None:
    assert parse_filter(text) == predicate(op, "id", Literal("long", 5))


def test_in_and_not_in() -> None:
    values = (Literal("long", 1), Literal("long", -2), Literal("string", "three"))
    assert parse_filter("id IN (1, -2, 'three')") == predicate(Op.IN, "id", *values)
    assert parse_filter("id NOT IN (1, -2, 'three')") == predicate(Op.NOT_IN, "id", *values)
    assert parse_filter("NOT id IN (1, -2, 'three')") == predicate(Op.NOT_IN, "id", *values)
    assert parse_filter("id IN (7)") == predicate(Op.IN, "id", Literal("long", 7))


def test_null_and_nan_tests() -> None:
    assert parse_filter("x IS NULL") == predicate(Op.IS_NULL, "x")
    assert parse_filter("x IS NOT NULL") == predicate(Op.NOT_NULL, "x")
    assert parse_filter("x IS NAN") == predicate(Op.IS_NAN, "x")
    assert parse_filter("x is not nan") == predicate(Op.NOT_NAN, "x")
    assert parse_filter("isnan(x)") == predicate(Op.IS_NAN, "x")
    assert parse_filter("NOT isnan(x)") == predicate(Op.NOT_NAN, "x")


def test_like_with_a_trailing_percent_is_starts_with() -> None:
    assert parse_filter("name LIKE 'ab%'") == predicate(Op.STARTS_WITH, "name", Literal("string", "ab"))
    assert parse_filter("name NOT LIKE 'ab%'") == predicate(Op.NOT_STARTS_WITH, "name", Literal("string", "ab"))
    assert parse_filter("NOT name LIKE 'ab%'") == predicate(Op.NOT_STARTS_WITH, "name", Literal("string", "ab"))
    assert parse_filter("name LIKE '%'") == predicate(Op.STARTS_WITH, "name", Literal("string", ""))
    assert parse_filter("name LIKE 'ü ✓%'") == predicate(Op.STARTS_WITH, "name", Literal("string", "ü ✓"))


def test_like_escape_makes_wildcards_ordinary() -> None:
    assert parse_filter("p LIKE '100!%%' ESCAPE '!'") == predicate(Op.STARTS_WITH, "p", Literal("string", "100%"))
    assert parse_filter("p LIKE 'a!_b%' ESCAPE '!'") == predicate(Op.STARTS_WITH, "p", Literal("string", "a_b"))
    assert parse_filter("p LIKE 'a!!%' ESCAPE '!'") == predicate(Op.STARTS_WITH, "p", Literal("string", "a!"))
    assert parse_filter("p NOT LIKE 'a!%%' ESCAPE '!'") == predicate(Op.NOT_STARTS_WITH, "p", Literal("string", "a%"))


@pytest.mark.parametrize("pattern", ["a_b%", "ab_", "%ab", "a%b%", "a%%", "_%"])
def test_other_like_wildcards_are_rejected(pattern: str) -> None:
    message = _error(f"name LIKE '{pattern}'")
    assert "unsupported LIKE pattern" in message and repr(pattern) in message
    assert "only a prefix followed by one trailing %" in message
    assert "line 1, column 1" in message


def test_like_without_a_wildcard_is_rejected() -> None:
    assert "use = for an exact match" in _error("name LIKE 'ab'")


def test_transform_terms() -> None:
    def term(name: str, transform: Transform) -> UnboundTransform:
        return UnboundTransform(Reference(name), transform)

    three = Literal("long", 3)
    assert parse_filter("bucket(16, id) = 3") == predicate(Op.EQ, term("id", Transform("bucket", 16)), three)
    assert parse_filter("3 < bucket(16, id)") == predicate(Op.GT, term("id", Transform("bucket", 16)), three)
    assert parse_filter("truncate(4, name) = 'ab'") == predicate(
        Op.EQ, term("name", Transform("truncate", 4)), Literal("string", "ab")
    )
    for name in ("year", "month", "day", "hour"):
        assert parse_filter(f"{name}(a.ts) >= 3") == predicate(Op.GT_EQ, term("a.ts", Transform(name)), three)
    assert parse_filter("bucket(8, id) IS NULL") == predicate(Op.IS_NULL, term("id", Transform("bucket", 8)))


# --- Column names -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "name"),
    [
        ("region", "region"),
        ("Region", "Region"),
        ("a.b", "a.b"),
        ("a.b.c", "a.b.c"),
        ("a.b.c.d.e", "a.b.c.d.e"),
        ('"Weird Name"', "Weird Name"),
        ("`weird`", "weird"),
        ('a."b c".d', "a.b c.d"),
        ('"a""b"', 'a"b'),
        ("`select`", "select"),
        ("ünïcode", "ünïcode"),
    ],
)
def test_column_names(column: str, name: str) -> None:
    assert parse_filter(f"{column} = 1") == predicate(Op.EQ, Reference(name), Literal("long", 1))


# --- Literals ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        ("42", Literal("long", 42)),
        ("-5", Literal("long", -5)),
        ("9223372036854775807", Literal("long", 9223372036854775807)),
        ("-9223372036854775808", Literal("long", -9223372036854775808)),
        ("1.5", Literal("double", 1.5)),
        ("-2.5e-3", Literal("double", -0.0025)),
        ("1e3", Literal("double", 1000.0)),
        ("'eu'", Literal("string", "eu")),
        ("'it''s'", Literal("string", "it's")),
        ("''", Literal("string", "")),
        ("'héllo ✓ 日本 🧊'", Literal("string", "héllo ✓ 日本 🧊")),
        ("true", Literal("boolean", True)),
        ("FALSE", Literal("boolean", False)),
        ("DATE '2024-01-01'", Literal("date", _days(date(2024, 1, 1)))),
        ("date '1969-12-31'", Literal("date", -1)),
        ("TIME '10:15:30'", Literal("time", (10 * 3600 + 15 * 60 + 30) * 1_000_000)),
        ("TIME '00:00:01.25'", Literal("time", 1_250_000)),
        ("TIMESTAMP '2024-01-01 00:00:00'", Literal("timestamp", _micros(2024, 1, 1))),
        ("TIMESTAMP '2024-01-01T12:30:00'", Literal("timestamp", _micros(2024, 1, 1, 12, 30))),
        ("TIMESTAMP '2024-01-01 00:00:00.000123'", Literal("timestamp", _micros(2024, 1, 1) + 123)),
        ("TIMESTAMP '2024-01-01 02:00:00+02:00'", Literal("timestamp", _micros(2024, 1, 1))),
        ("TIMESTAMP '2023-12-31T18:30:00-05:30'", Literal("timestamp", _micros(2024, 1, 1))),
        ("TIMESTAMP '2024-01-01 00:00:00Z'", Literal("timestamp", _micros(2024, 1, 1))),
        (
            "TIMESTAMP_NS '2024-01-01 00:00:00.123456789'",
            Literal("timestamp_ns", _micros(2024, 1, 1) * 1000 + 123_456_789),
        ),
        ("timestamp_ns '2024-01-01T01:00:00+01:00'", Literal("timestamp_ns", _micros(2024, 1, 1) * 1000)),
        ("DECIMAL '12.30'", Literal("decimal", Decimal("12.30"))),
        ("12.30BD", Literal("decimal", Decimal("12.30"))),
        ("-12.30BD", Literal("decimal", Decimal("-12.30"))),
        ("UUID 'f79c3e09-677c-4bbd-a479-3f349cb785e7'", Literal("uuid", _UUID)),
        ("X'0A0B'", Literal("binary", b"\x0a\x0b")),
        ("x'ff'", Literal("binary", b"\xff")),
    ],
)
def test_literals(text: str, literal: Literal) -> None:
    parsed = parse_filter(f"c = {text}")
    assert parsed == predicate(Op.EQ, "c", literal)
    assert isinstance(parsed, type(predicate(Op.EQ, "c", literal)))


def test_decimal_literals_keep_their_scale() -> None:
    for text in ("DECIMAL '12.30'", "12.30BD"):
        parsed = parse_filter(f"price = {text}")
        value = parsed.literal.value  # type: ignore[attr-defined]
        assert value.as_tuple().exponent == -2, text


def test_an_integer_is_a_long_and_a_fraction_a_double() -> None:
    assert parse_filter("x = 1").literal == Literal("long", 1)  # type: ignore[attr-defined]
    assert parse_filter("x = 1.0").literal == Literal("double", 1.0)  # type: ignore[attr-defined]


# --- Errors -----------------------------------------------------------------------------------------------


def test_the_error_is_a_bad_request() -> None:
    with pytest.raises(BadRequestError) as info:
        parse_filter("x = ")
    assert error_kind(info.value).status == 400


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("id < AND x = 1", ["line 1, column 6", "'AND'", "expected an operand for '<'"]),
        ("(x = 1", ["line 1, column 6", "expected ')'"]),
        ("x = 1)", ["line 1, column 6", "')'", "unexpected text"]),
        ("x = 1 y", ["line 1, column 7", "'y'", "unexpected text"]),
        ("x =", ["line 1, column 3", "expected an operand for '='"]),
        ("x = 1 AND", ["line 1, column 7", "'AND'", "expected an operand for AND"]),
        ("a = 1 AND\n  b = = 2", ["line 2, column 7", "'='"]),
        ("x = 'abc", ["line 1, column 5", "unterminated quote", "closing '"]),
        ('x = 1 AND\n "abc = 2', ["line 2, column 2", "unterminated quote", 'closing "']),
        ("x = X'0G'", ["line 1, column 5", "hexadecimal"]),
    ],
)
def test_syntax_errors_name_line_column_and_expectation(text: str, fragments: list[str]) -> None:
    message = _error(text)
    assert message.startswith("Invalid filter at ")
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.mark.parametrize("text", ["", "   ", "-- just a comment"])
def test_an_empty_filter_is_an_error(text: str) -> None:
    assert "empty" in _error(text)


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("x = NULL", ["'x = NULL'", "use IS NULL"]),
        ("NULL = x", ["use IS NULL"]),
        ("x != NULL", ["use IS NOT NULL"]),
        ("x <> NULL", ["use IS NOT NULL"]),
        ("x < NULL", ["use IS NULL"]),
        ("x IN (1, NULL)", ["IS NULL"]),
        ("x = NaN", ["use IS NAN"]),
        ("a = 1 AND x = y", ["line 1, column 11", "'x = y'", "one side must be a literal"]),
        ("1 = 2", ["'1 = 2'", "needs a column"]),
        ("x = 9223372036854775808", ["'9223372036854775808'", "out of range"]),
        ("ts = TIMESTAMP '2024-01-01'", ["line 1, column 16", "'2024-01-01'", "invalid TIMESTAMP value"]),
        ("d = DATE '2024-13-01'", ["invalid DATE value", "YYYY-MM-DD"]),
        ("t = TIME '25:00:00'", ["invalid TIME value"]),
        ("u = UUID 'nope'", ["invalid UUID value"]),
        ("p = DECIMAL 'abc'", ["invalid DECIMAL value"]),
        ("b = X'ABC'", ["even number of hex digits"]),
        ("x = CAST(1 AS INT)", ["unsupported typed literal INT"]),
        ("x IS TRUE", ["IS takes NULL or NAN"]),
        ("x = 'a' || 'b'", ["expected a literal value"]),
        ("x = - -5", ["minus sign"]),
        ("x ILIKE 'a%'", ["unsupported syntax", "ILIKE"]),
        ("x = 1; y = 2", ["unsupported syntax"]),
        ("lower(x) = 'a'", ["LOWER(x)", "needs a column, or a transform such as bucket(16, id), on one side"]),
        ("foo(x)", ["'foo(x)'", "is not a condition"]),
        ("bucket(0, id) = 1", ["'bucket(0, id)'", "positive integer"]),
        ("bucket(id) = 1", ["positive integer"]),
        ("year(1) = 1", ["applies to a column"]),
        ("day(ts, 2) = 1", ["takes one column"]),
        ("name LIKE 'a%' ESCAPE 'ab'", ["single quoted character"]),
        ("name LIKE x", ["quoted pattern"]),
        ("x IN (SELECT 1)", ["list of literal values"]),
    ],
)
def test_semantic_errors_name_the_offending_text(text: str, fragments: list[str]) -> None:
    message = _error(text)
    assert message.startswith("Invalid filter")
    for fragment in fragments:
        assert fragment in message, (fragment, message)


QUOTES = "double quotes and backticks name columns"
BOTH = "both sides are columns"


@pytest.mark.parametrize(
    ("text", "value", "problem"),
    [
        ('region = "eu"', "eu", BOTH),
        ('"eu" = region', "eu", BOTH),
        ('"region" = "eu"', "eu", BOTH),
        ("region = `eu`", "eu", BOTH),
        ('name = "it\'s"', "it's", BOTH),
        ("region IN ('us', \"eu\")", "eu", "expected a literal value"),
    ],
)
def test_a_value_in_double_quotes_is_told_to_take_single_ones(text: str, value: str, problem: str) -> None:
    """SQL's double quotes name a column: `region = "eu"` compares two columns. The hint writes the value as
    the string it reads as."""
    written = "'" + value.replace("'", "''") + "'"
    assert _error(text).endswith(f": {problem}: string values take single quotes ({written}), {QUOTES}")
    assert parse_filter(f"region = {written}") == predicate(Op.EQ, Reference("region"), Literal("string", value))


def test_parse_filter_returns_unbound_expressions() -> None:
    parsed: Expression = parse_filter("a = 1 AND bucket(4, b) IN (1, 2)")
    assert parsed == and_(
        predicate(Op.EQ, Reference("a"), Literal("long", 1)),
        predicate(
            Op.IN, UnboundTransform(Reference("b"), Transform("bucket", 4)), Literal("long", 1), Literal("long", 2)
        ),
    )

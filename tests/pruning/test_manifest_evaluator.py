"""ManifestEvaluator, rule by rule: which manifests the partition summaries of a manifest list let planning
skip (reference §2.1). The cases are Iceberg Java 1.10.1's TestInclusiveManifestEvaluator, each test
named after the Java test it ports; a few more pin rules of §2.1 and of Java's ManifestEvaluator that
the Java test does not reach (the IN list limit). Only the public facade is used."""

from __future__ import annotations

import pytest

from planner_service.api.error_kinds import error_kind
from planner_service.errors import BadRequestError
from planner_service.expressions.expression import Expression, Op, and_, not_, or_, predicate
from planner_service.metadata.manifest_list import ManifestFile
from planner_service.metadata.types import Schema
from planner_service.pruning.manifest_evaluator import ManifestEvaluator
from tests.pruning.factories import (
    float_bytes,
    identity_spec,
    int_bytes,
    manifest,
    optional,
    required,
    schema,
    str_bytes,
    summary,
)

SCHEMA = schema(
    required(1, "id", "int"),
    optional(4, "all_nulls_missing_nan", "string"),
    optional(5, "some_nulls", "string"),
    optional(6, "no_nulls", "string"),
    optional(7, "float", "float"),
    optional(8, "all_nulls_double", "double"),
    optional(9, "all_nulls_no_nans", "float"),
    optional(10, "all_nans", "double"),
    optional(11, "both_nan_and_null", "float"),
    optional(12, "no_nan_or_null", "double"),
    optional(13, "all_nulls_missing_nan_float", "float"),
    optional(14, "all_same_value_or_null", "string"),
    optional(15, "no_nulls_same_value_a", "string"),
)
SPEC = identity_spec(SCHEMA, *(f.name for f in SCHEMA.fields))

INT_MIN_VALUE, INT_MAX_VALUE = 30, 79
STRING_MIN, STRING_MAX = str_bytes("a"), str_bytes("z")

NO_STATS = manifest(None, added_files=None, existing_files=None, deleted_files=None)
FILE = manifest(
    (
        summary(False, int_bytes(INT_MIN_VALUE), int_bytes(INT_MAX_VALUE)),  # id
        summary(True, None, None),  # all_nulls_missing_nan
        summary(True, STRING_MIN, STRING_MAX),  # some_nulls
        summary(False, STRING_MIN, STRING_MAX),  # no_nulls
        summary(False, float_bytes(0.0), float_bytes(20.0)),  # float
        summary(True, None, None),  # all_nulls_double
        summary(True, None, None, contains_nan=False),  # all_nulls_no_nans
        summary(False, None, None, contains_nan=True),  # all_nans
        summary(True, None, None, contains_nan=True),  # both_nan_and_null
        # no_nan_or_null: a double column with 4-byte float bounds, as Java's test writes them
        summary(False, float_bytes(0.0), float_bytes(20.0), contains_nan=False),
        summary(True, None, None),  # all_nulls_missing_nan_float
        summary(True, STRING_MIN, STRING_MIN),  # all_same_value_or_null
        summary(False, STRING_MIN, STRING_MIN),  # no_nulls_same_value_a
    )
)


def should_read(expr: Expression, case_sensitive: bool = True, file: ManifestFile = FILE) -> bool:
    return ManifestEvaluator.for_row_filter(expr, SPEC, SCHEMA, case_sensitive).eval(file)


def p(op: Op, column: str, *values: object) -> Expression:
    return predicate(op, column, *values)


def cases(*pairs: tuple[Expression, bool]) -> list[object]:
    return [pytest.param(expr, expected, id=f"{expr}->{expected}") for expr, expected in pairs]


# Java: testAllNulls
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.NOT_NULL, "all_nulls_missing_nan"), False),  # all null, not a floating-point type
        (p(Op.NOT_NULL, "all_nulls_missing_nan_float"), True),  # no NaN information: may hold NaN
        (p(Op.NOT_NULL, "some_nulls"), True),
        (p(Op.NOT_NULL, "no_nulls"), True),
        (p(Op.STARTS_WITH, "all_nulls_missing_nan", "asad"), False),
        (p(Op.NOT_STARTS_WITH, "all_nulls_missing_nan", "asad"), True),
    ),
)
def test_all_nulls(expr: Expression, expected: bool) -> None:
    assert should_read(expr) is expected


# Java: testNoNulls
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.IS_NULL, "all_nulls_missing_nan"), True),
        (p(Op.IS_NULL, "some_nulls"), True),
        (p(Op.IS_NULL, "no_nulls"), False),
        (p(Op.IS_NULL, "both_nan_and_null"), True),
    ),
)
def test_no_nulls(expr: Expression, expected: bool) -> None:
    assert should_read(expr) is expected


# Java: testIsNaN
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.IS_NAN, "float"), True),  # contains_nan unknown
        (p(Op.IS_NAN, "all_nulls_double"), True),  # contains_nan unknown
        (p(Op.IS_NAN, "all_nulls_missing_nan_float"), True),
        (p(Op.IS_NAN, "all_nulls_no_nans"), False),  # contains_nan false
        (p(Op.IS_NAN, "all_nans"), True),
        (p(Op.IS_NAN, "both_nan_and_null"), True),
        (p(Op.IS_NAN, "no_nan_or_null"), False),
    ),
)
def test_is_nan(expr: Expression, expected: bool) -> None:
    assert should_read(expr) is expected


# Java: testNotNaN
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.NOT_NAN, "float"), True),
        (p(Op.NOT_NAN, "all_nulls_double"), True),
        (p(Op.NOT_NAN, "all_nulls_no_nans"), True),
        (p(Op.NOT_NAN, "all_nans"), False),  # contains_nan, no null, no lower bound: every value is NaN
        (p(Op.NOT_NAN, "both_nan_and_null"), True),
        (p(Op.NOT_NAN, "no_nan_or_null"), True),
    ),
)
def test_not_nan(expr: Expression, expected: bool) -> None:
    assert should_read(expr) is expected


# Java: testMissingColumn
def test_missing_column() -> None:
    with pytest.raises(BadRequestError, match="Cannot find field 'missing'") as raised:
        should_read(p(Op.LT, "missing", 5))
    assert error_kind(raised.value).type == "ValidationException"


# Java: testMissingStats (a manifest without partition summaries is always read)
@pytest.mark.parametrize(
    "expr",
    [
        p(Op.LT, "id", 5),
        p(Op.LT_EQ, "id", 30),
        p(Op.EQ, "id", 70),
        p(Op.GT, "id", 78),
        p(Op.GT_EQ, "id", 90),
        p(Op.NOT_EQ, "id", 101),
        p(Op.IS_NULL, "id"),
        p(Op.NOT_NULL, "id"),
        p(Op.STARTS_WITH, "all_nulls_missing_nan", "a"),
        p(Op.IS_NAN, "float"),
        p(Op.NOT_NAN, "float"),
        p(Op.NOT_STARTS_WITH, "all_nulls_missing_nan", "a"),
    ],
    ids=str,
)
def test_missing_stats(expr: Expression) -> None:
    assert should_read(expr, file=NO_STATS) is True


# Java: testNot, testAnd, testOr
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (not_(p(Op.LT, "id", INT_MIN_VALUE - 25)), True),  # not(false)
        (not_(p(Op.GT, "id", INT_MIN_VALUE - 25)), False),  # not(true)
        (and_(p(Op.LT, "id", INT_MIN_VALUE - 25), p(Op.GT_EQ, "id", INT_MIN_VALUE - 30)), False),
        (and_(p(Op.LT, "id", INT_MIN_VALUE - 25), p(Op.GT_EQ, "id", INT_MAX_VALUE + 1)), False),
        (and_(p(Op.GT, "id", INT_MIN_VALUE - 25), p(Op.LT_EQ, "id", INT_MIN_VALUE)), True),
        (or_(p(Op.LT, "id", INT_MIN_VALUE - 25), p(Op.GT_EQ, "id", INT_MAX_VALUE + 1)), False),
        (or_(p(Op.LT, "id", INT_MIN_VALUE - 25), p(Op.GT_EQ, "id", INT_MAX_VALUE - 19)), True),
    ),
)
def test_not_and_or(expr: Expression, expected: bool) -> None:
    assert should_read(expr) is expected


# Java: testIntegerLt, testIntegerLtEq, testIntegerGt, testIntegerGtEq (bounds 30..79)
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.LT, "id", INT_MIN_VALUE - 25), False),
        (p(Op.LT, "id", INT_MIN_VALUE), False),  # 30 is not < 30
        (p(Op.LT, "id", INT_MIN_VALUE + 1), True),
        (p(Op.LT, "id", INT_MAX_VALUE), True),
        (p(Op.LT_EQ, "id", INT_MIN_VALUE - 25), False),
        (p(Op.LT_EQ, "id", INT_MIN_VALUE - 1), False),
        (p(Op.LT_EQ, "id", INT_MIN_VALUE), True),
        (p(Op.LT_EQ, "id", INT_MAX_VALUE), True),
        (p(Op.GT, "id", INT_MAX_VALUE + 6), False),
        (p(Op.GT, "id", INT_MAX_VALUE), False),  # 79 is not > 79
        (p(Op.GT, "id", INT_MAX_VALUE - 1), True),
        (p(Op.GT, "id", INT_MAX_VALUE - 4), True),
        (p(Op.GT_EQ, "id", INT_MAX_VALUE + 6), False),
        (p(Op.GT_EQ, "id", INT_MAX_VALUE + 1), False),
        (p(Op.GT_EQ, "id", INT_MAX_VALUE), True),
        (p(Op.GT_EQ, "id", INT_MAX_VALUE - 4), True),
    ),
)
def test_integer_comparisons(expr: Expression, expected: bool) -> None:
    assert should_read(expr) is expected


# Java: testIntegerEq
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.EQ, "id", INT_MIN_VALUE - 25), False),
        (p(Op.EQ, "id", INT_MIN_VALUE - 1), False),
        (p(Op.EQ, "id", INT_MIN_VALUE), True),
        (p(Op.EQ, "id", INT_MAX_VALUE - 4), True),
        (p(Op.EQ, "id", INT_MAX_VALUE), True),
        (p(Op.EQ, "id", INT_MAX_VALUE + 1), False),
        (p(Op.EQ, "id", INT_MAX_VALUE + 6), False),
    ),
)
def test_integer_eq(expr: Expression, expected: bool) -> None:
    assert should_read(expr) is expected


NOT_EQ_VALUES = [
    INT_MIN_VALUE - 25,
    INT_MIN_VALUE - 1,
    INT_MIN_VALUE,
    INT_MAX_VALUE - 4,
    INT_MAX_VALUE,
    INT_MAX_VALUE + 1,
    INT_MAX_VALUE + 6,
]


# Java: testIntegerNotEq, testIntegerNotEqRewritten (notEq never prunes: bounds are not values)
@pytest.mark.parametrize("value", NOT_EQ_VALUES)
def test_integer_not_eq(value: int) -> None:
    assert should_read(p(Op.NOT_EQ, "id", value)) is True
    assert should_read(not_(p(Op.EQ, "id", value))) is True


# Java: testCaseInsensitiveIntegerNotEqRewritten
@pytest.mark.parametrize("value", NOT_EQ_VALUES)
def test_case_insensitive_integer_not_eq_rewritten(value: int) -> None:
    assert should_read(not_(p(Op.EQ, "ID", value)), case_sensitive=False) is True


# Java: testCaseSensitiveIntegerNotEqRewritten
def test_case_sensitive_integer_not_eq_rewritten() -> None:
    with pytest.raises(BadRequestError, match="Cannot find field 'ID'"):
        should_read(not_(p(Op.EQ, "ID", 5)), case_sensitive=True)


def test_case_insensitive_binding_prunes_as_case_sensitive_does() -> None:
    """§3.0: case only changes name resolution; "ID" < 5 then prunes as id < 5 (testIntegerLt)."""
    assert should_read(p(Op.LT, "ID", INT_MIN_VALUE - 25), case_sensitive=False) is False
    assert should_read(p(Op.GT_EQ, "Id", INT_MAX_VALUE), case_sensitive=False) is True


# Java: testStringStartsWith (case-insensitive evaluators, as in Java)
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.STARTS_WITH, "some_nulls", "a"), True),
        (p(Op.STARTS_WITH, "some_nulls", "aa"), True),
        (p(Op.STARTS_WITH, "some_nulls", "dddd"), True),
        (p(Op.STARTS_WITH, "some_nulls", "z"), True),
        (p(Op.STARTS_WITH, "no_nulls", "a"), True),
        (p(Op.STARTS_WITH, "some_nulls", "zzzz"), False),
        (p(Op.STARTS_WITH, "some_nulls", "1"), False),
    ),
)
def test_string_starts_with(expr: Expression, expected: bool) -> None:
    assert should_read(expr, case_sensitive=False) is expected


# Java: testStringNotStartsWith
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.NOT_STARTS_WITH, "some_nulls", "a"), True),
        (p(Op.NOT_STARTS_WITH, "some_nulls", "aa"), True),
        (p(Op.NOT_STARTS_WITH, "some_nulls", "dddd"), True),
        (p(Op.NOT_STARTS_WITH, "some_nulls", "z"), True),
        (p(Op.NOT_STARTS_WITH, "no_nulls", "a"), True),
        (p(Op.NOT_STARTS_WITH, "some_nulls", "zzzz"), True),
        (p(Op.NOT_STARTS_WITH, "some_nulls", "1"), True),
        (p(Op.NOT_STARTS_WITH, "all_same_value_or_null", "a"), True),  # the nulls match
        (p(Op.NOT_STARTS_WITH, "all_same_value_or_null", "aa"), True),
        (p(Op.NOT_STARTS_WITH, "all_same_value_or_null", "A"), True),
        (p(Op.NOT_STARTS_WITH, "all_nulls_missing_nan", "A"), True),
        (p(Op.NOT_STARTS_WITH, "no_nulls_same_value_a", "a"), False),  # every value starts with "a"
    ),
)
def test_string_not_starts_with(expr: Expression, expected: bool) -> None:
    assert should_read(expr, case_sensitive=False) is expected


# Java: testIntegerIn
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.IN, "id", INT_MIN_VALUE - 25, INT_MIN_VALUE - 24), False),
        (p(Op.IN, "id", INT_MIN_VALUE - 2, INT_MIN_VALUE - 1), False),
        (p(Op.IN, "id", INT_MIN_VALUE - 1, INT_MIN_VALUE), True),
        (p(Op.IN, "id", INT_MAX_VALUE - 4, INT_MAX_VALUE - 3), True),
        (p(Op.IN, "id", INT_MAX_VALUE, INT_MAX_VALUE + 1), True),
        (p(Op.IN, "id", INT_MAX_VALUE + 1, INT_MAX_VALUE + 2), False),
        (p(Op.IN, "id", INT_MAX_VALUE + 6, INT_MAX_VALUE + 7), False),
        (p(Op.IN, "all_nulls_missing_nan", "abc", "def"), False),
        (p(Op.IN, "some_nulls", "abc", "def"), True),
        (p(Op.IN, "no_nulls", "abc", "def"), True),
    ),
)
def test_integer_in(expr: Expression, expected: bool) -> None:
    assert should_read(expr) is expected


# Java: testIntegerNotIn (notIn never prunes)
@pytest.mark.parametrize(
    "expr",
    [
        p(Op.NOT_IN, "id", INT_MIN_VALUE - 25, INT_MIN_VALUE - 24),
        p(Op.NOT_IN, "id", INT_MIN_VALUE - 2, INT_MIN_VALUE - 1),
        p(Op.NOT_IN, "id", INT_MIN_VALUE - 1, INT_MIN_VALUE),
        p(Op.NOT_IN, "id", INT_MAX_VALUE - 4, INT_MAX_VALUE - 3),
        p(Op.NOT_IN, "id", INT_MAX_VALUE, INT_MAX_VALUE + 1),
        p(Op.NOT_IN, "id", INT_MAX_VALUE + 1, INT_MAX_VALUE + 2),
        p(Op.NOT_IN, "id", INT_MAX_VALUE + 6, INT_MAX_VALUE + 7),
        p(Op.NOT_IN, "all_nulls_missing_nan", "abc", "def"),
        p(Op.NOT_IN, "some_nulls", "abc", "def"),
        p(Op.NOT_IN, "no_nulls", "abc", "def"),
    ],
    ids=str,
)
def test_integer_not_in(expr: Expression) -> None:
    assert should_read(expr) is True


# -- rules of §2.1 / Java ManifestEvaluator.in that TestInclusiveManifestEvaluator does not reach ----------


def test_in_lists_up_to_200_values_are_checked_against_the_bounds() -> None:
    """ManifestEvaluator.in: IN_PREDICATE_LIMIT = 200; a list of at most 200 values is compared with the
    bounds (all below 30 here: skip), a longer one might match whatever the bounds."""
    below = list(range(INT_MIN_VALUE - 200, INT_MIN_VALUE))
    assert len(below) == 200
    assert should_read(p(Op.IN, "id", *below)) is False
    assert should_read(p(Op.IN, "id", INT_MIN_VALUE - 201, *below)) is True


def test_the_in_limit_does_not_apply_to_all_null_columns() -> None:
    """ManifestEvaluator.in checks for a missing lower bound (all values null) before the limit."""
    many = [f"v{i:03d}" for i in range(201)]
    assert should_read(p(Op.IN, "all_nulls_missing_nan", *many)) is False
    assert should_read(p(Op.IN, "some_nulls", *many)) is True


def test_partition_filter_constructor_binds_to_the_partition_struct() -> None:
    """ManifestEvaluator.forPartitionFilter: the filter names partition fields, bound to the partition type
    (identity fields share their source column's type and name here)."""
    partition_schema = Schema(0, SPEC.partition_type(SCHEMA))
    evaluator = ManifestEvaluator(partition_schema, p(Op.LT, "id", INT_MIN_VALUE), True)
    assert evaluator.eval(FILE) is False  # testIntegerLt: 30 is not < 30
    assert ManifestEvaluator(partition_schema, p(Op.LT_EQ, "id", INT_MIN_VALUE), True).eval(FILE) is True
    assert evaluator.eval(NO_STATS) is True  # the evaluator is reusable: no state kept per manifest

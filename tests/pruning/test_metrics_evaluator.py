"""InclusiveMetricsEvaluator, rule by rule: which data files their column metrics let planning skip
(reference §3.1). The cases are Iceberg Java 1.10.1's TestInclusiveMetricsEvaluator,
TestInclusiveMetricsEvaluatorWithTransforms and the inclusive half of TestMetricsEvaluatorsNaNHandling,
each test named after the Java test it ports. Java evaluates one file at a time; ours evaluates a
manifest's files at once, so a few more tests mix files whose answers differ in one evaluation."""

from __future__ import annotations

import pytest

from planner_service.api.error_kinds import error_kind
from planner_service.errors import BadRequestError
from planner_service.expressions.expression import (
    Expression,
    Op,
    Reference,
    UnboundTransform,
    and_,
    not_,
    or_,
    predicate,
)
from planner_service.metadata.partitioning import Transform
from planner_service.metadata.types import Schema
from planner_service.pruning.metrics_evaluator import InclusiveMetricsEvaluator
from tests.pruning.factories import (
    FileStats,
    data_file,
    double_bytes,
    float_bytes,
    int_bytes,
    long_bytes,
    optional,
    required,
    schema,
    stats_columns,
    str_bytes,
    struct_of,
)


def might_match(table_schema: Schema, expr: Expression, *files: FileStats, case_sensitive: bool = True) -> list[bool]:
    result = InclusiveMetricsEvaluator(table_schema, expr, case_sensitive).eval(stats_columns(*files))
    assert len(result) == len(files)
    return [bool(r) for r in result]


def cases(*pairs: tuple[Expression, bool]) -> list[object]:
    return [pytest.param(expr, expected, id=f"{expr}->{expected}") for expr, expected in pairs]


p = predicate

# -- TestInclusiveMetricsEvaluator ------------------------------------------------------------------------

SCHEMA = schema(
    required(1, "id", "int"),
    optional(2, "no_stats", "int"),
    required(3, "required", "string"),
    optional(4, "all_nulls", "string"),
    optional(5, "some_nulls", "string"),
    optional(6, "no_nulls", "string"),
    optional(7, "all_nans", "double"),
    optional(8, "some_nans", "float"),
    optional(9, "no_nans", "float"),
    optional(10, "all_nulls_double", "double"),
    optional(11, "all_nans_v1_stats", "float"),
    optional(12, "nan_and_null_only", "double"),
    optional(13, "no_nan_stats", "double"),
    optional(14, "some_empty", "string"),
)
NESTED_SCHEMA = schema(
    required(
        100,
        "required_address",
        struct_of(required(102, "required_street1", "string"), optional(103, "optional_street1", "string")),
    ),
    optional(
        101,
        "optional_address",
        struct_of(required(104, "required_street2", "string"), optional(105, "optional_street2", "string")),
    ),
)
INT_MIN_VALUE, INT_MAX_VALUE = 30, 79
NAN = float("nan")

FILE = data_file(
    50,
    {4: 50, 5: 50, 6: 50, 7: 50, 8: 50, 9: 50, 10: 50, 11: 50, 12: 50, 13: 50, 14: 50},  # including nulls
    {4: 50, 5: 10, 6: 0, 10: 50, 11: 0, 12: 1, 14: 0},
    {7: 50, 8: 10, 9: 0},
    {1: int_bytes(INT_MIN_VALUE), 11: float_bytes(NAN), 12: double_bytes(NAN), 14: str_bytes("")},
    {
        1: int_bytes(INT_MAX_VALUE),
        11: float_bytes(NAN),
        12: double_bytes(NAN),
        14: str_bytes("房东整租霍营小区二层两居室"),
    },
)


def _strings(lower: str, upper: str) -> FileStats:
    return data_file(50, {3: 50}, {3: 0}, None, {3: str_bytes(lower)}, {3: str_bytes(upper)})


FILE_2 = _strings("aa", "dC")
FILE_3 = _strings("1str1", "3str3")
FILE_4 = _strings("abc", "イロハニホヘト")
FILE_5 = _strings("abc", "abcdefghi")
FILE_6 = data_file(
    10, {100: 5, 101: 5, 102: 5, 103: 5, 104: 5, 105: 5}, {100: 0, 101: 5, 103: 5, 104: 5, 105: 5}, None, None, None
)
MISSING_STATS = data_file(50)  # new TestDataFile("file.parquet", Row.of(), 50)
EMPTY = data_file(0)  # new TestDataFile("file.parquet", Row.of(), 0)


def should_read(expr: Expression, file: FileStats = FILE, case_sensitive: bool = True) -> bool:
    return might_match(SCHEMA, expr, file, case_sensitive=case_sensitive)[0]


# Java: testAllNulls
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.NOT_NULL, "all_nulls"), False),
        (p(Op.LT, "all_nulls", "a"), False),
        (p(Op.LT_EQ, "all_nulls", "a"), False),
        (p(Op.GT, "all_nulls", "a"), False),
        (p(Op.GT_EQ, "all_nulls", "a"), False),
        (p(Op.EQ, "all_nulls", "a"), False),
        (p(Op.STARTS_WITH, "all_nulls", "a"), False),
        (p(Op.NOT_STARTS_WITH, "all_nulls", "a"), True),
        (p(Op.NOT_NULL, "some_nulls"), True),
        (p(Op.NOT_NULL, "no_nulls"), True),
    ),
)
def test_all_nulls(expr: Expression, expected: bool) -> None:
    assert should_read(expr) is expected


# Java: testNoNulls
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.IS_NULL, "all_nulls"), True),
        (p(Op.IS_NULL, "some_nulls"), True),
        (p(Op.IS_NULL, "no_nulls"), False),
    ),
)
def test_no_nulls(expr: Expression, expected: bool) -> None:
    assert should_read(expr) is expected


# Java: testIsNaN
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.IS_NAN, "all_nans"), True),
        (p(Op.IS_NAN, "some_nans"), True),
        (p(Op.IS_NAN, "no_nans"), False),  # nan count 0
        (p(Op.IS_NAN, "all_nulls_double"), False),  # nulls only
        (p(Op.IS_NAN, "no_nan_stats"), True),
        (p(Op.IS_NAN, "all_nans_v1_stats"), True),
        (p(Op.IS_NAN, "nan_and_null_only"), True),
    ),
)
def test_is_nan(expr: Expression, expected: bool) -> None:
    assert should_read(expr) is expected


# Java: testNotNaN
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.NOT_NAN, "all_nans"), False),  # NaNs only
        (p(Op.NOT_NAN, "some_nans"), True),
        (p(Op.NOT_NAN, "no_nans"), True),
        (p(Op.NOT_NAN, "all_nulls_double"), True),
        (p(Op.NOT_NAN, "no_nan_stats"), True),
        (p(Op.NOT_NAN, "all_nans_v1_stats"), True),
        (p(Op.NOT_NAN, "nan_and_null_only"), True),
    ),
)
def test_not_nan(expr: Expression, expected: bool) -> None:
    assert should_read(expr) is expected


# Java: testRequiredColumn (binding folds null tests on a required column)
def test_required_column() -> None:
    assert should_read(p(Op.NOT_NULL, "required")) is True
    assert should_read(p(Op.IS_NULL, "required")) is False


# Java: testMissingColumn
def test_missing_column() -> None:
    with pytest.raises(BadRequestError, match="Cannot find field 'missing'") as raised:
        should_read(p(Op.LT, "missing", 5))
    assert error_kind(raised.value).type == "ValidationException"


# Java: testMissingStats
@pytest.mark.parametrize(
    "expr",
    [
        p(Op.LT, "no_stats", 5),
        p(Op.LT_EQ, "no_stats", 30),
        p(Op.EQ, "no_stats", 70),
        p(Op.GT, "no_stats", 78),
        p(Op.GT_EQ, "no_stats", 90),
        p(Op.NOT_EQ, "no_stats", 101),
        p(Op.IS_NULL, "no_stats"),
        p(Op.NOT_NULL, "no_stats"),
        p(Op.IS_NAN, "some_nans"),
        p(Op.NOT_NAN, "some_nans"),
    ],
    ids=str,
)
def test_missing_stats(expr: Expression) -> None:
    assert should_read(expr, MISSING_STATS) is True


# Java: testZeroRecordFile
@pytest.mark.parametrize(
    "expr",
    [
        p(Op.LT, "id", 5),
        p(Op.LT_EQ, "id", 30),
        p(Op.EQ, "id", 70),
        p(Op.GT, "id", 78),
        p(Op.GT_EQ, "id", 90),
        p(Op.NOT_EQ, "id", 101),
        p(Op.IS_NULL, "some_nulls"),
        p(Op.NOT_NULL, "some_nulls"),
        p(Op.IS_NAN, "some_nans"),
        p(Op.NOT_NAN, "some_nans"),
    ],
    ids=str,
)
def test_zero_record_file(expr: Expression) -> None:
    assert should_read(expr, EMPTY) is False


# Java: testNot, testAnd, testOr
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (not_(p(Op.LT, "id", INT_MIN_VALUE - 25)), True),
        (not_(p(Op.GT, "id", INT_MIN_VALUE - 25)), False),
        (and_(p(Op.LT, "id", INT_MIN_VALUE - 25), p(Op.GT_EQ, "id", INT_MIN_VALUE - 30)), False),
        (and_(p(Op.LT, "id", INT_MIN_VALUE - 25), p(Op.GT_EQ, "id", INT_MAX_VALUE + 1)), False),
        (and_(p(Op.GT, "id", INT_MIN_VALUE - 25), p(Op.LT_EQ, "id", INT_MIN_VALUE)), True),
        (or_(p(Op.LT, "id", INT_MIN_VALUE - 25), p(Op.GT_EQ, "id", INT_MAX_VALUE + 1)), False),
        (or_(p(Op.LT, "id", INT_MIN_VALUE - 25), p(Op.GT_EQ, "id", INT_MAX_VALUE - 19)), True),
    ),
)
def test_not_and_or(expr: Expression, expected: bool) -> None:
    assert should_read(expr) is expected


# Java: testIntegerLt, testIntegerLtEq, testIntegerGt, testIntegerGtEq, testIntegerEq (bounds 30..79)
INTEGER_CASES = [
    (Op.LT, INT_MIN_VALUE - 25, False),
    (Op.LT, INT_MIN_VALUE, False),
    (Op.LT, INT_MIN_VALUE + 1, True),
    (Op.LT, INT_MAX_VALUE, True),
    (Op.LT_EQ, INT_MIN_VALUE - 25, False),
    (Op.LT_EQ, INT_MIN_VALUE - 1, False),
    (Op.LT_EQ, INT_MIN_VALUE, True),
    (Op.LT_EQ, INT_MAX_VALUE, True),
    (Op.GT, INT_MAX_VALUE + 6, False),
    (Op.GT, INT_MAX_VALUE, False),
    (Op.GT, INT_MAX_VALUE - 1, True),
    (Op.GT, INT_MAX_VALUE - 4, True),
    (Op.GT_EQ, INT_MAX_VALUE + 6, False),
    (Op.GT_EQ, INT_MAX_VALUE + 1, False),
    (Op.GT_EQ, INT_MAX_VALUE, True),
    (Op.GT_EQ, INT_MAX_VALUE - 4, True),
    (Op.EQ, INT_MIN_VALUE - 25, False),
    (Op.EQ, INT_MIN_VALUE - 1, False),
    (Op.EQ, INT_MIN_VALUE, True),
    (Op.EQ, INT_MAX_VALUE - 4, True),
    (Op.EQ, INT_MAX_VALUE, True),
    (Op.EQ, INT_MAX_VALUE + 1, False),
    (Op.EQ, INT_MAX_VALUE + 6, False),
]
NOT_EQ_VALUES = [
    INT_MIN_VALUE - 25,
    INT_MIN_VALUE - 1,
    INT_MIN_VALUE,
    INT_MAX_VALUE - 4,
    INT_MAX_VALUE,
    INT_MAX_VALUE + 1,
    INT_MAX_VALUE + 6,
]


@pytest.mark.parametrize(("op", "value", "expected"), INTEGER_CASES)
def test_integer_comparisons(op: Op, value: int, expected: bool) -> None:
    assert should_read(p(op, "id", value)) is expected


# Java: testIntegerNotEq, testIntegerNotEqRewritten, testCaseInsensitiveIntegerNotEqRewritten
@pytest.mark.parametrize("value", NOT_EQ_VALUES)
def test_integer_not_eq(value: int) -> None:
    assert should_read(p(Op.NOT_EQ, "id", value)) is True
    assert should_read(not_(p(Op.EQ, "id", value))) is True
    assert should_read(not_(p(Op.EQ, "ID", value)), case_sensitive=False) is True


# Java: testCaseSensitiveIntegerNotEqRewritten
def test_case_sensitive_integer_not_eq_rewritten() -> None:
    with pytest.raises(BadRequestError, match="Cannot find field 'ID'"):
        should_read(not_(p(Op.EQ, "ID", 5)), case_sensitive=True)


# Java: testStringStartsWith ("イロハヌ" is UnicodeUtil.truncateStringMax(Literal.of("イロハニホヘト"), 4))
@pytest.mark.parametrize(
    ("expr", "file", "expected"),
    [
        pytest.param(p(Op.STARTS_WITH, "required", "a"), FILE, True, id="no stats"),
        pytest.param(p(Op.STARTS_WITH, "required", "a"), FILE_2, True, id="a in aa..dC"),
        pytest.param(p(Op.STARTS_WITH, "required", "aa"), FILE_2, True, id="aa in aa..dC"),
        pytest.param(p(Op.STARTS_WITH, "required", "aaa"), FILE_2, True, id="aaa in aa..dC"),
        pytest.param(p(Op.STARTS_WITH, "required", "1s"), FILE_3, True, id="1s in 1str1..3str3"),
        pytest.param(p(Op.STARTS_WITH, "required", "1str1x"), FILE_3, True, id="1str1x in 1str1..3str3"),
        pytest.param(p(Op.STARTS_WITH, "required", "ff"), FILE_4, True, id="ff in abc..イロハニホヘト"),
        pytest.param(p(Op.STARTS_WITH, "required", "aB"), FILE_2, False, id="aB not in aa..dC"),
        pytest.param(p(Op.STARTS_WITH, "required", "dWX"), FILE_2, False, id="dWX not in aa..dC"),
        pytest.param(p(Op.STARTS_WITH, "required", "5"), FILE_3, False, id="5 not in 1str1..3str3"),
        pytest.param(p(Op.STARTS_WITH, "required", "3str3x"), FILE_3, False, id="3str3x not in 1str1..3str3"),
        pytest.param(p(Op.STARTS_WITH, "some_empty", "房东整租霍"), FILE, True, id="non-ascii prefix of the upper"),
        pytest.param(p(Op.STARTS_WITH, "all_nulls", ""), FILE, False, id="empty prefix, nulls only"),
        pytest.param(p(Op.STARTS_WITH, "required", "イロハヌ"), FILE_4, False, id="truncated max above the upper"),
    ],
)
def test_string_starts_with(expr: Expression, file: FileStats, expected: bool) -> None:
    assert should_read(expr, file) is expected


# Java: testStringNotStartsWith
@pytest.mark.parametrize(
    ("expr", "file", "expected"),
    [
        pytest.param(p(Op.NOT_STARTS_WITH, "required", "a"), FILE, True, id="no stats"),
        pytest.param(p(Op.NOT_STARTS_WITH, "required", "a"), FILE_2, True, id="a, aa..dC"),
        pytest.param(p(Op.NOT_STARTS_WITH, "required", "aa"), FILE_2, True, id="aa, aa..dC"),
        pytest.param(p(Op.NOT_STARTS_WITH, "required", "aaa"), FILE_2, True, id="aaa, aa..dC"),
        pytest.param(p(Op.NOT_STARTS_WITH, "required", "1s"), FILE_3, True, id="1s, 1str1..3str3"),
        pytest.param(p(Op.NOT_STARTS_WITH, "required", "1str1x"), FILE_3, True, id="1str1x, 1str1..3str3"),
        pytest.param(p(Op.NOT_STARTS_WITH, "required", "ff"), FILE_4, True, id="ff, abc..イロハニホヘト"),
        pytest.param(p(Op.NOT_STARTS_WITH, "required", "aB"), FILE_2, True, id="aB, aa..dC"),
        pytest.param(p(Op.NOT_STARTS_WITH, "required", "dWX"), FILE_2, True, id="dWX, aa..dC"),
        pytest.param(p(Op.NOT_STARTS_WITH, "required", "5"), FILE_3, True, id="5, 1str1..3str3"),
        pytest.param(p(Op.NOT_STARTS_WITH, "required", "3str3x"), FILE_3, True, id="3str3x, 1str1..3str3"),
        pytest.param(p(Op.NOT_STARTS_WITH, "required", "イロハヌ"), FILE_4, True, id="truncated max"),
        pytest.param(p(Op.NOT_STARTS_WITH, "required", "abc"), FILE_5, False, id="both bounds start with abc"),
        pytest.param(p(Op.NOT_STARTS_WITH, "required", "abcd"), FILE_5, True, id="lower shorter than the prefix"),
    ],
)
def test_string_not_starts_with(expr: Expression, file: FileStats, expected: bool) -> None:
    assert should_read(expr, file) is expected


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
        (p(Op.IN, "all_nulls", "abc", "def"), False),
        (p(Op.IN, "some_nulls", "abc", "def"), True),
        (p(Op.IN, "no_nulls", "abc", "def"), True),
        (p(Op.IN, "id", *range(-400, 1)), True),  # 401 values: more than the limit of 200, not evaluated
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
        p(Op.NOT_IN, "all_nulls", "abc", "def"),
        p(Op.NOT_IN, "some_nulls", "abc", "def"),
        p(Op.NOT_IN, "no_nulls", "abc", "def"),
    ],
    ids=str,
)
def test_integer_not_in(expr: Expression) -> None:
    assert should_read(expr) is True


# Java: testIsNullInNestedStruct, testNotNullInNestedStruct (1.10.1: a required field folds only when
# every enclosing field is required too)
@pytest.mark.parametrize(
    ("column", "is_null", "not_null"),
    [
        ("required_address", False, True),
        ("required_address.required_street1", False, True),
        ("required_address.optional_street1", True, False),
        ("optional_address", True, False),
        ("optional_address.required_street2", True, False),
        ("optional_address.optional_street2", True, False),
    ],
)
def test_null_tests_in_nested_structs(column: str, is_null: bool, not_null: bool) -> None:
    assert might_match(NESTED_SCHEMA, p(Op.IS_NULL, column), FILE_6) == [is_null]
    assert might_match(NESTED_SCHEMA, p(Op.NOT_NULL, column), FILE_6) == [not_null]


# -- TestInclusiveMetricsEvaluatorWithTransforms ------------------------------------------------------------

T_SCHEMA = schema(
    required(1, "id", "int"),
    required(2, "ts", "timestamptz"),
    optional(3, "all_nulls", "int"),
    optional(4, "all_nulls_str", "string"),
    optional(5, "no_stats", "int"),
    optional(6, "str", "string"),
)
MICROS_PER_DAY = 86_400_000_000
TS_MIN_VALUE, TS_MAX_VALUE = 30 * MICROS_PER_DAY, 79 * MICROS_PER_DAY  # days 30 and 79 at midnight UTC
T_FILE = data_file(
    50,
    {1: 50, 2: 50, 3: 50, 4: 50},
    {1: 0, 2: 0, 3: 50, 4: 50},
    None,
    {2: long_bytes(TS_MIN_VALUE), 6: str_bytes("abc")},
    {2: long_bytes(TS_MAX_VALUE), 6: str_bytes("abe")},
)


def bucket(column: str, n: int) -> UnboundTransform:
    return UnboundTransform(Reference(column), Transform("bucket", n))


def truncate(column: str, width: int) -> UnboundTransform:
    return UnboundTransform(Reference(column), Transform("truncate", width))


def day(column: str) -> UnboundTransform:
    return UnboundTransform(Reference(column), Transform("day"))


def t_should_read(expr: Expression, file: FileStats = T_FILE, case_sensitive: bool = True) -> bool:
    return might_match(T_SCHEMA, expr, file, case_sensitive=case_sensitive)[0]


# Java: testAllNullsWithNonOrderPreserving
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.IS_NULL, bucket("all_nulls", 100)), True),
        (p(Op.NOT_NULL, bucket("all_nulls", 100)), False),
        (p(Op.LT, bucket("all_nulls", 100), 30), False),
        (p(Op.LT_EQ, bucket("all_nulls", 100), 30), False),
        (p(Op.GT, bucket("all_nulls", 100), 30), False),
        (p(Op.GT_EQ, bucket("all_nulls", 100), 30), False),
        (p(Op.EQ, bucket("all_nulls", 100), 30), False),
        (p(Op.NOT_EQ, bucket("all_nulls", 100), 30), True),
        (p(Op.IN, bucket("all_nulls", 100), 1, 2), False),
        (p(Op.NOT_IN, bucket("all_nulls", 100), 1, 2), True),
    ),
)
def test_all_nulls_with_non_order_preserving(expr: Expression, expected: bool) -> None:
    assert t_should_read(expr) is expected


# Java: testRequiredWithNonOrderPreserving (bucket has no usable bounds: everything might match)
@pytest.mark.parametrize(
    "expr",
    [
        p(Op.IS_NULL, bucket("ts", 100)),
        p(Op.NOT_NULL, bucket("ts", 100)),
        p(Op.LT, bucket("ts", 100), 30),
        p(Op.LT_EQ, bucket("ts", 100), 30),
        p(Op.GT, bucket("ts", 100), 30),
        p(Op.GT_EQ, bucket("ts", 100), 30),
        p(Op.EQ, bucket("ts", 100), 30),
        p(Op.NOT_EQ, bucket("ts", 100), 30),
        p(Op.IN, bucket("ts", 100), 1, 2),
        p(Op.NOT_IN, bucket("ts", 100), 1, 2),
    ],
    ids=str,
)
def test_required_with_non_order_preserving(expr: Expression) -> None:
    assert t_should_read(expr) is True


# Java: testAllNulls (of the transforms test)
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (p(Op.IS_NULL, truncate("all_nulls", 10)), True),
        (p(Op.NOT_NULL, truncate("all_nulls", 10)), False),
        (p(Op.LT, truncate("all_nulls", 10), 30), False),
        (p(Op.LT_EQ, truncate("all_nulls", 10), 30), False),
        (p(Op.GT, truncate("all_nulls", 10), 30), False),
        (p(Op.GT_EQ, truncate("all_nulls", 10), 30), False),
        (p(Op.EQ, truncate("all_nulls", 10), 30), False),
        (p(Op.NOT_EQ, truncate("all_nulls", 10), 30), True),
        (p(Op.IN, truncate("all_nulls", 10), 10, 20), False),
        (p(Op.NOT_IN, truncate("all_nulls", 10), 10, 20), True),
        (p(Op.STARTS_WITH, truncate("all_nulls_str", 10), "a"), True),  # a non-identity term: might match
        (p(Op.NOT_STARTS_WITH, truncate("all_nulls_str", 10), "a"), True),
    ),
)
def test_all_nulls_with_truncate(expr: Expression, expected: bool) -> None:
    assert t_should_read(expr) is expected


# Java: testMissingColumn (of the transforms test)
def test_missing_column_in_a_transform() -> None:
    with pytest.raises(BadRequestError, match="Cannot find field 'missing'"):
        t_should_read(p(Op.LT, truncate("missing", 10), 20))


TRANSFORM_MISSING_STATS = [
    p(Op.LT, truncate("no_stats", 10), 5),
    p(Op.LT_EQ, truncate("no_stats", 10), 30),
    p(Op.EQ, truncate("no_stats", 10), 70),
    p(Op.GT, truncate("no_stats", 10), 78),
    p(Op.GT_EQ, truncate("no_stats", 10), 90),
    p(Op.NOT_EQ, truncate("no_stats", 10), 101),
    p(Op.IS_NULL, truncate("no_stats", 10)),
    p(Op.NOT_NULL, truncate("no_stats", 10)),
]


# Java: testMissingStats, testZeroRecordFile (of the transforms test)
@pytest.mark.parametrize("expr", TRANSFORM_MISSING_STATS, ids=str)
def test_transform_missing_stats_and_zero_records(expr: Expression) -> None:
    assert t_should_read(expr) is True
    assert t_should_read(expr, data_file(0)) is False


# Java: testNot, testAnd, testOr (of the transforms test; day(ts) spans days 30..79)
@pytest.mark.parametrize(
    ("expr", "expected"),
    cases(
        (not_(p(Op.LT, day("ts"), INT_MIN_VALUE - 25)), True),
        (not_(p(Op.GT, day("ts"), INT_MIN_VALUE - 25)), False),
        (and_(p(Op.LT, day("ts"), INT_MIN_VALUE - 25), p(Op.GT_EQ, day("ts"), INT_MIN_VALUE - 30)), False),
        (and_(p(Op.LT, day("ts"), INT_MIN_VALUE - 25), p(Op.GT_EQ, day("ts"), INT_MAX_VALUE + 1)), False),
        (and_(p(Op.GT, day("ts"), INT_MIN_VALUE - 25), p(Op.LT_EQ, day("ts"), INT_MIN_VALUE)), True),
        (or_(p(Op.LT, day("ts"), INT_MIN_VALUE - 25), p(Op.GT_EQ, day("ts"), INT_MAX_VALUE + 1)), False),
        (or_(p(Op.LT, day("ts"), INT_MIN_VALUE - 25), p(Op.GT_EQ, day("ts"), INT_MAX_VALUE - 19)), True),
    ),
)
def test_day_not_and_or(expr: Expression, expected: bool) -> None:
    assert t_should_read(expr) is expected


# Java: testIntegerLt .. testIntegerEq (of the transforms test), the same cases over day(ts)
@pytest.mark.parametrize(("op", "value", "expected"), INTEGER_CASES)
def test_day_comparisons(op: Op, value: int, expected: bool) -> None:
    assert t_should_read(p(op, day("ts"), value)) is expected


# Java: testIntegerNotEq, testIntegerNotEqRewritten, testCaseInsensitiveIntegerNotEqRewritten (transforms)
@pytest.mark.parametrize("value", NOT_EQ_VALUES)
def test_day_not_eq(value: int) -> None:
    assert t_should_read(p(Op.NOT_EQ, day("ts"), value)) is True
    assert t_should_read(not_(p(Op.EQ, day("ts"), value))) is True
    assert t_should_read(not_(p(Op.EQ, day("TS"), value)), case_sensitive=False) is True


# Java: testCaseSensitiveIntegerNotEqRewritten (of the transforms test)
def test_day_case_sensitive() -> None:
    with pytest.raises(BadRequestError, match="Cannot find field 'TS'"):
        t_should_read(not_(p(Op.EQ, day("TS"), 5)))


# Java: testStringStartsWith, testStringNotStartsWith (of the transforms test: truncate terms are not
# rewritten, so they might always match)
@pytest.mark.parametrize("prefix", ["a", "ab", "b"])
def test_starts_with_truncate(prefix: str) -> None:
    assert t_should_read(p(Op.STARTS_WITH, truncate("str", 10), prefix)) is True


# Java: testIntegerIn, testIntegerNotIn (of the transforms test)
@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ((INT_MIN_VALUE - 25, INT_MIN_VALUE - 24), False),
        ((INT_MIN_VALUE - 2, INT_MIN_VALUE - 1), False),
        ((INT_MIN_VALUE - 1, INT_MIN_VALUE), True),
        ((INT_MAX_VALUE - 4, INT_MAX_VALUE - 3), True),
        ((INT_MAX_VALUE, INT_MAX_VALUE + 1), True),
        ((INT_MAX_VALUE + 1, INT_MAX_VALUE + 2), False),
        ((INT_MAX_VALUE + 6, INT_MAX_VALUE + 7), False),
        (tuple(range(-400, 1)), True),  # beyond the IN limit
    ],
    ids=lambda v: str(v)[:30],
)
def test_day_in_and_not_in(values: tuple[int, ...], expected: bool) -> None:
    assert t_should_read(p(Op.IN, day("ts"), *values)) is expected
    assert t_should_read(p(Op.NOT_IN, day("ts"), *values)) is True


# -- TestMetricsEvaluatorsNaNHandling (the InclusiveMetricsEvaluator tests) ------------------------------------

NAN_SCHEMA = schema(
    required(1, "all_nan", "double"),
    required(2, "max_nan", "double"),
    optional(3, "min_max_nan", "float"),
    required(4, "all_nan_null_bounds", "double"),
    optional(5, "some_nan_correct_bounds", "float"),
)
NAN_FILE = data_file(
    50,
    {1: 10, 2: 10, 3: 10, 4: 10, 5: 10},
    {1: 0, 2: 0, 3: 0, 4: 0, 5: 0},
    {1: 10, 4: 10, 5: 5},
    {1: double_bytes(NAN), 2: double_bytes(7.0), 3: float_bytes(NAN), 5: float_bytes(7.0)},
    {1: double_bytes(NAN), 2: double_bytes(NAN), 3: float_bytes(NAN), 5: float_bytes(22.0)},
)


def nan_should_read(expr: Expression) -> bool:
    return might_match(NAN_SCHEMA, expr, NAN_FILE)[0]


# Java: testInclusiveMetricsEvaluatorLessThanAndLessThanOrEqual
@pytest.mark.parametrize("op", [Op.LT, Op.LT_EQ])
@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("all_nan", 1.0, False),
        ("max_nan", 1.0, False),
        ("max_nan", 10.0, True),
        ("min_max_nan", 1.0, True),  # a NaN lower bound says nothing
        ("all_nan_null_bounds", 1.0, False),
        ("some_nan_correct_bounds", 1.0, False),
        ("some_nan_correct_bounds", 10.0, True),
    ],
)
def test_nan_less_than(op: Op, column: str, value: float, expected: bool) -> None:
    assert nan_should_read(p(op, column, value)) is expected


# Java: testInclusiveMetricsEvaluatorGreaterThanAndGreaterThanOrEqual
@pytest.mark.parametrize("op", [Op.GT, Op.GT_EQ])
@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("all_nan", 1.0, False),
        ("max_nan", 1.0, True),
        ("max_nan", 10.0, True),
        ("min_max_nan", 1.0, True),
        ("all_nan_null_bounds", 1.0, False),
        ("some_nan_correct_bounds", 1.0, True),
        ("some_nan_correct_bounds", 10.0, True),
        ("some_nan_correct_bounds", 30, False),
    ],
)
def test_nan_greater_than(op: Op, column: str, value: float, expected: bool) -> None:
    assert nan_should_read(p(op, column, value)) is expected


# Java: testInclusiveMetricsEvaluatorEquals
@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("all_nan", 1.0, False),
        ("max_nan", 1.0, False),
        ("max_nan", 10.0, True),
        ("min_max_nan", 1.0, True),
        ("all_nan_null_bounds", 1.0, False),
        ("some_nan_correct_bounds", 1.0, False),
        ("some_nan_correct_bounds", 10.0, True),
        ("some_nan_correct_bounds", 30, False),
    ],
)
def test_nan_equals(column: str, value: float, expected: bool) -> None:
    assert nan_should_read(p(Op.EQ, column, value)) is expected


# Java: testInclusiveMetricsEvaluatorNotEquals, testInclusiveMetricsEvaluatorNotIn (no visibility)
@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("all_nan", 1.0),
        ("max_nan", 1.0),
        ("max_nan", 10.0),
        ("min_max_nan", 1.0),
        ("all_nan_null_bounds", 1.0),
        ("some_nan_correct_bounds", 1.0),
        ("some_nan_correct_bounds", 10.0),
        ("some_nan_correct_bounds", 30),
    ],
)
def test_nan_not_equals_and_not_in(column: str, value: float) -> None:
    assert nan_should_read(p(Op.NOT_EQ, column, value)) is True
    assert nan_should_read(p(Op.NOT_IN, column, value)) is True


# Java: testInclusiveMetricsEvaluatorIn
@pytest.mark.parametrize(
    ("column", "values", "expected"),
    [
        ("all_nan", (1.0, 10.0, 30.0), False),
        ("max_nan", (1.0, 10.0, 30.0), True),
        ("min_max_nan", (1.0, 10.0, 30.0), True),
        ("all_nan_null_bounds", (1.0, 10.0, 30.0), False),
        ("some_nan_correct_bounds", (1.0, 10.0, 30.0), True),
        ("some_nan_correct_bounds", (1.0, 30.0), False),
    ],
)
def test_nan_in(column: str, values: tuple[float, ...], expected: bool) -> None:
    assert nan_should_read(p(Op.IN, column, *values)) is expected


# -- rules of §3.1 over several files at once ---------------------------------------------------------------


def test_each_file_gets_its_own_answer() -> None:
    """One evaluation over [FILE, EMPTY, MISSING_STATS] gives each file the answer Java gives it alone:
    testIntegerLt / testIntegerEq for FILE, testZeroRecordFile for EMPTY, no stats (§3.1) for the third."""
    files = (FILE, EMPTY, MISSING_STATS)
    assert might_match(SCHEMA, p(Op.LT, "id", INT_MIN_VALUE - 25), *files) == [False, False, True]
    assert might_match(SCHEMA, p(Op.EQ, "id", INT_MAX_VALUE - 4), *files) == [True, False, True]
    assert might_match(SCHEMA, p(Op.NOT_NULL, "all_nulls"), *files) == [False, False, True]


def test_starts_with_over_files_with_different_bounds() -> None:
    """startsWith "ab" (§3.1: compare the bounds cut to the prefix's length): FILE has no stats for the
    column; FILE_2 aa..dC spans it; FILE_3 1str1..3str3 lies below it ("3s" < "ab"); FILE_4 abc..イロ and
    FILE_5 abc..abcdefghi start at it."""
    files = (FILE, FILE_2, FILE_3, FILE_4, FILE_5)
    assert might_match(SCHEMA, p(Op.STARTS_WITH, "required", "ab"), *files) == [True, True, False, True, True]
    # notStartsWith "abc": only FILE_5, whose bounds both start with it, cannot match (testStringNotStartsWith)
    assert might_match(SCHEMA, p(Op.NOT_STARTS_WITH, "required", "abc"), *files) == [True] * 4 + [False]


def test_unknown_record_count_might_match() -> None:
    """§3.1: record_count < 0 (unknown, imported Avro files) might match whatever the bounds say."""
    unknown = data_file(-1, lower_bounds={1: int_bytes(INT_MIN_VALUE)}, upper_bounds={1: int_bytes(INT_MAX_VALUE)})
    assert might_match(SCHEMA, p(Op.LT, "id", INT_MIN_VALUE - 25), FILE, unknown) == [False, True]


def test_in_lists_up_to_200_values_are_checked_against_the_bounds() -> None:
    """InclusiveMetricsEvaluator.in: IN_PREDICATE_LIMIT = 200 (§3.1 "if |S| > 200 might match")."""
    below = list(range(INT_MIN_VALUE - 200, INT_MIN_VALUE))
    assert should_read(p(Op.IN, "id", *below)) is False
    assert should_read(p(Op.IN, "id", INT_MIN_VALUE - 201, *below)) is True


def test_bounds_written_before_an_int_to_long_promotion() -> None:
    """Java Conversions.fromByteBuffer(LongType, 4 bytes) reads the int written before the column was
    promoted to long; files with 4-byte and 8-byte bounds are pruned side by side."""
    promoted = schema(required(1, "n", "long"))
    old = data_file(10, lower_bounds={1: int_bytes(10)}, upper_bounds={1: int_bytes(20)})
    new = data_file(10, lower_bounds={1: long_bytes(3)}, upper_bounds={1: long_bytes(2**40)})
    assert might_match(promoted, p(Op.LT, "n", 5), old, new) == [False, True]
    assert might_match(promoted, p(Op.GT, "n", 2**35), old, new) == [False, True]

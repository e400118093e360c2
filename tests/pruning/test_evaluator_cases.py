"""One column's statistics, one filter, two evaluators: where the planner's pruning and the client's row-group
judgement agree, and where they differ on purpose.

Each row of CASES gives a column (type, row count, null count, NaN count, lower and upper bound), a filter
on it in REST JSON (the form both sides accept; the planner's side reads it with the service's own parser),
and two expected answers, each reasoned from its reference rather than taken from a run:
* `java`: what Iceberg Java 1.10's InclusiveMetricsEvaluator returns for a data file with these metrics
  (True: rows might match; False: the file cannot match), read from its source at apache-iceberg-1.10.0;
* `spark`: what spark_client.statistics.judge must say of a Parquet row group with these statistics under
  Spark's semantics (a row is kept only when the filter is TRUE; a comparison with null is NULL, NOT NULL
  is NULL), over every set of rows the statistics allow: "cannot-match", "all-match" or "might-match".

The two answer different questions, so they stay two evaluators and no row forces them to agree:
1. The planner asks only "can this file be skipped?" and must answer exactly as Java does (the service's
   plans are compared with Java's), so Java's caution is kept: notEq and notIn never prune, an IN list
   longer than 200 is not checked, a NaN lower bound is unusable. The client also asks "does every row
   match?" (all-match: the filter need not be evaluated, a count comes from the metadata).
2. Nulls: Java's row Evaluator keeps null rows for notEq / notIn / notStartsWith, so its metrics evaluator
   cannot prune those where nulls may be present; Spark drops them (NOT of NULL is NULL).
3. Floating point: Java prunes floats by bounds and NaN counts, with comparisons that never match NaN and
   Double.compare's order (-0.0 < 0.0); Spark orders NaN above every number (NaN > 5.0 is TRUE) and says
   -0.0 = 0.0, and a Parquet row group has no NaN count, so the client does not judge floats at all. The
   NaN count of a row is therefore given to the Java side only.
A row whose answers are not the same pruning decision (java True with "might-match", java False with
"cannot-match") carries a `why`; test_every_difference_says_why keeps that so.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import pytest

from planner_service.expressions.expression_json import expression_from_json
from planner_service.pruning.metrics_evaluator import InclusiveMetricsEvaluator
from spark_client.statistics import ColumnStats, judge
from tests.conformance.cases import and_, not_, or_, p
from tests.pruning.factories import (
    FileStats,
    data_file,
    double_bytes,
    float_bytes,
    int_bytes,
    long_bytes,
    optional,
    schema,
    stats_columns,
    str_bytes,
)

SparkAnswer = Literal["cannot-match", "all-match", "might-match"]
CANNOT: SparkAnswer = "cannot-match"
ALL: SparkAnswer = "all-match"
MIGHT: SparkAnswer = "might-match"
COLUMN = "x"  # every filter is on this one column, field id 1, optional
NAN = float("nan")


@dataclass(frozen=True)
class Column:
    """A column's statistics over a data file (Java) or a row group (Spark). None: not known."""

    typ: str
    lower: Any = None
    upper: Any = None
    nulls: int | None = 0
    rows: int = 10
    nans: int | None = None  # Java's nan_value_counts only: Parquet row-group statistics have no NaN count


@dataclass(frozen=True)
class Case:
    name: str
    column: Column
    filter: Any
    java: bool
    spark: SparkAnswer
    why: str = ""  # why the two pruning decisions differ

    @property
    def differs(self) -> bool:
        return (self.java, self.spark) not in ((True, MIGHT), (False, CANNOT))


def x(op: str, value: Any = None, values: list[Any] | None = None) -> dict[str, Any]:
    return p(op, COLUMN, value, values)


LONGS = Column("long", 10, 20)
LONGS_WITH_NULLS = Column("long", 10, 20, nulls=2)
SEVENS = Column("long", 7, 7)
SEVENS_WITH_NULLS = Column("long", 7, 7, nulls=3)
ALL_NULL = Column("long", nulls=10)
UNKNOWN_NULLS = Column("long", 10, 20, nulls=None)
NO_STATS = Column("long", nulls=None)
WORDS = Column("string", "apple", "apron")
WORDS_WITH_NULLS = Column("string", "apple", "apron", nulls=2)
LETTERS = Column("string", "a", "z")
DOUBLES = Column("double", 1.0, 2.0, nans=0)

CASES: tuple[Case, ...] = (
    # -- comparisons at and beyond the bounds 10..20 -----------------------------------------------------------
    Case("lt lower", LONGS, x("lt", 10), False, CANNOT),
    Case("lt above upper", LONGS, x("lt", 21), True, ALL, why="every value is at most 20; Java has no all-match"),
    Case("gt upper", LONGS, x("gt", 20), False, CANNOT),
    Case("eq below lower", LONGS, x("eq", 9), False, CANNOT),
    Case("eq inside", LONGS, x("eq", 15), True, MIGHT),
    Case(
        "eq int above its range",
        Column("int", 10, 20),
        x("eq", 2**40),
        False,
        CANNOT,  # Java: LongLiteral.to(int) is aboveMax, bound to alwaysFalse; Spark widens x to bigint
    ),
    Case(
        "lt int above its range",
        Column("int", 10, 20),
        x("lt", 2**40),
        True,
        ALL,
        why="every int is below 2**40 (Spark widens x to bigint); Java binds it to alwaysTrue, and has no all-match",
    ),
    # -- a column of one value: Java never concludes from lower == upper ----------------------------------------
    Case("eq single value", SEVENS, x("eq", 7), True, ALL, why="lower == upper == 7 and no nulls: every row is 7"),
    Case(
        "not-eq single value",
        SEVENS,
        x("not-eq", 7),
        True,
        CANNOT,
        why="Java's notEq never prunes (bounds need not be values); every row is 7, so 7 != 7 is false",
    ),
    Case(
        "not-eq single value with nulls",
        SEVENS_WITH_NULLS,
        x("not-eq", 7),
        True,
        CANNOT,
        why="Java keeps nulls for notEq; in Spark null != 7 is NULL, and every other row is 7",
    ),
    Case(
        "not eq outside",
        LONGS,
        not_(x("eq", 5)),
        True,
        ALL,
        why="rewritten to notEq, which Java never prunes; no row is 5 and none is null",
    ),
    Case("not eq outside with nulls", LONGS_WITH_NULLS, not_(x("eq", 5)), True, MIGHT),  # NOT of NULL is NULL
    # -- null counts -------------------------------------------------------------------------------------------
    Case("is-null without nulls", LONGS, x("is-null"), False, CANNOT),
    Case("is-null all null", ALL_NULL, x("is-null"), True, ALL, why="every row is null"),
    Case("not-null all null", ALL_NULL, x("not-null"), False, CANNOT),
    Case("not-null without nulls", LONGS, x("not-null"), True, ALL, why="no row is null"),
    Case("is-null unknown null count", UNKNOWN_NULLS, x("is-null"), True, MIGHT),
    Case("lt all null", ALL_NULL, x("lt", 100), False, CANNOT),  # Java containsNullsOnly; Spark: NULL < 100
    Case("eq no statistics", NO_STATS, x("eq", 5), True, MIGHT),
    Case("not-null empty file", Column("long", nulls=0, rows=0), x("not-null"), False, CANNOT),
    # -- in / not-in --------------------------------------------------------------------------------------------
    Case("in below lower", LONGS, x("in", values=[1, 2]), False, CANNOT),
    Case("in single value", SEVENS, x("in", values=[7, 8]), True, ALL, why="every row is 7, which is listed"),
    Case(
        "in 201 values below lower",
        LONGS,
        x("in", values=list(range(-201, 0))),
        True,
        CANNOT,
        why="Java does not check an IN list of more than 200 values against the bounds",
    ),
    Case(
        "not-in outside",
        LONGS,
        x("not-in", values=[1, 2]),
        True,
        ALL,
        why="Java's notIn never prunes; no row is listed and none is null",
    ),
    Case(
        "not-in single value",
        SEVENS,
        x("not-in", values=[7, 8]),
        True,
        CANNOT,
        why="Java's notIn never prunes; every row is 7, which is listed",
    ),
    # -- strings: prefixes, truncated bounds, code-point order --------------------------------------------------
    Case("starts-with both bounds", WORDS, x("starts-with", "ap"), True, ALL, why="both bounds start with ap"),
    Case("starts-with above upper", WORDS, x("starts-with", "apx"), False, CANNOT),  # "apr" < "apx"
    Case(
        "starts-with truncated bounds",
        Column("string", "abcdefghijklmnop", "abcdefghijklmnoq"),  # Iceberg's 16-character truncation
        x("starts-with", "abcdefghijklmnopqrs"),
        True,
        MIGHT,
    ),
    Case("not-starts-with both bounds", WORDS, x("not-starts-with", "ap"), False, CANNOT),
    Case(
        "not starts-with with nulls",
        WORDS_WITH_NULLS,
        not_(x("starts-with", "ap")),
        True,
        CANNOT,
        why="Java's notStartsWith is true of null (its Evaluator) so it never prunes where nulls may be; "
        "Spark: NOT (NULL LIKE 'ap%') is NULL, and every other row starts with ap",
    ),
    Case("lt code point", LETTERS, x("lt", "é"), True, ALL, why="'z' < 'é' (U+00E9) in code-point order"),
    Case("gt-eq code point", LETTERS, x("gt-eq", "é"), False, CANNOT),  # a collation would put é before f
    Case(
        "gt supplementary",
        Column("string", "a", "\ufffd"),
        x("gt", "\U0001f600"),
        False,
        CANNOT,
        # Java's CharSeqComparator ranks a high surrogate above every other char: U+FFFD < U+1F600
    ),
    # -- floating point: NaN counts, NaN bounds, -0.0 -----------------------------------------------------------
    Case(
        "is-nan without nans",
        DOUBLES,
        x("is-nan"),
        False,
        MIGHT,
        why="Java reads the NaN count (0); a Parquet row group has none",
    ),
    Case(
        "not-nan all nan",
        Column("double", nans=10),
        x("not-nan"),
        False,
        MIGHT,
        why="Java: NaN count == value count; Spark sees no NaN count (nor bounds)",
    ),
    Case(
        "is-nan all null",
        Column("double", nulls=10, nans=0),
        x("is-nan"),
        False,
        CANNOT,  # Spark's isnan(NULL) is false, not NULL: FALSE for every row
    ),
    Case(
        "not-nan all null",
        Column("double", nulls=10, nans=0),
        x("not-nan"),
        True,
        ALL,
        why="Spark's isnan(NULL) is false: NOT isnan is TRUE on every null row; Java has no all-match",
    ),
    Case(
        "lt below lower double",
        DOUBLES,
        x("lt", 0.5),
        False,
        MIGHT,
        why="Java prunes floats by bounds; the client does not judge floating-point comparisons",
    ),
    Case(
        "gt above upper float with nans",
        Column("float", 1.0, 2.0, nans=3),
        x("gt", 5.0),
        False,
        MIGHT,
        why="NaN is not in the bounds and Java's comparisons never match it; Spark orders NaN above every "
        "number, so NaN > 5.0 is TRUE for the NaN rows",
    ),
    Case(
        "lt NaN lower bound",
        Column("double", NAN, NAN, nans=3),  # ORC writes NaN bounds when a file starts with NaN
        x("lt", 1.0),
        True,
        MIGHT,
    ),
    Case(
        "eq -0.0 lower 0.0",
        Column("double", 0.0, 1.0, nans=0),
        x("eq", -0.0),
        False,
        MIGHT,
        why="Java's Double.compare puts -0.0 below the lower bound 0.0; in Spark -0.0 = 0.0 is TRUE",
    ),
    Case("lt 0.0 lower -0.0", Column("double", -0.0, 1.0, nans=0), x("lt", 0.0), True, MIGHT),  # -0.0 < 0.0
    # -- AND, OR, NOT -------------------------------------------------------------------------------------------
    Case(
        "and within bounds",
        LONGS,
        and_(x("gt-eq", 10), x("lt-eq", 20)),
        True,
        ALL,
        why="both sides hold for every row",
    ),
    Case("and disjoint", LONGS, and_(x("gt", 15), x("lt", 12)), True, MIGHT),  # neither side sees rows
    Case("or outside", LONGS, or_(x("lt", 5), x("gt", 25)), False, CANNOT),
    Case("not gt below lower", LONGS, not_(x("gt", 5)), False, CANNOT),  # Java: rewritten to ltEq 5
    # -- dates --------------------------------------------------------------------------------------------------
    Case(
        "gt-eq date lower",
        Column("date", dt.date(2024, 1, 1), dt.date(2024, 1, 3)),
        x("gt-eq", "2024-01-01"),
        True,
        ALL,
        why="every day is at least 2024-01-01",
    ),
)

# -- the Java side: one data file, its metrics maps keyed by field id 1 -------------------------------------------

_EPOCH = dt.date(1970, 1, 1)
_ENCODERS: dict[str, Callable[[Any], bytes]] = {
    "int": int_bytes,
    "long": long_bytes,
    "date": lambda day: int_bytes((day - _EPOCH).days),
    "string": str_bytes,
    "float": float_bytes,
    "double": double_bytes,
}


def data_file_of(column: Column) -> FileStats:
    """The column as a data file's metrics: value counts (nulls included) only where the null count is known."""
    encode = _ENCODERS[column.typ]
    return data_file(
        column.rows,
        None if column.nulls is None else {1: column.rows},
        None if column.nulls is None else {1: column.nulls},
        None if column.nans is None else {1: column.nans},
        None if column.lower is None else {1: encode(column.lower)},
        None if column.upper is None else {1: encode(column.upper)},
    )


def java_might_match(case: Case) -> bool:
    table_schema = schema(optional(1, COLUMN, case.column.typ))
    evaluator = InclusiveMetricsEvaluator(table_schema, expression_from_json(case.filter))
    (might,) = evaluator.eval(stats_columns(data_file_of(case.column)))
    return bool(might)


# -- the Spark side: one row group's ColumnStats ------------------------------------------------------------------


def spark_verdict(case: Case) -> str:
    column = case.column
    stats = ColumnStats(column.typ, column.rows, column.nulls, column.lower, column.upper)
    return judge(case.filter, lambda name: stats if name == COLUMN else None).value


CASE_PARAMS = [pytest.param(c, id=c.name) for c in CASES]


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_java_inclusive_metrics_evaluator(case: Case) -> None:
    assert java_might_match(case) is case.java


@pytest.mark.parametrize("case", CASE_PARAMS)
def test_spark_row_group_judgement(case: Case) -> None:
    assert spark_verdict(case) == case.spark


def test_every_difference_says_why() -> None:
    assert [c.name for c in CASES if c.differs != bool(c.why)] == []
    assert len({c.name for c in CASES}) == len(CASES)

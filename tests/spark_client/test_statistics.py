"""statistics.judge: what a row group's bounds and null count say of a filter, with Spark's SQL semantics.

The expected verdicts are Spark's: a row matches when the filter is TRUE, a comparison with null is NULL
(so `x != 5` cannot match a null x, and NOT of it cannot either), is-null is never NULL. A group whose
every row matches is ROWS_ALL_MATCH; one where none can is ROWS_CANNOT_MATCH. Beyond each case's verdict,
every verdict is checked against the rows themselves: pyarrow evaluates the filter (residual.py's Spark
semantics) on rows that lie within the stats, so a wrong ALL or CANNOT shows as rows that disagree.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from spark_client.residual import to_arrow_expression
from spark_client.schema import arrow_type
from spark_client.statistics import ColumnStats, Verdict, judge, residual
from tests.conformance.cases import and_, not_, or_, p

ALL, NONE, SOME = Verdict.ROWS_ALL_MATCH, Verdict.ROWS_CANNOT_MATCH, Verdict.ROWS_MIGHT_MATCH


# A group of rows per column: its Iceberg type and its values (None: null); stats are taken from them.
GROUP: dict[str, tuple[str, list[Any]]] = {
    "id": ("long", [10, 15, 20]),  # 10..20, no nulls
    "n": ("long", [1, None, 3]),  # 1..3 with a null
    "nothing": ("long", [None, None, None]),  # every value null
    "s": ("string", ["apple", "apricot", "apron"]),  # all start with "ap"
    "same": ("string", ["eu", "eu", "eu"]),
    "d": ("date", [dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3)]),
    "ts": ("timestamptz", [dt.datetime(2024, 1, 16, h, tzinfo=dt.UTC) for h in (0, 12, 23)]),
    "dec": ("decimal(9,2)", [Decimal("1.50"), Decimal("2.00"), Decimal("9.99")]),
    "f": ("double", [1.0, 2.0, 3.0]),
    "b": ("boolean", [True, True, True]),
}


def stats_of(name: str) -> ColumnStats | None:
    if name not in GROUP:
        return None
    typ, values = GROUP[name]
    present = [v for v in values if v is not None]
    return ColumnStats(
        typ, len(values), len(values) - len(present), min(present, default=None), max(present, default=None)
    )


def rows_matching(expr: Any) -> list[bool]:
    """The filter on the group's rows, as the reader evaluates it (Spark semantics): True where kept."""
    table = pa.table({name: pa.array(values, arrow_type(typ)) for name, (typ, values) in GROUP.items()})
    result = table.filter(to_arrow_expression(expr, lambda n: (pa.compute.field(n), GROUP[n][0])))
    return [True] * result.num_rows + [False] * (table.num_rows - result.num_rows)


CASES = [
    # comparisons within and across the bounds [10, 20] of a column without nulls
    (p("gt", "id", 5), ALL),
    (p("gt", "id", 10), SOME),
    (p("gt", "id", 20), NONE),
    (p("gt-eq", "id", 10), ALL),
    (p("gt-eq", "id", 21), NONE),
    (p("lt", "id", 21), ALL),
    (p("lt", "id", 10), NONE),
    (p("lt-eq", "id", 10), SOME),
    (p("lt-eq", "id", 20), ALL),
    (p("eq", "id", 15), SOME),
    (p("eq", "id", 9), NONE),
    (p("not-eq", "id", 9), ALL),
    (p("not-eq", "id", 15), SOME),
    (p("eq", "same", "eu"), ALL),
    (p("not-eq", "same", "eu"), NONE),
    (p("in", "id", values=[1, 2]), NONE),
    (p("in", "id", values=[1, 12]), SOME),
    (p("in", "same", values=["eu", "us"]), ALL),
    (p("not-in", "same", values=["eu"]), NONE),
    (p("not-in", "id", values=[1, 2]), ALL),
    # a null in the group: no comparison is true of it, so ALL is never possible, nor for NOT
    (p("gt", "n", 0), SOME),
    (p("lt", "n", 0), NONE),
    (not_(p("lt", "n", 0)), SOME),
    (p("not-eq", "n", 7), SOME),
    (not_(p("eq", "n", 7)), SOME),
    # every value null: comparisons are null (never true), is-null is true
    (p("gt", "nothing", 0), NONE),
    (not_(p("gt", "nothing", 0)), NONE),
    (p("is-null", "nothing"), ALL),
    (p("not-null", "nothing"), NONE),
    (p("is-null", "id"), NONE),
    (p("not-null", "id"), ALL),
    (p("is-null", "n"), SOME),
    (or_(p("is-null", "n"), p("not-null", "n")), SOME),  # the sets do not see rows
    # strings and prefixes
    (p("starts-with", "s", "ap"), ALL),
    (p("starts-with", "s", "apr"), SOME),
    (p("starts-with", "s", "b"), NONE),
    (p("not-starts-with", "s", "ap"), NONE),
    (p("not-starts-with", "s", "zz"), ALL),
    (p("gt-eq", "s", "apple"), ALL),
    # other types
    (p("gt-eq", "d", "2024-01-01"), ALL),
    (p("lt", "d", "2024-01-01"), NONE),
    (and_(p("gt-eq", "ts", "2024-01-16T00:00:00+00:00"), p("lt", "ts", "2024-01-17T00:00:00+00:00")), ALL),
    (p("lt", "ts", "2024-01-16T00:00:00+00:00"), NONE),
    (p("gt", "ts", "2024-01-16T12:00:00+00:00"), SOME),
    (p("gt", "dec", "1.00"), ALL),
    (p("gt", "dec", "9.99"), NONE),
    (p("eq", "b", True), ALL),
    # AND, OR, NOT
    (and_(p("gt", "id", 5), p("eq", "same", "eu")), ALL),
    (and_(p("gt", "id", 5), p("gt", "id", 50)), NONE),
    (or_(p("gt", "id", 50), p("eq", "same", "eu")), ALL),
    (or_(p("gt", "id", 50), p("lt", "id", 0)), NONE),
    (not_(p("gt", "id", 50)), ALL),
    (not_(p("gt", "id", 5)), NONE),
    (not_(p("gt", "id", 15)), SOME),
    (True, ALL),
    (False, NONE),
    ({"type": "true"}, ALL),
    ({"type": "literal", "value": False}, NONE),
    # what cannot be judged: floating point (NaN), transforms, unknown columns
    (p("gt", "f", 0.0), SOME),
    (p("lt", "f", 0.0), SOME),
    (p("is-nan", "f"), SOME),
    (p("eq", {"type": "transform", "transform": "day", "term": "ts"}, 19738), SOME),
    (p("gt", {"type": "reference", "term": "id"}, 5), ALL),
]


@pytest.mark.parametrize(("expr", "verdict"), CASES, ids=[str(i) for i in range(len(CASES))])
def test_verdicts(expr: Any, verdict: Verdict) -> None:
    assert judge(expr, stats_of) is verdict
    kept = rows_matching(expr)
    if verdict is ALL:
        assert all(kept)
    elif verdict is NONE:
        assert not any(kept)
    # the filter left for the group keeps the same rows
    decided, left = residual(expr, stats_of)
    assert decided is verdict
    assert left is True if verdict is ALL else left is False if verdict is NONE else rows_matching(left) == kept


def test_the_residual_drops_what_the_statistics_decide() -> None:
    """Within one day, `ts` predicates are true of every row: only the region's is left to evaluate."""
    day = and_(p("gt-eq", "ts", "2024-01-16T00:00:00+00:00"), p("lt", "ts", "2024-01-17T00:00:00+00:00"))
    assert residual(and_(day, p("eq", "s", "apple")), stats_of) == (SOME, p("eq", "s", "apple"))
    assert residual(or_(p("gt", "id", 50), p("eq", "s", "apple")), stats_of) == (SOME, p("eq", "s", "apple"))
    assert residual(not_(and_(p("gt", "id", 5), p("eq", "s", "apple"))), stats_of) == (
        SOME,
        not_(p("eq", "s", "apple")),
    )
    # a predicate that may be null is kept, whatever else is decided (NOT of it is not its opposite)
    assert residual(and_(day, not_(p("lt", "n", 0))), stats_of) == (SOME, not_(p("lt", "n", 0)))


def test_unknown_stats_can_be_anything() -> None:
    assert judge(p("gt", "missing", 5), stats_of) is SOME
    unknown = ColumnStats("long", 3, None)  # no null count, no bounds
    assert judge(p("gt", "x", 5), lambda _: unknown) is SOME
    assert judge(p("is-null", "x"), lambda _: unknown) is SOME
    no_nulls_no_bounds = ColumnStats("long", 3, 0)
    assert judge(p("not-null", "x"), lambda _: no_nulls_no_bounds) is ALL
    assert judge(p("gt", "x", 5), lambda _: no_nulls_no_bounds) is SOME


def test_constants_are_exact() -> None:
    """An identity partition's value (or a column the file lacks: null) holds for every row."""
    region = ColumnStats.constant("string", "eu", 100)
    assert judge(p("eq", "r", "eu"), lambda _: region) is ALL
    assert judge(p("not-eq", "r", "eu"), lambda _: region) is NONE
    missing = ColumnStats.constant("string", None, 100)
    assert judge(p("not-eq", "r", "eu"), lambda _: missing) is NONE  # null != 'eu' is null: Spark drops it
    assert judge(p("is-null", "r"), lambda _: missing) is ALL


def test_bounds_of_another_kind_are_not_judged() -> None:
    """A literal that does not compare with the bounds (a file whose stats decode otherwise) is unknown."""
    odd = ColumnStats("long", 3, 0, "a", "z")
    assert judge(p("gt", "x", 5), lambda _: odd) is SOME

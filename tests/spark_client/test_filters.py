"""Spark's pushed filters as planner expressions (spark_client.filters): the translation, what is refused,
the conjunction with a user's filter, and the filter-string form meaning what the JSON form means on the
real service."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import httpx
import pytest

from spark_client.filters import conjunction, to_filter_string, to_rest_expression
from tests.plan_wire import splits

ds = pytest.importorskip("pyspark.sql.datasource")
if not hasattr(ds, "EqualTo"):
    pytest.skip("pushed filters arrived in pyspark 4.1", allow_module_level=True)


def test_comparisons_and_sets() -> None:
    assert to_rest_expression(ds.EqualTo(("id",), 3)) == {"type": "eq", "term": "id", "value": 3}
    assert to_rest_expression(ds.GreaterThan(("st", "x"), 2)) == {"type": "gt", "term": "st.x", "value": 2}
    at_least = to_rest_expression(ds.GreaterThanOrEqual(("f",), 1.5))
    assert at_least is not None and at_least["type"] == "gt-eq"
    below = to_rest_expression(ds.LessThan(("s",), "b"))
    assert below is not None and below["type"] == "lt"
    assert to_rest_expression(ds.LessThanOrEqual(("b",), True)) == {"type": "lt-eq", "term": "b", "value": True}
    assert to_rest_expression(ds.In(("s",), ("a", "b"))) == {"type": "in", "term": "s", "values": ["a", "b"]}
    assert to_rest_expression(ds.IsNull(("s",))) == {"type": "is-null", "term": "s"}
    assert to_rest_expression(ds.IsNotNull(("s",))) == {"type": "not-null", "term": "s"}
    assert to_rest_expression(ds.StringStartsWith(("s",), "ab")) == {"type": "starts-with", "term": "s", "value": "ab"}
    assert to_rest_expression(ds.Not(ds.EqualTo(("id",), 3))) == {
        "type": "not",
        "child": {"type": "eq", "term": "id", "value": 3},
    }


def test_values_take_the_forms_the_service_converts_by_column_type() -> None:
    def value(v: Any) -> Any:
        expression = to_rest_expression(ds.EqualTo(("c",), v))
        assert expression is not None
        return expression["value"]

    assert value(date(1969, 12, 25)) == "1969-12-25"
    assert value(datetime(1970, 1, 1, 0, 0, 1, 5, tzinfo=UTC)) == 1_000_005
    assert value(datetime(1970, 1, 1, 2, 0, tzinfo=timezone(timedelta(hours=2)))) == 0  # aware: an instant
    assert value(datetime(1969, 12, 31, 23, 59, 59, 999999)) == -1  # naive (TIMESTAMP_NTZ): its wall clock
    assert value(Decimal("10.50")) == "10.50"
    assert value(b"\x0a\xff") == "0AFF" and value(bytearray(b"\x00")) == "00"  # the REST spec's upper-case hex


@pytest.mark.parametrize(
    "spark_filter",
    [
        ds.EqualNullSafe(("id",), 3),
        ds.StringEndsWith(("s",), "x"),
        ds.StringContains(("s",), "x"),
        ds.EqualTo(("f",), float("nan")),
        ds.EqualTo(("lst",), [1, 2]),
        ds.In(("id",), (1, None)),
        ds.EqualTo(("a.b",), 1),  # a dot inside a name would read as nesting
        ds.Not(ds.StringContains(("s",), "x")),
    ],
)
def test_what_has_no_faithful_translation_is_left_to_spark(spark_filter: Any) -> None:
    assert to_rest_expression(spark_filter) is None


def test_conjunction() -> None:
    lt = {"type": "lt", "term": "id", "value": 3}
    eq = {"type": "eq", "term": "s", "value": "it's"}
    assert conjunction([], "id < 9") == "id < 9"
    assert conjunction([], None) is None
    assert conjunction([lt], None) == lt
    assert conjunction([lt, eq], {"type": "true"}) == {
        "type": "and",
        "left": {"type": "and", "left": {"type": "true"}, "right": lt},
        "right": eq,
    }
    assert conjunction([lt, eq], "id > 0 OR id < -5") == "(id > 0 OR id < -5) AND `id` < 3 AND `s` = 'it''s'"


def test_filter_strings() -> None:
    def text(spark_filter: Any) -> str:
        expression = to_rest_expression(spark_filter)
        assert expression is not None
        return to_filter_string(expression)

    assert text(ds.In(("st", "y"), ("a", "b"))) == "`st`.`y` IN ('a', 'b')"
    assert text(ds.Not(ds.IsNull(("we`ird",)))) == "NOT (`we``ird` IS NULL)"
    assert text(ds.StringStartsWith(("s",), "5%_!")) == "`s` LIKE '5!%!_!!%' ESCAPE '!'"
    assert text(ds.GreaterThan(("b",), False)) == "`b` > FALSE"


# Spark's filters on every kind of column of the conformance table all_types
ALL_TYPES_FILTERS = [
    ds.EqualTo(("b",), True),
    ds.GreaterThan(("i",), 2),
    ds.LessThanOrEqual(("l",), 3_000_000_000),
    ds.GreaterThan(("f",), 1.0),
    ds.Not(ds.EqualTo(("d",), 2.25)),
    ds.GreaterThan(("dec9",), Decimal("10.50")),
    ds.LessThan(("dec38",), Decimal("1.0000000000")),
    ds.LessThan(("dt",), date(1969, 12, 25)),
    ds.GreaterThanOrEqual(("ts_ntz",), datetime(2024, 1, 4)),
    ds.LessThan(("ts",), datetime(2024, 1, 3, 12, tzinfo=UTC)),
    ds.In(("s",), ("s1-é", "s5-é")),
    ds.StringStartsWith(("s",), "s1"),
    ds.IsNull(("st", "y")),
    ds.IsNotNull(("m",)),
    ds.GreaterThan(("bin",), b"\x05\xff"),
    ds.In(("bin",), (b"\x01\xff", b"\x07\xff")),
]


@pytest.mark.parametrize("spark_filter", ALL_TYPES_FILTERS, ids=lambda f: type(f).__name__)
def test_both_forms_plan_alike(conformance_service: str, spark_filter: Any) -> None:
    expression = to_rest_expression(spark_filter)
    assert expression is not None
    plans = []
    for row_filter in (expression, to_filter_string(expression)):
        response = httpx.post(
            f"{conformance_service}/plan", json={"table": "db.all_types", "filter": row_filter}, timeout=60
        )
        assert response.status_code == 200, (row_filter, response.text)
        plans.append(response.json())
    files = [sorted(f["data-file"]["file-path"] for f in splits(p)) for p in plans]
    residuals = [[f["residual-filter"] for f in splits(p)] for p in plans]
    assert files[0] == files[1] and residuals[0] == residuals[1]

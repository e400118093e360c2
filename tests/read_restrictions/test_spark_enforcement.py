"""A restricted plan read by Spark (pyspark 4, local[2]) from a service that serves it only to clients that
declare read-restrictions (stub_service.py): plan_and_read with the tasks inline and fetched by each
executor, aggregate() falling back to the rows, and the Python data source; the rows are the enforced ones
(restricted_table.expected_rows), each query hashing with one salt of its own, made in the driver, that no
test can know: so sha-256-query-local values are checked for what they must be (equal for equal raw values
across tasks, 64 hex characters, another query's differing), every other column against the oracle. A
filter Spark evaluates itself sees the masked values, as the reader returns them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.read_restrictions.restricted_table import SPEC_EMAIL, expected_rows, mask_alphanum, write_table
from tests.read_restrictions.stub_service import StubService, stub_service
from tests.spark_client.conftest import spark  # noqa: F401  (the session the PySpark client tests share)
from tests.spark_client.plans import wire

pytest.importorskip("pyspark")

SALTED = "ssn"
PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StubService]:
    with stub_service(wire(write_table(tmp_path_factory.mktemp("restricted")))) as stub:
        yield stub


def _checked(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows, their salted hashes checked for what a query's must be, and left out."""
    by_id = {r["id"]: r for r in rows}
    assert by_id[1][SALTED] == by_id[7][SALTED] != by_id[8][SALTED]  # rows 1 and 7: one raw ssn, two tasks
    assert all(len(r[SALTED]) == 64 and int(r[SALTED], 16) >= 0 for r in rows if r[SALTED] is not None)
    return [{k: v for k, v in r.items() if k != SALTED} for r in sorted(rows, key=lambda r: r["id"])]


def _collected(df: Any) -> list[dict[str, Any]]:
    return [row.asDict(recursive=True) for row in df.collect()]


EXPECTED = [{k: v for k, v in r.items() if k != SALTED} for r in expected_rows(b"\0" * 16)]


@pytest.mark.parametrize("limit", [None, 0], ids=["inline", "by-id"])
def test_plan_and_read_enforces_them(spark: Any, service: StubService, limit: int | None) -> None:  # noqa: F811
    from spark_client import plan_and_read

    df = plan_and_read(spark, "db.t", service_url=service.url, inline_task_limit=limit)
    rows = _collected(df)
    assert _checked(rows) == EXPECTED
    again = {r["id"]: r[SALTED] for r in _collected(plan_and_read(spark, "db.t", service_url=service.url))}
    assert again[1] != {r["id"]: r[SALTED] for r in rows}[1]  # another query, another salt
    # a filter Spark evaluates on the reader's rows: the raw address matches nothing, its mask two rows
    assert df.filter(df.email == SPEC_EMAIL).count() == 0
    assert sorted(r.id for r in df.filter(df.email == mask_alphanum(SPEC_EMAIL)).collect()) == [1, 8]
    assert {c for _, _, c in service.requests} == {"read-restrictions"}  # (else the stub answers 403)


@pytest.mark.parametrize("driver_read_bytes", [0, 1 << 30], ids=["spark-job", "in-driver"])
def test_aggregate_reads_enforced_rows(spark: Any, service: StubService, driver_read_bytes: int) -> None:  # noqa: F811
    from spark_client import aggregate

    names = ["count(*)", "max(email)", "min(card)", "count(amount)"]
    row = aggregate(spark, "db.t", names, service_url=service.url, driver_read_bytes=driver_read_bytes).first()
    assert row is not None
    expected = [
        len(EXPECTED),
        max(r["email"] for r in EXPECTED),
        min(r["card"] for r in EXPECTED),
        sum(r["amount"] is not None for r in EXPECTED),
    ]
    assert list(row) == expected


def test_the_data_source_enforces_them(spark: Any, service: StubService) -> None:  # noqa: F811
    pytest.importorskip("pyspark.sql.datasource", reason="Python data sources need pyspark >= 4.0")
    from spark_client import ScanPlannerDataSource

    spark.dataSource.register(ScanPlannerDataSource)
    df = spark.read.format("scan-planner").option("service-url", service.url).load("db.t")
    assert _checked(_collected(df)) == EXPECTED
    masked = df.filter(df.email == mask_alphanum(SPEC_EMAIL))
    assert sorted(r.id for r in masked.collect()) == [1, 8]


def test_pushed_filters_are_applied_by_the_reader_to_masked_values(spark: Any, service: StubService) -> None:  # noqa: F811
    """With filter pushdown on (Spark 4.1+), Spark hands the email filter to the source, which sends it with
    the plan request; the plan's filter is then the reader's to apply, after masking, and Spark does not
    filter again (no Filter in its plan): the raw address keeps nothing, the masked one rows 1 and 8."""
    reader = pytest.importorskip("pyspark.sql.datasource").DataSourceReader
    if not hasattr(reader, "pushFilters"):
        pytest.skip("filter pushdown needs pyspark >= 4.1")
    from spark_client import ScanPlannerDataSource

    spark.dataSource.register(ScanPlannerDataSource)
    spark.conf.set(PUSHDOWN, "true")
    try:
        df = spark.read.format("scan-planner").option("service-url", service.url).load("db.t")
        raw = df.filter(df.email == SPEC_EMAIL)
        assert re.search(r"\bFilter\b", raw._jdf.queryExecution().executedPlan().toString()) is None
        assert raw.count() == 0
        assert {"type": "eq", "term": "email", "value": SPEC_EMAIL} in service.filters[-1].values()  # (and not-null)
        masked = df.filter(df.email == mask_alphanum(SPEC_EMAIL))
        assert sorted(r.id for r in masked.collect()) == [1, 8]
    finally:
        spark.conf.unset(PUSHDOWN)

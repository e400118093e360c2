"""grouping="partition" from Spark: one Spark partition per task, each holding rows of one partition tuple,
partitions in key order (nulls first), the same rows as the ungrouped read; through plan_and_read (by
payload and by plan id) and the data source's `grouping` option."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from spark_client import plan_and_read
from tests.spark_client.compare import rows

pytest.importorskip("pyspark")
TABLE = "db.identity_part"
SPLIT = {"split-size": 2048, "file-open-cost": 64}


def _categories_by_partition(df: Any) -> list[list[Any]]:
    """The distinct category of each Spark partition, in partition order."""
    found: list[list[Any]] = df.rdd.mapPartitions(lambda it: [sorted({r["category"] for r in it}, key=str)]).collect()
    return found


def _check_grouped(df: Any, whole: Any, tasks: int) -> None:
    assert df.rdd.getNumPartitions() == tasks
    groups = _categories_by_partition(df)
    assert all(len(g) == 1 for g in groups)  # (a partition per task, none empty)
    keys = [g[0] for g in groups]
    assert keys == sorted(keys, key=lambda k: (k is not None, k or ""))  # key order, nulls first
    assert rows(df.toArrow()) == rows(whole.toArrow())  # (pyspark 4's DataFrame.toArrow)


@pytest.mark.parametrize("inline_task_limit", [None, 0], ids=["inline", "by-id"])
def test_plan_and_read_groups_by_partition(spark: Any, conformance_service: str, inline_task_limit: int | None) -> None:
    import httpx

    body = {"table": TABLE, "options": SPLIT, "grouping": "partition"}
    tasks = httpx.post(f"{conformance_service}/plan", json=body, timeout=60).json()["task-count"]
    df = plan_and_read(
        spark,
        TABLE,
        grouping="partition",
        options=SPLIT,
        inline_task_limit=inline_task_limit,
        service_url=conformance_service,
    )
    whole = plan_and_read(spark, TABLE, options=SPLIT, service_url=conformance_service)
    _check_grouped(df, whole, tasks)


def test_the_data_source_groups_by_partition(spark: Any, conformance_service: str) -> None:
    pytest.importorskip("pyspark.sql.datasource", reason="Python data sources need pyspark >= 4.0")
    from spark_client import ScanPlannerDataSource

    spark.dataSource.register(ScanPlannerDataSource)
    body = {"table": TABLE, "options": SPLIT, "grouping": "partition"}
    tasks = httpx.post(f"{conformance_service}/plan", json=body, timeout=60).json()["task-count"]
    reader = spark.read.format("scan-planner").option("service-url", conformance_service)
    reader = reader.option("split-size", "2048").option("file-open-cost", "64")
    df = reader.option("grouping", "partition").load(TABLE)
    whole = reader.load(TABLE)
    _check_grouped(df, whole, tasks)

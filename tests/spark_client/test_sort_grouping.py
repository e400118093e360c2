"""grouping="sort-order" from Spark, on tables Iceberg wrote WRITE ORDERED BY (each file sorted): one Spark
partition per task, and each partition's rows already in the table's order, as Spark itself ranks them
(dense_rank over the sort key, a window of Spark's own ordering), with the ungrouped read's rows; through
plan_and_read (by payload and by plan id) and the data source's `grouping` option."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from spark_client import plan_and_read
from tests.spark_client.compare import rows

pytest.importorskip("pyspark")
SPLIT = {"split-size": 4096, "file-open-cost": 64}
# each table's sort key as Spark SQL ORDER BY terms (days(ts) is the date of ts in the UTC session)
ORDER = {
    "db.sorted_multi": "category ASC NULLS LAST, amount DESC NULLS FIRST",
    "db.sorted_ids": "id ASC NULLS FIRST",
    "db.sorted_transforms": "to_date(ts) DESC NULLS LAST, name ASC NULLS FIRST",
}


def _out_of_order(df: Any, order: str) -> list[Any]:
    """The rows that come before a row ranked lower in their Spark partition (none when each is in order)."""
    from pyspark.sql import functions as F

    spark = df.sparkSession
    marked = df.select("*", F.spark_partition_id().alias("_pid"), F.monotonically_increasing_id().alias("_pos"))
    marked.createOrReplaceTempView("_marked")
    ranked = spark.sql(f"SELECT _pid, _pos, dense_rank() OVER (ORDER BY {order}) AS _rank FROM _marked")
    ranked.createOrReplaceTempView("_ranked")
    found: list[Any] = spark.sql(
        "SELECT * FROM (SELECT _pid, _pos, _rank, lag(_rank) OVER (PARTITION BY _pid ORDER BY _pos) AS _before"
        " FROM _ranked) WHERE _before > _rank"
    ).collect()
    return found


@pytest.mark.parametrize("table", sorted(ORDER))
@pytest.mark.parametrize("inline_task_limit", [None, 0], ids=["inline", "by-id"])
def test_each_partition_reads_in_the_tables_order(
    spark: Any, conformance_service: str, table: str, inline_task_limit: int | None
) -> None:
    body = {"table": table, "options": SPLIT, "grouping": "sort-order"}
    tasks = httpx.post(f"{conformance_service}/plan", json=body, timeout=60).json()["task-count"]
    df = plan_and_read(
        spark,
        table,
        grouping="sort-order",
        options=SPLIT,
        inline_task_limit=inline_task_limit,
        service_url=conformance_service,
    )
    assert df.rdd.getNumPartitions() == tasks
    assert _out_of_order(df, ORDER[table]) == []
    whole = plan_and_read(spark, table, options=SPLIT, service_url=conformance_service)
    assert rows(df.toArrow()) == rows(whole.toArrow())


def test_without_the_grouping_partitions_mix_the_order(spark: Any, conformance_service: str) -> None:
    """The check above can fail: ungrouped, Java's packing puts overlapping files in one partition (whether a
    given table's does depends on the sizes Spark wrote its files in, so over all the sorted tables)."""
    mixed = [
        table
        for table in sorted(ORDER)
        if _out_of_order(plan_and_read(spark, table, options=SPLIT, service_url=conformance_service), ORDER[table])
    ]
    assert mixed != []


def test_the_data_source_orders_by_the_sort_order(spark: Any, conformance_service: str) -> None:
    pytest.importorskip("pyspark.sql.datasource", reason="Python data sources need pyspark >= 4.0")
    from spark_client import ScanPlannerDataSource

    spark.dataSource.register(ScanPlannerDataSource)
    reader = spark.read.format("scan-planner").option("service-url", conformance_service)
    reader = reader.option("split-size", str(SPLIT["split-size"])).option("file-open-cost", "64")
    df = reader.option("grouping", "sort-order").load("db.sorted_multi")
    assert _out_of_order(df, ORDER["db.sorted_multi"]) == []
    assert rows(df.toArrow()) == rows(reader.load("db.sorted_multi").toArrow())

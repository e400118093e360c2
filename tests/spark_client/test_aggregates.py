"""spark_client.aggregate on pyspark 4 against Spark + Iceberg 1.10.2's answers (read_cases.AGGREGATE_CASES):
the same values as Spark's aggregates over the rows in every case; answered from metadata (a local
DataFrame: no Spark job, no data file read) wherever Iceberg's aggregate push-down answers
from metadata, except where the service is knowingly stricter; otherwise read through plan_and_read."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from spark_client import aggregate
from spark_client.aggregates import DRIVER_READ_BYTES, estimated_read_bytes
from spark_client.schema import spark_schema
from tests.aggregate_values import comparable, spark_row_values
from tests.conformance.read_cases import AGGREGATE_CASES
from tests.conformance.reference import Conformance
from tests.spark_client.compare import snapshot_arguments

pytest.importorskip("pyspark")


def jobs(spark: Any) -> set[int]:
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup())


def from_metadata(spark: Any, build: Any) -> tuple[Any, bool]:
    """The DataFrame `build()` makes, and whether no Spark job read the table for it: none while aggregate()
    ran (it reads the rows at once when it reads any) and no reader (MapInArrow) left in its plan."""
    before = jobs(spark)
    df = build()
    plan: str = df._jdf.queryExecution().executedPlan().toString()
    return df, jobs(spark) == before and "MapInArrow" not in plan


@pytest.mark.parametrize("driver_read_bytes", [0, DRIVER_READ_BYTES], ids=["spark-job", "in-driver"])
@pytest.mark.parametrize("case_id", [c["id"] for c in AGGREGATE_CASES])
def test_aggregate_equals_spark_and_iceberg(
    spark: Any,
    conformance: Conformance,
    conformance_service: str,
    case_id: str,
    driver_read_bytes: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Read by a Spark job (driver_read_bytes=0) or, as these small tables are by default, in the driver:
    Spark + Iceberg's values either way; from metadata exactly where it answers so (the log says which)."""
    case = conformance.aggregate(case_id)
    with caplog.at_level(logging.INFO, logger="spark_client.aggregates"):
        arguments = {
            "filter": case["filter"],
            "driver_read_bytes": driver_read_bytes,
            **snapshot_arguments(case["snapshot"]),
        }
        df, no_job = from_metadata(
            spark,
            lambda: aggregate(
                spark, f"db.{case['table']}", case["aggregates"], service_url=conformance_service, **arguments
            ),
        )
    assert df.columns == case["aggregates"]
    types = [f.dataType.simpleString() for f in df.schema.fields]
    assert spark_row_values(df) == comparable(case["read_values"], types)
    metadata = any("from metadata" in r.getMessage() for r in caplog.records)
    assert metadata == (case["pushed"] and case["stricter"] is None), case_id
    assert no_job == (metadata or driver_read_bytes > 0), case_id  # the driver reads small tables itself


def test_a_read_says_why(spark: Any, conformance_service: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="spark_client.aggregates"):
        read = lambda: aggregate(  # noqa: E731
            spark,
            "db.mor_position_deletes",
            ["count(*)", "max(id)"],
            service_url=conformance_service,
            driver_read_bytes=0,
        )
        _, no_job = from_metadata(spark, read)
    assert not no_job
    (message,) = [r.getMessage() for r in caplog.records if "read from the rows" in r.getMessage()]
    assert message.count("have delete files") == 1, message  # one reason, said once


def test_aggregates_are_a_list(spark: Any, conformance_service: str) -> None:
    with pytest.raises(TypeError, match="not a string"):
        aggregate(spark, "db.unpartitioned", "count(*)", service_url=conformance_service)


ESTIMATED_TYPES: list[Any] = [
    "boolean",
    "int",
    "long",
    "float",
    "double",
    "date",
    "time",
    "timestamp",
    "timestamptz",
    "string",
    "uuid",
    "binary",
    "fixed[16]",
    "decimal(9,2)",
    "decimal(38,10)",
    {"type": "struct", "fields": [{"id": 9, "name": "a", "required": False, "type": "int"}]},
    {"type": "list", "element-id": 9, "element": "string", "element-required": False},
    {"type": "map", "key-id": 9, "key": "string", "value-id": 10, "value": "double", "value-required": False},
]


@pytest.mark.parametrize("typ", ESTIMATED_TYPES, ids=str)
def test_read_bytes_are_estimated_as_spark_sizes_a_scan(spark: Any, typ: Any) -> None:
    """estimated_read_bytes: the rows (each split's share of its file's records, by bytes) times the size
    Spark itself gives the column's Spark type (DataType.defaultSize, what Spark + Iceberg's scan estimate
    multiplies the rows by), asked of Spark's JVM."""
    fields = [
        {"id": 1, "name": "c", "required": False, "type": typ},
        {"id": 2, "name": "n", "required": True, "type": "long"},
    ]
    schema = {"type": "struct", "fields": fields}
    data_file = {"file-path": "/t/a.parquet", "record-count": 1000, "file-size-in-bytes": 4000}
    plan = {
        "schema": schema,
        "files": [{"data-file": data_file}],
        "tasks": [{"splits": [[0, 0, 1000]]}, {"splits": [[0, 1000, 3000]]}],  # a quarter, three quarters
    }
    jvm = spark.sparkContext._jvm
    spark_type = jvm.org.apache.spark.sql.types.DataType.fromJson(spark_schema(schema).json())
    width = int(spark_type.defaultSize())
    assert estimated_read_bytes(plan) == 1000 * width

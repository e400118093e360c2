"""plan_and_read on pyspark 4 (the project's venv): one Spark partition per CombinedScanTask, and the rows
and Spark types of Spark + Iceberg Java's own reads (the conformance read cases), of PyIceberg's reads of
the demo table, and of split files read once."""

from __future__ import annotations

import traceback
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from planner_client import plan_request
from spark_client import PlannerClient, PlannerServiceError, dataframe, plan_and_read
from spark_client.dataframe import spark_parallelism
from tests.conformance.read_cases import PARTITION_COUNT_CASES, READ_CASES
from tests.conformance.reference import Conformance
from tests.conftest import free_port
from tests.plan_wire import splits
from tests.spark_client.compare import assert_spark_read_matches, read_arguments, rows

pytest.importorskip("pyspark")


@pytest.mark.parametrize("by_id", [False, True], ids=["inline", "by-id"])
@pytest.mark.parametrize("read_id", [c["id"] for c in READ_CASES])
def test_read_equals_spark_and_iceberg_java(
    spark: Any, conformance: Conformance, conformance_service: str, read_id: str, by_id: bool
) -> None:
    """Both ways a plan reaches the executors: inline payloads (carried by the mapInArrow function, these
    plans being small), and task indexes each executor fetches."""
    _assert_read(spark, conformance, conformance_service, read_id, 0 if by_id else None)


@pytest.mark.parametrize("read_id", [c["id"] for c in READ_CASES[::6]])
def test_an_inline_plan_too_big_to_carry_is_read_the_same(
    spark: Any, conformance: Conformance, conformance_service: str, read_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third way: an inline plan whose payloads are too big to ride with every task travels as an RDD."""
    monkeypatch.setattr(dataframe, "CARRIED_PAYLOAD_BYTES", 0)
    _assert_read(spark, conformance, conformance_service, read_id, None)


def _assert_read(
    spark: Any, conformance: Conformance, conformance_service: str, read_id: str, limit: int | None
) -> None:
    case = conformance.read(read_id)
    arguments = read_arguments(case)
    df = plan_and_read(
        spark, f"db.{case['table']}", service_url=conformance_service, inline_task_limit=limit, **arguments
    )
    with PlannerClient(conformance_service) as client:
        plan = client.plan(plan_request(f"db.{case['table']}", **arguments, parallelism=spark_parallelism(spark)))
    assert df.rdd.getNumPartitions() == plan["task-count"]
    assert_spark_read_matches(case, df.schema, df.toArrow(), pq.read_table(conformance.dir / case["path"]))


def test_a_limit_reads_fewer_partitions_and_no_more_rows(
    spark: Any, conformance: Conformance, conformance_service: str
) -> None:
    """limit=N: the rows Spark + Iceberg reads, N of them, from the first planned files that hold them."""
    first = conformance.case("many_manifests/current")["files"][0]
    wanted = first["record_count"] + 1  # more than the first file holds: two files planned
    small = {"split-size": 1024}  # a task per file
    limited = plan_and_read(spark, "db.many_manifests", limit=wanted, options=small, service_url=conformance_service)
    whole = plan_and_read(spark, "db.many_manifests", options=small, service_url=conformance_service)
    assert 0 < limited.rdd.getNumPartitions() < whole.rdd.getNumPartitions()
    got = limited.toArrow()
    assert got.num_rows == wanted
    expected = rows(pq.read_table(conformance.dir / conformance.read("many_manifests/full")["path"]))
    assert all(expected.get(row, 0) >= n for row, n in rows(got).items())  # rows of the table, none made up
    nothing = plan_and_read(spark, "db.many_manifests", limit=0, service_url=conformance_service)  # /plan: limit >= 1
    assert nothing.columns == whole.columns and nothing.count() == 0


@pytest.mark.parametrize("index", range(len(PARTITION_COUNT_CASES)))
def test_partitions_equal_spark_and_iceberg(
    spark: Any, conformance: Conformance, conformance_service: str, index: int
) -> None:
    """The session's parallelism travels with the plan: as many partitions as Spark + Iceberg Java makes
    for the same table, options and shuffle partitions (the split size adapts the same way)."""
    recorded = conformance.expected["partition_counts"][index]
    table, shuffle, options = PARTITION_COUNT_CASES[index]
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(shuffle))
    try:
        assert spark_parallelism(spark) == recorded["parallelism"]
        df = plan_and_read(spark, f"db.{table}", options=options or None, service_url=conformance_service)
        assert df.rdd.getNumPartitions() == recorded["partitions"]
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)


def test_split_files_are_read_once(spark: Any, conformance_service: str) -> None:
    """row_groups with 1 KiB splits: many tasks per file, every row once."""
    df = plan_and_read(
        spark, "db.row_groups", columns=["id"], options={"split-size": 1024}, service_url=conformance_service
    )
    with PlannerClient(conformance_service) as client:
        plan = client.plan(plan_request("db.row_groups", columns=["id"], options={"split-size": 1024}))
    files_per_path: dict[str, int] = {}
    for f in splits(plan):
        files_per_path[f["data-file"]["file-path"]] = files_per_path.get(f["data-file"]["file-path"], 0) + 1
    assert max(files_per_path.values()) > 4  # files really were cut into several tasks
    assert df.rdd.getNumPartitions() == plan["task-count"] > len(files_per_path)
    assert sorted(r.id for r in df.collect()) == list(range(5000))


# --- the demo table, against PyIceberg ---------------------------------------------------------------------


def _pyiceberg_rows(table: Any, columns: list[str] | None = None, **scan: Any) -> Any:
    arrow: pa.Table = table.scan(**scan).to_arrow()
    return rows(arrow.select(columns) if columns else arrow)


def test_the_demo_table_as_pyiceberg_reads_it(spark: Any, demo_service: str, demo_table: Any) -> None:
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType, TimestampType

    df = plan_and_read(spark, "demo.events", options={"split-size": 4096}, service_url=demo_service)
    # region and amount are optional: non-nullable when every file's null count, as PyIceberg reads it, is 0
    counts = [task.file.null_value_counts for task in demo_table.scan().plan_files()]
    ids = {name: demo_table.schema().find_field(name).field_id for name in ("region", "amount")}
    proven = {name: all(c is not None and c.get(i) == 0 for c in counts) for name, i in ids.items()}
    assert df.schema == StructType(
        [
            StructField("id", LongType(), False),
            StructField("ts", TimestampType(), False),
            StructField("region", StringType(), not proven["region"]),
            StructField("amount", DoubleType(), not proven["amount"]),
        ]
    )
    with PlannerClient(demo_service) as client:
        tasks = client.plan(plan_request("demo.events", options={"split-size": 4096}))["tasks"]
    assert df.rdd.getNumPartitions() == len(tasks) > 10
    assert rows(df.toArrow()) == _pyiceberg_rows(demo_table)


def test_filter_string_and_columns(spark: Any, demo_service: str, demo_table: Any) -> None:
    df = plan_and_read(
        spark, "demo.events", filter="region = 'eu' AND id < 450", columns=["amount", "id"], service_url=demo_service
    )
    assert df.columns == ["amount", "id"]  # the order asked for; `region`, which only the filter reads, is gone
    expected = _pyiceberg_rows(demo_table, ["amount", "id"], row_filter="region = 'eu' AND id < 450")
    assert rows(df.toArrow()) == expected and 0 < sum(expected.values()) < 450


def test_json_filter_and_time_travel(spark: Any, demo_service: str, demo_table: Any) -> None:
    first = demo_table.snapshot_by_name("first-load")
    history = demo_table.history()
    second = history[1]
    by_tag = plan_and_read(
        spark,
        "demo.events",
        filter={"type": "lt", "term": "id", "value": 120},
        ref="first-load",
        service_url=demo_service,
    )
    assert rows(by_tag.toArrow()) == _pyiceberg_rows(demo_table, snapshot_id=first.snapshot_id, row_filter="id < 120")

    by_id = plan_and_read(spark, "demo.events", snapshot_id=second.snapshot_id, service_url=demo_service)
    as_of = datetime.fromtimestamp(second.timestamp_ms / 1000, tz=UTC)
    by_time = plan_and_read(spark, "demo.events", as_of=as_of, service_url=demo_service)
    expected = _pyiceberg_rows(demo_table, snapshot_id=second.snapshot_id)
    assert rows(by_id.toArrow()) == expected == rows(by_time.toArrow())
    assert sum(expected.values()) == 600


def test_an_empty_plan_is_an_empty_dataframe(spark: Any, demo_service: str) -> None:
    df = plan_and_read(spark, "demo.events", filter="id < 0", columns=["id", "region"], service_url=demo_service)
    assert df.columns == ["id", "region"] and df.rdd.getNumPartitions() == 0 and df.count() == 0


def test_errors_name_the_cause(spark: Any, demo_service: str) -> None:
    with pytest.raises(PlannerServiceError, match=r"demo\.nope") as missing:
        plan_and_read(spark, "demo.nope", service_url=demo_service)
    assert missing.value.status == 404
    with pytest.raises(PlannerServiceError) as bad:
        plan_and_read(spark, "demo.events", columns=["nope"], service_url=demo_service)
    assert bad.value.status == 400 and "nope" in bad.value.message


def test_errors_suggest_what_was_meant(spark: Any, demo_service: str) -> None:
    """The issue's newcomer, on demo.events (id, ts, region, amount; and demo.customers beside it)."""
    with pytest.raises(PlannerServiceError) as table:
        plan_and_read(spark, "demo.event", service_url=demo_service)
    assert table.value.message == "Table does not exist: demo.event (did you mean demo.events?)"
    with pytest.raises(PlannerServiceError) as column:
        plan_and_read(spark, "demo.events", columns=["idd"], service_url=demo_service)
    expected = "Cannot select unknown column 'idd' (did you mean 'id'?); the columns are id, ts, region, amount"
    assert column.value.message == expected
    with pytest.raises(PlannerServiceError) as value:
        plan_and_read(spark, "demo.events", filter="id < 'abc'", service_url=demo_service)
    assert value.value.message == "Cannot compare id (long) with the string 'abc'"


def test_a_service_that_is_not_there_is_said_in_a_few_lines(spark: Any) -> None:
    """The wrong port: the client's error, asking whether the service runs, without httpx's traceback; a URL
    without a scheme refused before anything is asked of anyone."""
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(PlannerServiceError) as refused:
        plan_and_read(spark, "demo.events", service_url=url)
    assert refused.value.message == (
        f"cannot reach the scan-planner service at {url} (connection refused after 4 attempts): "
        "is `scan-planner serve` running there?"
    )
    shown = "".join(traceback.format_exception(refused.value))
    assert "/httpx/" not in shown and shown.count("\n") < 25, shown
    with pytest.raises(PlannerServiceError) as schemeless:
        plan_and_read(spark, "demo.events", service_url="localhost:8181")
    assert schemeless.value.message == "service_url 'localhost:8181' has no scheme: write http://localhost:8181"


@pytest.mark.parametrize("most", [1, 3])
def test_a_plan_by_id_past_the_partition_cap_reads_runs_of_tasks(
    spark: Any, conformance: Conformance, conformance_service: str, most: int
) -> None:
    """spark.sql.files.maxPartitionNum caps a plan fetched by the executors (default DEFAULT_MAX_PARTITIONS, a
    flat driver at any table size): each partition reads a run of consecutive tasks, every row exactly once."""
    case = conformance.read("mor_position_deletes/full")
    small = {"split-size": 4096}
    whole = plan_and_read(
        spark, "db.mor_position_deletes", options=small, inline_task_limit=0, service_url=conformance_service
    )
    assert whole.rdd.getNumPartitions() > most
    spark.conf.set("spark.sql.files.maxPartitionNum", str(most))
    try:
        df = plan_and_read(
            spark, "db.mor_position_deletes", options=small, inline_task_limit=0, service_url=conformance_service
        )
        assert df.rdd.getNumPartitions() == most
        assert rows(df.toArrow()) == rows(pq.read_table(conformance.dir / case["path"]))
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionNum")

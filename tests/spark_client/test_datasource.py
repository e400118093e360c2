"""spark.read.format("scan-planner") on pyspark 4: the schema, one partition per CombinedScanTask, the read
options, Spark + Iceberg Java's rows for every table, and filter pushdown both with the conf on (the
filters join the plan: fewer files planned, no Spark Filter left) and off (the same rows, Spark filters)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest

from planner_client import plan_request
from spark_client import PlannerClient
from tests.conformance.read_cases import READ_CASES
from tests.conformance.reference import Conformance
from tests.spark_client.compare import assert_nullability, rows

pyspark = pytest.importorskip("pyspark")
pytest.importorskip("pyspark.sql.datasource", reason="Python data sources need pyspark >= 4.0")

PUSHDOWN = "spark.sql.python.filterPushdown.enabled"
HAS_PUSH_FILTERS = hasattr(pytest.importorskip("pyspark.sql.datasource").DataSourceReader, "pushFilters")
SNAPSHOT_OPTIONS = {"id": "snapshot-id", "as_of": "as-of-timestamp", "branch": "branch", "tag": "tag"}


@pytest.fixture(scope="module")
def source(spark: Any) -> Iterator[Any]:
    """The session with the data source registered and pushdown off (each test sets what it needs)."""
    from spark_client import ScanPlannerDataSource

    spark.dataSource.register(ScanPlannerDataSource)
    spark.conf.set(PUSHDOWN, "false")
    yield spark
    spark.conf.unset(PUSHDOWN)


def planned_files(service: str) -> tuple[float, float]:
    """The service's counters of data files planned and skipped so far."""
    text = httpx.get(f"{service}/metrics", timeout=10).text
    found = dict(re.findall(r'scan_planner_data_files_total\{outcome="(\w+)"\} ([\d.e+]+)', text))
    return float(found.get("planned", 0)), float(found.get("skipped", 0))


def spark_filters(df: Any) -> bool:
    """Whether Spark's physical plan filters rows (a Filter node; not the scan's RuntimeFilters)."""
    return re.search(r"\bFilter\b", str(df._jdf.queryExecution().executedPlan().toString())) is not None


@pytest.mark.parametrize("by_id", [False, True], ids=["inline", "by-id"])
@pytest.mark.parametrize("read_id", [c["id"] for c in READ_CASES if c["filter"] is None and c["columns"] is None])
def test_reads_equal_spark_and_iceberg_java(
    source: Any, conformance: Conformance, conformance_service: str, read_id: str, by_id: bool
) -> None:
    """Every table's full read (every column type through the source's exact Arrow schema check), time
    travel by each snapshot option, and split files; with tasks inline and fetched by each executor."""
    from pyspark.sql.types import StructType

    case = conformance.read(read_id)
    reader = source.read.format("scan-planner").option("service-url", conformance_service)
    if by_id:
        reader = reader.option("inline-task-limit", "0")
    snapshot = case["snapshot"]
    if snapshot["kind"] in SNAPSHOT_OPTIONS:
        reader = reader.option(SNAPSHOT_OPTIONS[snapshot["kind"]], str(snapshot["value"]))
    if snapshot["kind"] == "appends":  # Spark's incremental read options
        reader = reader.option("start-snapshot-id", str(snapshot["start"]))
        if snapshot["end"] is not None:
            reader = reader.option("end-snapshot-id", str(snapshot["end"]))
    if case["split_size"] is not None:
        reader = reader.option("split-size", str(case["split_size"]))
    df = reader.load(f"db.{case['table']}")
    expected_schema = StructType.fromJson(json.loads(case["spark_schema"]))
    assert [(f.name, f.dataType) for f in df.schema] == [(f.name, f.dataType) for f in expected_schema]
    expected = pq.read_table(conformance.dir / case["path"])
    assert_nullability(case, df.schema, expected_schema, expected)
    assert rows(df.toArrow()) == rows(expected)
    if case["split_size"] is not None:
        with PlannerClient(conformance_service) as client:
            plan = client.plan(plan_request(f"db.{case['table']}", options={"split-size": case["split_size"]}))
        assert df.rdd.getNumPartitions() == plan["task-count"] > 1


def test_the_parallelism_option_adapts_the_split_size(
    source: Any, conformance: Conformance, conformance_service: str
) -> None:
    """Spark + Iceberg's partition counts for the recorded parallelism (the source cannot see its session)."""
    for recorded in conformance.expected["partition_counts"]:
        reader = source.read.format("scan-planner").option("service-url", conformance_service)
        for key, value in recorded["options"].items():
            reader = reader.option(key, value)
        df = reader.option("parallelism", str(recorded["parallelism"])).load(f"db.{recorded['table']}")
        assert df.rdd.getNumPartitions() == recorded["partitions"], recorded


def test_options_columns_filter_and_tag(source: Any, demo_service: str, demo_table: Any) -> None:
    def reader() -> Any:  # a DataFrameReader keeps its options: one per read
        return source.read.format("scan-planner").option("service-url", demo_service)

    df = (
        reader()
        .option("table", "demo.events")
        .option("columns", "amount, id")
        .option("tag", "first-load")
        .option("filter", "id < 120")
        .option("split-size", "2048")
        .load()
    )
    assert df.columns == ["amount", "id"]
    first = demo_table.snapshot_by_name("first-load").snapshot_id
    arrow = demo_table.scan(snapshot_id=first, row_filter="id < 120", selected_fields=("amount", "id")).to_arrow()
    assert rows(df.toArrow()) == rows(arrow.select(["amount", "id"]))
    with PlannerClient(demo_service) as client:
        plan = client.plan(
            plan_request("demo.events", ref="first-load", filter="id < 120", options={"split-size": 2048})
        )
    assert df.rdd.getNumPartitions() == len(plan["tasks"]) > 1

    json_filter = json.dumps({"type": "eq", "term": "region", "value": "us"})
    df = (
        reader()
        .option("filter", json_filter)
        .option("case-sensitive", "false")
        .option("columns", "ID")
        .load("demo.events")
    )
    assert df.columns == ["id"] and df.count() == 300

    # a filter on a column not read: the plan's schema has it, the DataFrame does not
    df = reader().option("columns", "amount").option("filter", "region = 'us' AND id < 30").load("demo.events")
    assert df.columns == ["amount"] and sorted(r.amount for r in df.collect()) == [i * 1.25 for i in range(1, 30, 3)]


def test_bad_options_fail_at_load(source: Any, demo_service: str) -> None:
    def reader() -> Any:
        return source.read.format("scan-planner").option("service-url", demo_service)

    with pytest.raises(Exception, match="needs a table"):
        reader().load()
    with pytest.raises(Exception, match="at most one of the options snapshot-id, branch"):
        reader().option("snapshot-id", "1").option("branch", "main").load("demo.events")
    with pytest.raises(Exception, match=r"demo\.nope"):
        reader().load("demo.nope")
    with pytest.raises(Exception, match="option split-size: not an integer"):
        reader().option("split-size", "big").load("demo.events")


def test_without_pushdown_spark_filters_the_rows(source: Any, demo_service: str) -> None:
    source.conf.set(PUSHDOWN, "false")
    before = planned_files(demo_service)
    df = source.read.format("scan-planner").option("service-url", demo_service).load("demo.events")
    filtered = df.where("region = 'eu' AND id < 100")
    assert sorted(r.id for r in filtered.collect()) == [i for i in range(100) if i % 3 == 0]
    assert spark_filters(filtered)
    after = planned_files(demo_service)
    assert after[1] == before[1]  # no plan skipped a file: the filter never reached the service


@pytest.mark.skipif(not HAS_PUSH_FILTERS, reason="pushFilters arrived in pyspark 4.1")
def test_pushed_filters_join_the_plan(source: Any, demo_service: str) -> None:
    source.conf.set(PUSHDOWN, "true")
    try:
        df = source.read.format("scan-planner").option("service-url", demo_service).load("demo.events")
        before = planned_files(demo_service)
        filtered = df.where("region = 'eu' AND id < 100")
        assert sorted(r.id for r in filtered.collect()) == [i for i in range(100) if i % 3 == 0]
        planned, skipped = (b - a for a, b in zip(before, planned_files(demo_service), strict=True))
        assert skipped > planned > 0  # the service pruned by the pushed filters
        assert not spark_filters(filtered)  # every one of them was taken: Spark filters nothing
        assert filtered.rdd.getNumPartitions() == 1

        # pushed filters AND a user's filter string (rendered as a filter string), and one Spark keeps
        ends_with = df.where("region LIKE '%u' AND id >= 540").select("id", "region")
        assert spark_filters(ends_with)  # StringEndsWith has no planner form
        assert sorted(r.id for r in ends_with.collect()) == [i for i in range(540, 900) if i % 3 == 0]
        with_filter = source.read.format("scan-planner").option("service-url", demo_service)
        both = (
            with_filter.option("filter", "amount >= 100")
            .load("demo.events")
            .where("region IN ('us', 'apac') AND id < 120")
        )
        assert sorted(r.id for r in both.collect()) == [i for i in range(80, 120) if i % 3 == 1]
        nested_not = df.where("NOT (region = 'eu') AND region IS NOT NULL AND ts < TIMESTAMP '2024-01-01 06:00:00'")
        assert sorted(r.id for r in nested_not.collect()) == [1, 4]
    finally:
        source.conf.set(PUSHDOWN, "false")


# Spark conditions on every kind of column of the conformance table all_types (NaN next to numbers, nulls,
# pre-epoch dates, both timestamp types, decimals, nested fields)
ALL_TYPES_WHERE = [  # (condition, whether every filter Spark derives from it has a planner form)
    ("b = true", True),
    ("i > 2 AND l <= 3000000000", True),
    ("f > 1.0", True),
    ("d != 2.25", True),
    ("dec9 > 10.50 OR dec9 IS NULL", False),  # no OR among Spark's pushed filters
    ("dt < DATE '1969-12-25'", True),
    ("ts_ntz >= TIMESTAMP_NTZ '2024-01-04 00:00:00'", True),
    ("ts < TIMESTAMP '2024-01-03 12:00:00'", True),
    ("s IN ('s1-é', 's5-é')", True),
    ("s LIKE 's1%' OR st.y IS NULL", False),
    ("NOT (i = 3) AND s LIKE '%é'", False),  # StringEndsWith stays with Spark
    ("st.x > 2", True),
]


@pytest.mark.skipif(not HAS_PUSH_FILTERS, reason="pushFilters arrived in pyspark 4.1")
def test_pushdown_gives_the_rows_spark_filtering_gives(source: Any, conformance_service: str) -> None:
    source.conf.set(PUSHDOWN, "false")
    everything = source.read.format("scan-planner").option("service-url", conformance_service).load("db.all_types")
    everything = everything.cache()
    try:
        source.conf.set(PUSHDOWN, "true")
        for condition, fully_pushed in ALL_TYPES_WHERE:
            df = source.read.format("scan-planner").option("service-url", conformance_service).load("db.all_types")
            pushed = df.where(condition)
            assert rows(pushed.toArrow()) == rows(everything.where(condition).toArrow()), condition
            assert spark_filters(pushed) != fully_pushed, condition
    finally:
        source.conf.set(PUSHDOWN, "false")
        everything.unpersist()


@pytest.mark.skipif(not HAS_PUSH_FILTERS, reason="pushFilters arrived in pyspark 4.1")
@pytest.mark.parametrize("read_id", ["all_types/binary-gt", "fixed_types/fixed-gt", "fixed_types/fixed-partition-in"])
def test_binary_and_fixed_filters_are_pushed_as_hex(
    source: Any, conformance: Conformance, conformance_service: str, read_id: str
) -> None:
    """Spark's binary values (a fixed column is binary to Spark) join the plan as the REST spec's upper-case
    hex: Spark filters nothing itself, and the rows are those Spark + Iceberg read."""
    case = conformance.read(read_id)
    source.conf.set(PUSHDOWN, "true")
    try:
        df = source.read.format("scan-planner").option("service-url", conformance_service).load(f"db.{case['table']}")
        filtered = df.where(case["spark_filter"])
        assert not spark_filters(filtered)
        assert rows(filtered.toArrow()) == rows(pq.read_table(conformance.dir / case["path"]))
    finally:
        source.conf.set(PUSHDOWN, "false")


@pytest.mark.parametrize("most", [1, 3])
def test_a_plan_by_id_past_max_partitions_reads_runs_of_tasks(
    source: Any, conformance: Conformance, conformance_service: str, most: int
) -> None:
    """max-partitions caps a plan fetched by the executors: each partition reads a run of consecutive tasks,
    every row exactly once (Spark + Iceberg's rows), whatever the plan's task count."""
    case = conformance.read("mor_position_deletes/full")
    with PlannerClient(conformance_service) as client:
        tasks = client.plan({"table": "db.mor_position_deletes", "options": {"split-size": 4096}})["task-count"]
    assert tasks > most
    df = (
        source.read.format("scan-planner")
        .option("service-url", conformance_service)
        .option("inline-task-limit", "0")
        .option("split-size", "4096")
        .option("max-partitions", str(most))
        .load("db.mor_position_deletes")
    )
    assert df.rdd.getNumPartitions() == most
    assert rows(df.toArrow()) == rows(pq.read_table(conformance.dir / case["path"]))

"""plan_and_read: a Spark DataFrame of an Iceberg table, planned by the service, read by the executors.

The driver asks the service for the plan, then builds a dataset with exactly one element per partition, so
that each CombinedScanTask becomes one Spark partition: `spark.range(count, numPartitions=count)`, made in
the JVM, whose element i is task i's index. The function `mapInArrow` runs turns each index into the task's
rows as Arrow batches: for a small plan it carries the tasks' payloads itself (Spark sends it with every
task); a plan answered by id is fetched from the service a task at a time by the executors; an inline plan
too big to send with every task travels as an RDD of its payloads (`parallelize(..., numSlices=task
count)`, whose Python stage costs each task a second Python worker: 30 ms a task, measured). Works on
pyspark 3.5 and 4.x (mapInArrow needs pandas installed, as every pyspark Arrow feature does).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Unpack

import pyarrow as pa

from iceberg_io import StorageConfig
from planner_client import PlannerClient, Scan, ScanArgs, default_service_url
from spark_client.executors import ExecutorCheck, application_id, require_classic
from spark_client.jvm_options import advise_arrow_options
from spark_client.partitions import (
    DEFAULT_MAX_PARTITIONS,
    DEFAULT_MAX_ROWS,
    MAX_PARTITIONS_CONF,
    TaskFunction,
    fetch_task,
    is_inline,
    read_payload,
    task_payloads,
)
from spark_client.planner import planner
from spark_client.restrictions import non_null_field_ids, query_salt
from spark_client.vended import Storage, vended_storage
from spark_client.worker import settle

if TYPE_CHECKING:
    from pyspark import RDD
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "NULLABILITIES",
    "Nullability",
    "arrow_schema",
    "map_tasks",
    "output_schema",
    "plan_and_read",
    "plan_for_spark",
    "read_plan",
]

MAX_ROWS_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"
# An inline plan's payloads ride in the mapInArrow function, which Spark sends with every task, while the
# task count times their size is at most this (30 tasks of 3 KB: 2.7 MB); bigger plans go as an RDD.
CARRIED_PAYLOAD_BYTES = 32 * 1024 * 1024
Nullability = Literal["plan", "table"]
NULLABILITIES: tuple[Nullability, ...] = ("plan", "table")


def spark_parallelism(spark: SparkSession) -> int:
    """SparkReadConf.parallelism(): the larger of the default parallelism and the shuffle partitions."""
    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions") or 200)
    return max(spark.sparkContext.defaultParallelism, shuffle)


def plan_and_read(
    spark: SparkSession,
    table: str | Scan,
    *,
    service_url: str | None = None,
    storage: Storage = None,
    client: PlannerClient | None = None,
    inline_task_limit: int | None = None,
    token: str | None = None,
    nullability: Nullability = "plan",
    **scan: Unpack[ScanArgs],
) -> DataFrame:
    """Plan a scan on the service and read it: one Spark partition per CombinedScanTask.

    table: namespace.name, or a planner_client.Scan; `scan`'s keyword arguments (filter, columns,
      snapshot_id, as_of, ref, start_snapshot_id, end_snapshot_id, options, limit, case_sensitive: see Scan)
      set its fields. The DataFrame's columns are the scan's, in its order; with a limit, at most that many
      rows (DataFrame.limit).
    storage: how the executors reach the object stores: an iceberg_io.StorageConfig, or Iceberg's storage
      properties (s3.endpoint, s3.access-key-id, gcs.*, adls.*); the service's vended credentials go over it.
    service_url: the service's base URL (default: $SCAN_PLANNER_URL in the driver, else http://127.0.0.1:8181).
    client: a PlannerClient to plan with instead of one for `service_url` (timeouts, retries).
    inline_task_limit: plans with more tasks are answered by id and each executor fetches its own task
      (default: the service's setting, 10,000); 0 always does.
    token: the bearer token of a service with authentication on (default: $SCAN_PLANNER_TOKEN in the driver;
      the executors get it from the driver).
    nullability: "plan" (default) declares non-nullable the columns the plan knows to hold no null, which
      spares Spark a null check per value (each batch is checked: a file whose metadata lies fails its task,
      naming the file and column); "table" declares what Spark + Iceberg does, the table's required flags.
    """
    chosen = Scan.of(table, **scan)
    plan, url, token = plan_for_spark(spark, chosen, "plan_and_read", client, service_url, token, inline_task_limit)
    df = read_plan(
        spark, plan, columns=chosen.columns, storage=storage, service_url=url, token=token, nullability=nullability
    )
    return df if chosen.limit is None else df.limit(chosen.limit)


def plan_for_spark(
    spark: SparkSession,
    scan: Scan,
    what: str,
    client: PlannerClient | None,
    service_url: str | None,
    token: str | None,
    inline_task_limit: int | None = None,
) -> tuple[dict[str, Any], str, str | None]:
    """The plan of a scan, for Spark to read (`what`: the caller's name, for errors), with the service URL
    and token its executors use; the session checked to be classic and its executors fit first. The
    session's parallelism joins the request (the split size adapts to it, as Spark + Iceberg's does)."""
    require_classic(spark, what)
    body = scan.request(
        inline_task_limit=inline_task_limit,
        parallelism=spark_parallelism(spark),
        task_estimates=False,  # (a plan by id: its task count is all the driver needs)
    )
    # made first: a service_url it cannot take is refused before Spark runs anything
    with planner(client, service_url, token) as chosen:
        executors = ExecutorCheck(spark)  # once per application, run while the plan is made
        sc = spark.sparkContext
        advise_arrow_options(application_id(sc), lambda key: sc.getConf().get(key))
        plan = chosen.plan(body)
    executors.finish()  # a clear error here, not a worker's traceback later
    return plan, chosen.service_url, chosen.token


def read_plan(
    spark: SparkSession,
    plan: Mapping[str, Any],
    columns: Sequence[str] | None = None,
    storage: Storage = None,
    service_url: str | None = None,
    token: str | None = None,
    nullability: Nullability = "plan",
) -> DataFrame:
    """A DataFrame reading a /plan response's tasks, one partition each (an empty plan: no partitions).

    An inline plan's tasks travel to the executors as payloads; a plan answered by id travels as task
    indexes (the driver never holds its files), and each executor fetches its task from `service_url`
    (with `token`, when the service wants one). `nullability`: as output_schema's."""
    schema = output_schema(plan, columns, nullability)
    return map_tasks(spark, plan, read_payload, schema, storage, service_url, token)


def map_tasks(
    spark: SparkSession,
    plan: Mapping[str, Any],
    per_task: TaskFunction,
    schema: StructType,
    storage: Storage = None,
    service_url: str | None = None,
    token: str | None = None,
) -> DataFrame:
    """A DataFrame of `schema` with one partition per task of `plan`, whose rows `per_task` makes from the
    task's payload on an executor (read_payload: the task's rows; or, say, one row of partial aggregates).
    A restricted plan's payloads carry one salt for the DataFrame's query (restrictions.query_salt)."""
    from pyspark.sql.types import StringType, StructField
    from pyspark.sql.types import StructType as SparkStruct

    count = int(plan["task-count"])
    if count == 0:
        return spark.createDataFrame(spark.sparkContext.emptyRDD(), schema)
    max_rows = int(spark.conf.get(MAX_ROWS_CONF, str(DEFAULT_MAX_ROWS)) or DEFAULT_MAX_ROWS)
    storage_options = vended_storage(plan, storage)  # the service's vended credentials, when it sends them
    salt = query_salt(plan)
    if not is_inline(plan):  # task indexes are the rows of a range made in the JVM: no Python RDD to pickle
        by_id = (service_url or default_service_url(), str(plan["plan-id"]), token, salt)
        tasks = _Tasks(per_task, arrow_schema(schema), storage_options, max_rows, by_id)
        partitions = min(count, max_partitions(spark))  # a partition per task, or runs of them past the cap
        return spark.range(0, count, 1, numPartitions=partitions).mapInArrow(tasks, schema)
    payloads = task_payloads(plan, salt)
    if count * sum(len(p) for p in payloads) <= CARRIED_PAYLOAD_BYTES:
        carried = _Tasks(per_task, arrow_schema(schema), storage_options, max_rows, payloads=tuple(payloads))
        return spark.range(0, count, 1, numPartitions=count).mapInArrow(carried, schema)
    tasks = _Tasks(per_task, arrow_schema(schema), storage_options, max_rows)
    rdd: RDD[tuple[Any]] = spark.sparkContext.parallelize(payloads, numSlices=count).map(lambda payload: (payload,))
    frame = spark.createDataFrame(rdd, SparkStruct([StructField("task", StringType(), nullable=False)]))
    return frame.mapInArrow(tasks, schema)


def max_partitions(spark: SparkSession) -> int:
    """The most partitions a plan by id is read with: spark.sql.files.maxPartitionNum when the session sets
    it, else DEFAULT_MAX_PARTITIONS."""
    value = spark.conf.get(MAX_PARTITIONS_CONF, None)
    return int(value) if value and int(value) > 0 else DEFAULT_MAX_PARTITIONS


class _Tasks:
    """The mapInArrow function: task payloads in, or task indexes (of `payloads`, which it carries, or of
    `plan`, fetched from that service, with the query's salt); each task's batches out (pickled to the
    executors)."""

    def __init__(
        self,
        per_task: TaskFunction,
        schema: pa.Schema,
        storage: StorageConfig,
        max_rows: int,
        plan: tuple[str, str, str | None, bytes | None] | None = None,
        payloads: tuple[str, ...] | None = None,
    ) -> None:
        self.per_task = per_task
        self.schema = schema
        self.storage = storage
        self.max_rows = max(1, max_rows) if max_rows > 0 else DEFAULT_MAX_ROWS
        self.plan = plan
        self.payloads = payloads

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        settle()
        for batch in batches:
            for task in batch.column(0).to_pylist():
                if self.payloads is not None:
                    task = self.payloads[task]
                elif self.plan is not None:
                    url, plan_id, token, salt = self.plan
                    task = fetch_task(url, plan_id, task, token, salt)
                yield from self.per_task(task, self.schema, self.storage, self.max_rows)


def output_schema(
    plan: Mapping[str, Any], columns: Sequence[str] | None = None, nullability: Nullability = "plan"
) -> StructType:
    """The Spark schema of a plan's (projected) Iceberg schema, keeping the top-level columns that `columns`
    name, in their order (a plan's schema may add columns only the filter reads).

    nullability "plan": the columns the plan knows to hold no null (its non-null-field-ids: required, or a
    null count of 0 in every planned file) are declared non-nullable, so that Spark's generated code never
    asks a row of them whether it is null (the reader checks each batch); "table": only the required
    columns, as Spark + Iceberg declares them."""
    from pyspark.sql.types import StructType

    from spark_client.schema import spark_schema

    if nullability not in NULLABILITIES:
        raise ValueError(f"nullability must be one of {NULLABILITIES}, not {nullability!r}")
    non_null = non_null_field_ids(plan) if nullability == "plan" else ()  # (no masked column's: masks write nulls)
    full: StructType = spark_schema(dict(plan["schema"]), non_null)
    if columns is None:
        return full
    by_name = {field.name: field for field in full.fields}
    by_lower = {name.lower(): name for name in by_name}  # the plan's names, for a case-insensitive plan
    keep: list[str] = []
    for column in columns:
        top = column if column in by_name else column.split(".", 1)[0]
        top = top if top in by_name else by_lower.get(top.lower(), top)
        if top not in by_name:
            raise ValueError(f"column {column!r} is not in the plan's schema {list(by_name)}")
        if top not in keep:
            keep.append(top)
    return StructType([by_name[name] for name in keep])


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects for `schema` (timestamps in UTC, non-large strings and binaries)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(schema, timezone="UTC")
    except TypeError:  # pyspark 3.5: no timezone parameter (and UTC is what it uses)
        return to_arrow_schema(schema)

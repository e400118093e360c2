"""`spark.read.format("scan-planner")`: the planner as a Spark 4 Python data source.

    spark.dataSource.register(ScanPlannerDataSource)
    df = spark.read.format("scan-planner").option("service-url", URL).load("demo.events")

schema() plans the scan (answered by id, no task sent back) to learn the projected schema, the snapshot,
which the read then keeps to as Spark + Iceberg does, and the columns that hold no null in it; the reader
plans again in partitions() (the service's caches hold the manifests by then), with the filters Spark
pushed, one InputPartition per CombinedScanTask, and read() yields each task's Arrow batches. With
spark.sql.python.filterPushdown.enabled (Spark 4.1+), Spark's filters reach pushFilters, and those with a
planner translation join the plan's filter.

pyspark checks, when that conf is off, that the reader does not override pushFilters (else the error
DATA_SOURCE_PUSHDOWN_DISABLED), and the reader cannot read session confs. But only Spark's pushdown
planner worker ever calls pushFilters, so reader() returns the subclass that has it exactly when that
worker is the caller, and the plain reader otherwise.

Spark's Python workers unpickle these classes (the source, its readers, its partitions) before they run any
of them; a worker whose Python cannot import what they need raises ExecutorEnvironmentError, naming the
missing packages, PYSPARK_PYTHON and how to ship the client (environment.WorkerChecked), not a
ModuleNotFoundError.

This module needs pyspark >= 4.0 (pyspark.sql.datasource); `import spark_client` does not import it.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import pyarrow as pa

try:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
except ImportError as exc:  # pyspark 3.5 has no Python data sources
    raise ImportError(
        "spark_client.datasource needs pyspark >= 4.0 (pyspark.sql.datasource); on pyspark 3.5 "
        "use spark_client.plan_and_read"
    ) from exc
from pyspark.sql.types import StructType

from iceberg_io import StorageConfig
from planner_client import TOKEN_VARIABLE, URL_VARIABLE, Scan, default_service_url
from planner_client.scan import GROUPINGS, Grouping
from spark_client.dataframe import NULLABILITIES, arrow_schema, output_schema
from spark_client.environment import WorkerChecked
from spark_client.filters import conjunction, to_rest_expression
from spark_client.jvm_options import advise_from_jvm
from spark_client.partitions import (
    DEFAULT_MAX_PARTITIONS,
    DEFAULT_MAX_ROWS,
    is_inline,
    read_payload,
    read_task_by_index,
    task_payloads,
    task_ranges,
)
from spark_client.planner import planner
from spark_client.restrictions import query_salt
from spark_client.vended import vended_storage
from spark_client.worker import settle

__all__ = ["FORMAT", "OPTIONS", "ScanPlannerDataSource"]

T = TypeVar("T", bound=str)

FORMAT = "scan-planner"
# The read options, named as Iceberg's Spark reads name them where Iceberg has them.
OPTIONS = {
    "table": 'namespace.name (or load("namespace.name"))',
    "service-url": f"the planner's base URL (default: ${URL_VARIABLE} in the driver, else http://127.0.0.1:8181)",
    "token": f"the bearer token of a service with authentication on (default: ${TOKEN_VARIABLE} in the driver)",
    "columns": "comma-separated column names to read (default: all)",
    "filter": "a row filter: a filter string, or a REST JSON expression (starting with '{')",
    "case-sensitive": "true (default) or false: how the planner resolves column names",
    "snapshot-id": "read this snapshot",
    "as-of-timestamp": "read the snapshot current at this time (epoch milliseconds)",
    "branch": "read the head of this branch",
    "tag": "read this tag",
    "parallelism": "the session's parallelism, for the adaptive split size (a data source cannot see the session)",
    "start-snapshot-id": "an incremental append scan: the rows appended after this snapshot (exclusive)",
    "end-snapshot-id": "with start-snapshot-id: up to this snapshot (inclusive; default: the current one)",
    "grouping": "partition: one Spark partition per task of one partition tuple, in key order; sort-order: also "
    "files in the table's sort order, none of a partition overlapping (default none)",
    "split-size": "target split size in bytes (read.split.target-size)",
    "lookback": "bin-packing lookback (read.split.planning-lookback)",
    "file-open-cost": "the weight of opening a file, in bytes (read.split.open-file-cost)",
    "max-records-per-batch": f"the most rows in an Arrow batch given to Spark (default {DEFAULT_MAX_ROWS})",
    "inline-task-limit": "plans with more tasks are fetched by each executor from the service (default: its setting)",
    "max-partitions": "a plan fetched by the executors is read by at most this many partitions, each reading a run "
    f"of consecutive tasks (default {DEFAULT_MAX_PARTITIONS:,})",
    "nullability": "plan (default): columns the plan knows to hold no null are declared non-nullable (each batch "
    "is checked); table: only the table's required columns, as Spark + Iceberg declares them",
    "storage.<key>": "passed to the executors' reader as storage[<key>], e.g. S3 endpoint and credentials",
}
_SPLIT_OPTIONS = ("split-size", "lookback", "file-open-cost")
_SNAPSHOT_OPTIONS = ("snapshot-id", "as-of-timestamp", "branch", "tag")
_PUSHDOWN_WORKER = "data_source_pushdown_filters.py"  # pyspark/sql/worker/, the only caller of pushFilters


class ScanPlannerDataSource(DataSource, metaclass=WorkerChecked):
    """`spark.read.format("scan-planner")`: an Iceberg table planned by the scan planner, one Spark partition
    per task (pyspark 4; its read options are OPTIONS)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def __init__(self, options: Mapping[str, str]) -> None:
        super().__init__(options)  # type: ignore[arg-type]
        self.scan = scan_of(options)
        self.inline_task_limit = (
            _int(options["inline-task-limit"], "inline-task-limit") if options.get("inline-task-limit") else None
        )
        self.parallelism = _positive_int(options, "parallelism", 1) if options.get("parallelism") else None
        self.service_url = options.get("service-url") or default_service_url()
        self.token = options.get("token") or os.environ.get(TOKEN_VARIABLE) or None
        storage = {key[len("storage.") :]: value for key, value in options.items() if key.startswith("storage.")}
        self.storage = StorageConfig.from_properties(storage)
        self.max_rows = _positive_int(options, "max-records-per-batch", DEFAULT_MAX_ROWS)
        self.max_partitions = _positive_int(options, "max-partitions", DEFAULT_MAX_PARTITIONS)
        self.nullability = _choice(options, "nullability", NULLABILITIES)

    def schema(self) -> StructType:
        """The scan planned (by id: no task comes back) for its schema, the snapshot the read then keeps to,
        and which columns hold no null in it. (Spark pickles the source after this call, with what it
        learned.)"""
        advise_from_jvm()  # (this runs in a Python worker: the JVM's command line says what the conf would)
        with planner(None, self.service_url, self.token) as client:
            plan = client.plan(
                self.scan.request(inline_task_limit=0, parallelism=self.parallelism, task_estimates=False)
            )
        snapshot = plan.get("snapshot-id")
        if snapshot is not None:  # Spark + Iceberg, too, reads the snapshot it analyzed the query with
            if self.scan.start_snapshot_id is not None:
                self.scan = Scan.of(self.scan, end_snapshot_id=int(snapshot))
            else:
                self.scan = Scan.of(self.scan, snapshot_id=int(snapshot), as_of=None, ref=None)
        return output_schema(plan, self.scan.columns, self.nullability)

    def reader(self, schema: StructType) -> DataSourceReader:
        reader_class = _PushdownReader if _called_by(_PUSHDOWN_WORKER) else _Reader
        return reader_class(self, schema)


class _Reader(DataSourceReader, metaclass=WorkerChecked):
    def __init__(self, source: ScanPlannerDataSource, schema: StructType) -> None:
        self.source = source
        self.service_url = source.service_url
        self.token = source.token  # the driver's, for the executors too
        self.storage = source.storage
        self.max_rows = source.max_rows
        self.max_partitions = source.max_partitions
        self.schema = schema
        self.arrow_schema = arrow_schema(schema)
        self.pushed: list[dict[str, Any]] = []

    def partitions(self) -> list[InputPartition]:
        source = self.source
        scan = Scan.of(source.scan, filter=conjunction(self.pushed, source.scan.filter))
        body = scan.request(
            inline_task_limit=source.inline_task_limit,
            parallelism=source.parallelism,
            task_estimates=False,  # a plan by id: its task count is all the driver needs
        )
        with planner(None, self.service_url, self.token) as client:
            plan = client.plan(body)
        storage = vended_storage(plan, self.storage)
        salt = query_salt(plan)  # one for the query: every task of a restricted plan hashes with it
        planned = {field["name"] for field in plan["schema"]["fields"]}
        missing = [name for name in self.schema.fieldNames() if name not in planned]
        if missing:
            raise ValueError(
                f"columns {missing} are not in {source.scan.table} (it changed since the query was "
                f"analyzed, or a user schema names them): it has {sorted(planned)}"
            )
        if is_inline(plan):
            return [_Task(payload, storage) for payload in task_payloads(plan, salt)]
        plan_id = str(plan["plan-id"])  # partitions carry what the executor needs to fetch its tasks
        ranges = task_ranges(int(plan["task-count"]), self.max_partitions)
        return [_Task((self.service_url, plan_id, start, end), storage, salt) for start, end in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        settle()
        value: str | tuple[str, str, int, int] | None = partition.value
        if value is None:  # an empty plan: Spark reads one partition of nothing
            return iter(())
        storage = partition.storage if isinstance(partition, _Task) else self.storage
        if isinstance(value, tuple):
            url, plan_id, start, end = value
            salt = partition.salt if isinstance(partition, _Task) else None
            return (
                batch
                for index in range(start, end)
                for batch in read_task_by_index(
                    url, plan_id, index, self.arrow_schema, storage, self.max_rows, self.token, salt
                )
            )
        return read_payload(value, self.arrow_schema, storage, self.max_rows)


class _Task(InputPartition, metaclass=WorkerChecked):
    """A task's partition: the task (its payload, or where to fetch it), the storage settings its files
    are read with, the plan's vended credentials included, and the query's salt for a restricted plan's
    tasks fetched by id (an inline payload carries it) (what partitions() learns stays in the driver's
    reader: only the partitions travel with it)."""

    def __init__(
        self, value: str | tuple[str, str, int, int], storage: StorageConfig, salt: bytes | None = None
    ) -> None:
        super().__init__(value)
        self.storage = storage
        self.salt = salt


class _PushdownReader(_Reader):
    def pushFilters(self, filters: list[Any]) -> Iterable[Any]:
        """Push what translates into the plan's filter; return the rest, for Spark to evaluate."""
        kept = []
        for spark_filter in filters:
            expression = to_rest_expression(spark_filter)
            if expression is None:
                kept.append(spark_filter)
            else:
                self.pushed.append(expression)
        return kept


def scan_of(options: Mapping[str, str]) -> Scan:
    """The scan a read's options ask for (ValueError for a missing table or a bad value)."""
    table = options.get("table") or options.get("path")
    if not table:
        raise ValueError(f'the {FORMAT} source needs a table: .option("table", "ns.name") or .load("ns.name")')
    user_filter: str | dict[str, Any] | None = options.get("filter") or None
    if isinstance(user_filter, str) and user_filter.lstrip().startswith("{"):
        try:
            user_filter = json.loads(user_filter)
        except ValueError as exc:
            raise ValueError(f"option filter: not a JSON expression: {exc}") from None
    columns = options.get("columns")
    chosen = [key for key in _SNAPSHOT_OPTIONS if options.get(key)]
    if len(chosen) > 1:
        raise ValueError(f"give at most one of the options {', '.join(chosen)}")
    refs = [options[key] for key in ("branch", "tag") if options.get(key)]

    def number(option: str) -> int | None:
        text = options.get(option)
        return _int(text, option) if text else None

    return Scan(
        table,
        filter=user_filter,
        columns=[c.strip() for c in columns.split(",") if c.strip()] if columns else None,
        snapshot_id=number("snapshot-id"),
        as_of=number("as-of-timestamp"),
        ref=refs[0] if refs else None,
        start_snapshot_id=number("start-snapshot-id"),
        end_snapshot_id=number("end-snapshot-id"),
        options={key: _positive_int(options, key, 0) for key in _SPLIT_OPTIONS if options.get(key)},
        case_sensitive=_bool(options.get("case-sensitive", "true"), "case-sensitive"),
        grouping=_grouping(options.get("grouping") or "none"),
    )


def _grouping(value: str) -> Grouping:
    for grouping in GROUPINGS:
        if value == grouping:
            return grouping
    raise ValueError(f"option grouping must be one of {', '.join(GROUPINGS)}, not {value!r}")


def _called_by(filename: str) -> bool:
    """Whether a caller up the stack runs code of the file named `filename`."""
    frame = inspect.currentframe()
    while frame is not None:
        if frame.f_code.co_filename.endswith(filename):
            return True
        frame = frame.f_back
    return False


def _int(text: str, option: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"option {option}: not an integer: {text!r}") from None


def _positive_int(options: Mapping[str, str], option: str, default: int) -> int:
    text = options.get(option)
    if not text:
        return default
    value = _int(text, option)
    if value <= 0 and option != "file-open-cost":
        raise ValueError(f"option {option}: must be positive, not {value}")
    return value


def _choice(options: Mapping[str, str], option: str, choices: Sequence[T]) -> T:
    """An option that takes one of `choices` (strings; the first is the default)."""
    text = (options.get(option) or str(choices[0])).strip().lower()
    for choice in choices:
        if text == choice:
            return choice
    raise ValueError(f"option {option}: one of {', '.join(map(str, choices))}, not {text!r}")


def _bool(text: str, option: str) -> bool:
    if text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    raise ValueError(f"option {option}: true or false, not {text!r}")

"""One Spark partition per CombinedScanTask, and its read on an executor (Arrow batches shaped as Spark
expects them).

A small plan arrives inline: the driver writes each task out as a self-contained JSON payload (the task,
its files, residuals and delete files, and the plan's schema, specs and name mapping), so that no executor
receives the whole plan. A big plan arrives as a plan id and a task count: the driver holds only task
indexes and each executor fetches its own task from the service (PlannerClient.task), in the same form.
Both readers, plan_and_read's mapInArrow and the Python data source, use these functions. Executor-side
code imports only spark_client and pyarrow, never planner_service.

A restricted plan's query salt (restrictions.query_salt, made once in the driver) rides in every payload
of the query, inline or fetched by id, under restrictions.SALT_KEY.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from spark_client.restrictions import SALT_KEY
from spark_client.vended import Storage

__all__ = [
    "DEFAULT_MAX_PARTITIONS",
    "DEFAULT_MAX_ROWS",
    "MAX_PARTITIONS_CONF",
    "TaskFunction",
    "conform_batch",
    "expand_tasks",
    "fetch_task",
    "is_inline",
    "read_payload",
    "read_task_by_index",
    "task_payloads",
    "task_ranges",
    "with_salt",
]

# A plan answered by id with more tasks than this is read by this many Spark partitions, each reading a run
# of consecutive tasks: the driver then holds the same whatever the table's size (Spark's own cap on file
# partitions, spark.sql.files.maxPartitionNum, sets it when the session does).
MAX_PARTITIONS_CONF = "spark.sql.files.maxPartitionNum"
DEFAULT_MAX_PARTITIONS = 200_000
# Rows per batch handed to Spark when spark.sql.execution.arrow.maxRecordsPerBatch is not known (its default).
DEFAULT_MAX_ROWS = 10_000
# What an executor does with one task: (payload, the Arrow schema of its output, storage settings, the most
# rows in a batch for Spark) -> batches of that schema. read_payload reads the task's rows.
TaskFunction = Callable[[Any, pa.Schema, Storage, int], Iterator[pa.RecordBatch]]
# Plan fields an executor never needs (large, or only for people).
_DRIVER_ONLY = frozenset(
    {
        "tasks",
        "files",
        "residuals",
        "delete-files",
        "file-urls",  # (each payload carries those of its own files)
        "metrics",
        "explain",
        "task-size-bytes",
        "task-estimated-row-count",
    }
)


def task_ranges(count: int, partitions: int) -> list[tuple[int, int]]:
    """`count` tasks as at most `partitions` runs of consecutive tasks [start, end), sizes differing by one
    at most, in task order (as Spark's range splits its rows)."""
    n = max(1, min(count, partitions))
    return [(count * i // n, count * (i + 1) // n) for i in range(n)] if count else []


def task_payloads(plan: Mapping[str, Any], salt: bytes | None = None) -> list[str]:
    """One JSON payload per task of an inline /plan response, in the plan's order (expand_tasks)."""
    return [json.dumps(payload, separators=(",", ":")) for payload in expand_tasks(plan, salt)]


def expand_tasks(plan: Mapping[str, Any], salt: bytes | None = None) -> list[dict[str, Any]]:
    """Each task of an inline /plan response as {"plan": reader context and the task's delete files,
    "task": the task with its files and residuals written out}, with the query's `salt` when it has one:
    what read_payload takes. A plan's presigned URLs (`file-urls`) go with the tasks that read their files."""
    base = {key: value for key, value in plan.items() if key not in _DRIVER_ONLY}
    files: list[dict[str, Any]] = plan["files"]
    residuals: list[Any] = plan.get("residuals") or [True]
    delete_files: list[Any] = plan.get("delete-files") or []
    urls: Mapping[str, str] = plan.get("file-urls") or {}
    payloads = []
    for task in plan["tasks"]:
        splits = task["splits"]
        used = sorted({i for f, _, _ in splits for i in files[f].get("delete-file-references") or ()})
        renumber = {old: new for new, old in enumerate(used)}
        expanded = [
            {
                "data-file": files[f]["data-file"],
                "start": start,
                "length": length,
                "residual-filter": residuals[files[f].get("residual", 0)],
                "delete-file-references": [renumber[i] for i in files[f].get("delete-file-references") or ()],
            }
            for f, start, length in splits
        ]
        task_plan = {**base, "delete-files": [delete_files[i] for i in used]}
        if urls:
            paths = [f["data-file"]["file-path"] for f in expanded] + [delete_files[i]["file-path"] for i in used]
            task_plan["file-urls"] = {path: urls[path] for path in paths if path in urls}
        payloads.append(with_salt({"plan": task_plan, "task": {**task, "files": expanded}}, salt))
    return payloads


def with_salt(payload: dict[str, Any], salt: bytes | None) -> dict[str, Any]:
    """A task payload with the query's salt (none: as it is)."""
    return payload if salt is None else {**payload, SALT_KEY: salt.hex()}


def is_inline(plan: Mapping[str, Any]) -> bool:
    """Whether a /plan response carries its tasks (else they are fetched by index with its plan id)."""
    return "tasks" in plan


def read_payload(
    payload: str | Mapping[str, Any],
    schema: pa.Schema,
    storage: Storage = None,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Read one task: spark_client.reader's batches in Spark's types (schema.to_spark_batch), cut to at most
    `max_rows` rows and conformed to `schema`, the Arrow form of the DataFrame's schema; a null in one of its
    non-nullable columns fails the read (reader.NullInNonNullColumn). `payload`: a task_payloads() string, or
    PlannerClient.task()'s dict."""
    from spark_client.reader import DEFAULT_BATCH_SIZE, read_task
    from spark_client.schema import to_spark_batch

    data = json.loads(payload) if isinstance(payload, str) else payload
    task, plan = data["task"], {**data["plan"], "tasks": [data["task"]]}
    non_null = [f.name for f in schema if not f.nullable]  # checked in every batch, before Spark trusts them
    read_size = -(-DEFAULT_BATCH_SIZE // max_rows) * max_rows  # the per-batch work once per ~64 Ki rows, sliced
    salt = bytes.fromhex(data.get(SALT_KEY) or "")
    reads = read_task(task, plan, storage, batch_size=read_size, columns=schema.names, non_null=non_null, salt=salt)
    for batch in reads:
        yield from _slices(conform_batch(to_spark_batch(batch, plan["schema"]), schema), max_rows)


def read_task_by_index(
    service_url: str,
    plan_id: str,
    index: int,
    schema: pa.Schema,
    storage: Storage = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    token: str | None = None,
    salt: bytes | None = None,
) -> Iterator[pa.RecordBatch]:
    """Fetch task `index` of a plan from the service (with the driver's bearer token), then read it (with
    the query's salt)."""
    yield from read_payload(fetch_task(service_url, plan_id, index, token, salt), schema, storage, max_rows)


def fetch_task(
    service_url: str, plan_id: str, index: int, token: str | None = None, salt: bytes | None = None
) -> dict[str, Any]:
    """Task `index` of a plan answered by id, as the service gives it (PlannerClient.task's payload), with the
    query's salt when it has one."""
    from spark_client.planner import planner

    with planner(None, service_url, token) as client:
        return with_salt(client.task(plan_id, index), salt)


def conform_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """`batch` with exactly `schema`'s columns (by name, in its order) and types (cast where they differ).

    The reader's batches follow the plan's Iceberg schema; Spark wants the Arrow form of its own schema
    (e.g. map entries named key/value, a field's nullability), and a plan may carry columns that only the
    row filter reads.
    """
    if batch.schema.equals(schema):
        return batch
    if batch.schema.names != schema.names:
        missing = [name for name in schema.names if name not in batch.schema.names]
        if missing:
            raise ValueError(f"the reader's batch lacks columns {missing}: it has {batch.schema.names}")
        batch = batch.select(schema.names)
    columns = [
        column if column.type.equals(field.type) else column.cast(field.type)
        for column, field in zip(batch.columns, schema, strict=True)
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _slices(batch: pa.RecordBatch, max_rows: int) -> Iterable[pa.RecordBatch]:
    if batch.num_rows <= max_rows:
        return (batch,) if batch.num_rows else ()
    return (batch.slice(start, max_rows) for start in range(0, batch.num_rows, max_rows))

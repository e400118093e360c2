"""One Spark partition per CombinedScanTask: the task as a self-contained JSON payload (made on the
driver), and its read on an executor (Arrow batches shaped as Spark expects them).

A payload carries one task plus what reading it needs from the plan: the schema, the partition specs, the
name mapping, and only the delete files its own files refer to (renumbered), so that no executor receives
the whole plan. Both readers, plan_and_read's mapInArrow and the Python data source, use these functions.
Executor-side code imports only spark_client and pyarrow, never planner_service.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

__all__ = ["DEFAULT_MAX_ROWS", "conform_batch", "read_payload", "task_payloads"]

# Rows per batch handed to Spark when spark.sql.execution.arrow.maxRecordsPerBatch is not known (its default).
DEFAULT_MAX_ROWS = 10_000
# Plan fields an executor never needs (large, or only for people).
_DRIVER_ONLY = frozenset({"tasks", "delete-files", "metrics", "explain"})


def task_payloads(plan: Mapping[str, Any]) -> list[str]:
    """One JSON string per task of a /plan response, in the plan's order."""
    base = {key: value for key, value in plan.items() if key not in _DRIVER_ONLY}
    delete_files: list[Any] = plan.get("delete-files") or []
    payloads = []
    for task in plan["tasks"]:
        used = sorted({i for file in task["files"] for i in file.get("delete-file-references") or ()})
        renumber = {old: new for new, old in enumerate(used)}
        files = [
            {**file, "delete-file-references": [renumber[i] for i in file.get("delete-file-references") or ()]}
            for file in task["files"]
        ]
        task_plan = {**base, "delete-files": [delete_files[i] for i in used]}
        payloads.append(json.dumps({"plan": task_plan, "task": {**task, "files": files}}, separators=(",", ":")))
    return payloads


def read_payload(
    payload: str, schema: pa.Schema, storage: Mapping[str, Any] | None = None, max_rows: int = DEFAULT_MAX_ROWS
) -> Iterator[pa.RecordBatch]:
    """Read one task: spark_client.reader's batches in Spark's types (schema.to_spark_batch), cut to at most
    `max_rows` rows and conformed to `schema`, the Arrow form of the DataFrame's schema."""
    from spark_client.reader import read_task
    from spark_client.schema import to_spark_batch

    data = json.loads(payload)
    task, plan = data["task"], {**data["plan"], "tasks": [data["task"]]}
    for batch in read_task(task, plan, dict(storage) if storage is not None else None, batch_size=max_rows):
        for piece in _slices(batch, max_rows):
            yield conform_batch(to_spark_batch(piece, plan["schema"]), schema)


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

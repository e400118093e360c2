"""The /plan response body (README "The plan"), encoded from the plan's columns and streamed in chunks.

Each data file, delete file and residual is written once; tasks refer to them by index:

    {"table", "metadata-location", "snapshot-id", "schema", "filter", "partition-specs", ["name-mapping"],
     "split-options", "metrics",
     "residuals":    [expression, ...],
     "delete-files": [DeleteFile, ...],
     "files":        [{"data-file": DataFile, "residual": r, ["delete-file-references": [d, ...]]}, ...],
     "tasks":        [{"size-bytes", "estimated-row-count", "splits": [[file, start, length], ...]}, ...],
     ["explain"]}

Content files use the Iceberg REST spec's DataFile / DeleteFile forms. Data-file objects and tasks are
rendered by polars, a chunk of rows at a time, never one Python dict per file or per task.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson
import polars as pl
import pyarrow as pa

from planner_service.api.content_file_json import ContentFileEncoder, partition_json, partition_types
from planner_service.errors import CorruptMetadataError
from planner_service.expressions.expression_json import expression_to_json
from planner_service.planning.planner import ScanMetrics, ScanPlan
from planner_service.planning.scan_tasks import FileTasks
from planner_service.splitting.combine import CombinedTasks

NAME_MAPPING = "schema.name-mapping.default"
CHUNK_ROWS = 20_000  # data files or tasks rendered at a time


def encode_plan(plan: ScanPlan, schema: dict[str, Any] | None = None, plan_id: str | None = None) -> Iterator[bytes]:
    """The body in chunks; `schema` replaces the plan's (a projection). Raises before the first chunk
    for what can fail (the table's name mapping), so errors still get their status code."""
    return _body(plan, plan_head(plan, schema, plan_id))


def _body(plan: ScanPlan, head: dict[str, Any]) -> Iterator[bytes]:
    files, tasks = plan.files, plan.combined
    yield orjson.dumps(head)[:-1]  # the object stays open
    yield b',"residuals":' + orjson.dumps([expression_to_json(r) for r in files.residuals] if files else [])
    yield b',"delete-files":' + orjson.dumps(_delete_files(plan))
    yield b',"files":['
    if files is not None and len(files):
        yield from _joined(_data_file_chunks(plan, files))
    yield b'],"tasks":['
    if tasks is not None and len(tasks):
        yield from _joined(_task_chunks(tasks))
    yield b"]"
    if plan.explain is not None:
        yield b',"explain":' + orjson.dumps(plan.explain.to_json())
    yield b"}"


def plan_head(plan: ScanPlan, schema: dict[str, Any] | None = None, plan_id: str | None = None) -> dict[str, Any]:
    """Everything but the residuals, files and tasks (small: what a reader needs besides them)."""
    meta = plan.table.metadata
    used_specs = np.unique(plan.files.index.spec_id[plan.files.rows]).tolist() if plan.files else []
    head: dict[str, Any] = {} if plan_id is None else {"plan-id": plan_id}
    head |= {
        "table": plan.table.name,
        "metadata-location": plan.table.metadata_location,
        "snapshot-id": plan.snapshot.snapshot_id if plan.snapshot else None,
        "schema": schema if schema is not None else plan.schema.to_json(),
        "filter": expression_to_json(plan.row_filter),  # what a reader applies to rows with SQL's null rules
        "partition-specs": [meta.specs[s].to_json() for s in used_specs],
    }
    if NAME_MAPPING in meta.properties:  # Parquet files without field ids are read by this mapping
        head["name-mapping"] = _name_mapping(meta.properties)
    head["split-options"] = {
        "split-size": plan.options.split_size,
        "lookback": plan.options.lookback,
        "file-open-cost": plan.options.open_file_cost,
    }
    task_count = len(plan.combined) if plan.combined is not None else 0
    head["task-count"] = task_count
    head["metrics"] = metrics_to_json(plan.metrics, task_count)
    return head


def _delete_files(plan: ScanPlan) -> list[dict[str, Any]]:
    if plan.files is None or not plan.files.delete_files:
        return []
    meta = plan.table.metadata
    encoder = ContentFileEncoder(meta.specs, meta.schema)
    return [encoder.encode(d) for d in plan.files.delete_files]


def _data_file_chunks(plan: ScanPlan, files: FileTasks) -> Iterator[str]:
    meta = plan.table.metadata
    index = files.index
    types = partition_types(meta.specs, meta.schema)
    partitions = np.array(
        [orjson.dumps(partition_json(types, s, v)).decode() for s, v in index.partitions], dtype=object
    )
    columns = index.frame.select(_DATA_FILE_COLUMNS)
    for begin in range(0, len(files), CHUNK_ROWS):
        end = min(begin + CHUNK_ROWS, len(files))
        rows = files.rows[begin:end]
        frame = columns[rows].with_columns(
            pl.Series("spec_id", index.spec_id[rows]),
            pl.Series("partition_json", partitions[index.partition_id[rows]], dtype=pl.String),
            pl.Series("residual", files.residual_id[begin:end]),
            pl.Series("deletes", _delete_refs(files, begin, end), dtype=pl.String),
        )
        yield _render_data_files(frame)


_DATA_FILE_COLUMNS = [
    "file_path", "file_format", "file_size_in_bytes", "record_count", "split_offsets", "sort_order_id",
    "key_metadata", "first_row_id", "data_sequence_number",
]  # fmt: skip


def _render_data_files(frame: pl.DataFrame) -> str:
    """One chunk of `files` entries, comma-separated. Optional fields that no file of the chunk has are
    left out; where only some files have one, the others carry null."""
    head = pl.struct(
        pl.col("spec_id").alias("spec-id"),
        pl.lit("data").alias("content"),
        pl.col("file_path").alias("file-path"),
        pl.col("file_format").str.to_lowercase().alias("file-format"),
    )
    tail = [
        pl.col("file_size_in_bytes").alias("file-size-in-bytes"),
        pl.col("record_count").alias("record-count"),
    ]
    optional = {
        "split_offsets": pl.col("split_offsets").alias("split-offsets"),
        "sort_order_id": pl.col("sort_order_id").alias("sort-order-id"),
        "key_metadata": pl.col("key_metadata").bin.encode("hex").str.to_uppercase().alias("key-metadata"),
        "first_row_id": pl.col("first_row_id").alias("first-row-id"),
        "data_sequence_number": pl.col("data_sequence_number").alias("sequence-number"),
    }
    nulls = frame.select(pl.col(list(optional)).null_count()).row(0)
    tail += [expr for (name, expr), n in zip(optional.items(), nulls, strict=True) if n < frame.height]
    line = pl.concat_str(
        pl.lit('{"data-file":'),
        head.struct.json_encode().str.head(-1),
        pl.lit(',"partition":'),
        pl.col("partition_json"),
        pl.lit(","),
        pl.struct(tail).struct.json_encode().str.slice(1),
        pl.lit(',"residual":'),
        pl.col("residual").cast(pl.String),
        pl.col("deletes"),
        pl.lit("}"),
    )
    return str(frame.select(line.str.join(",")).item())


def _delete_refs(files: FileTasks, begin: int, end: int) -> list[str]:
    """`,"delete-file-references":[...]` per file, empty where none apply (as Java's REST parser writes)."""
    if files.delete_offsets is None:
        return [""] * (end - begin)
    out = []
    for i in range(begin, end):
        refs = files.deletes_of(i)
        out.append(f',"delete-file-references":[{",".join(map(str, refs.tolist()))}]' if len(refs) else "")
    return out


def _task_chunks(tasks: CombinedTasks) -> Iterator[str]:
    for begin in range(0, len(tasks), CHUNK_ROWS):
        end = min(begin + CHUNK_ROWS, len(tasks))
        first, last = int(tasks.offsets[begin]), int(tasks.offsets[end])
        pieces = pl.DataFrame({"file": tasks.file[first:last], "start": tasks.start[first:last],
                               "length": tasks.length[first:last]})  # fmt: skip
        split = pl.concat_str(pl.lit("["), "file", pl.lit(","), "start", pl.lit(","), "length", pl.lit("]"))
        rendered = pieces.select(split).to_series().to_arrow()
        # the task's splits as a list (the pieces of a task are contiguous), joined into one string each
        per_task = pa.LargeListArray.from_arrays(pa.array(tasks.offsets[begin : end + 1] - first), rendered)
        frame = pl.DataFrame({
            "size": tasks.size_bytes[begin:end],
            "rows": tasks.estimated_rows[begin:end],
            "splits": pl.Series(per_task).list.join(","),
        })  # fmt: skip
        line = pl.concat_str(
            pl.lit('{"size-bytes":'),
            pl.col("size").cast(pl.String),
            pl.lit(',"estimated-row-count":'),
            pl.col("rows").cast(pl.String),
            pl.lit(',"splits":['),
            pl.col("splits"),
            pl.lit("]}"),
        )
        yield str(frame.select(line.str.join(",")).item())


def _joined(chunks: Iterator[str]) -> Iterator[bytes]:
    for i, chunk in enumerate(chunks):
        yield (chunk if i == 0 else "," + chunk).encode()


def _name_mapping(properties: dict[str, str]) -> Any:
    try:
        return json.loads(properties[NAME_MAPPING])
    except ValueError:
        raise CorruptMetadataError(f"Table property {NAME_MAPPING} is not valid JSON") from None


def metrics_to_json(m: ScanMetrics, task_count: int) -> dict[str, Any]:
    return {
        "planning-time-ms": round(m.total_planning_ms, 3),
        "stage-time-ms": {k: round(v, 3) for k, v in m.stage_ms.items()},
        "total-data-manifests": m.total_data_manifests,
        "skipped-data-manifests": m.skipped_data_manifests,
        "total-delete-manifests": m.total_delete_manifests,
        "skipped-delete-manifests": m.skipped_delete_manifests,
        "scanned-data-files": m.scanned_data_files,
        "skipped-data-files": m.skipped_data_files,
        "total-delete-files": m.total_delete_files,
        "total-file-size-bytes": m.total_file_size_bytes,
        "total-delete-file-size-bytes": m.total_delete_file_size_bytes,
        "combined-tasks": task_count,
    }

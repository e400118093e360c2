"""The /plan response body (docs/concepts/the-plan.md), encoded from the plan's columns and streamed in chunks.

Each data file, delete file and residual is written once; tasks refer to them by index:

    {"table", "metadata-location", "snapshot-id", "schema", "non-null-field-ids", "filter", "partition-specs",
     ["read-restrictions"], ["name-mapping"], "split-options", ["grouping"], "task-count", "metrics",
     ["storage-credentials"], ["file-urls": {file path: presigned URL}],
     "residuals":    [expression, ...],
     "delete-files": [DeleteFile, ...],
     "files":        [{"data-file": DataFile, "residual": r, ["delete-file-references": [d, ...]]}, ...],
     "tasks":        [{"size-bytes", "estimated-row-count", "splits": [[file, start, length], ...]}, ...],
     ["explain"]}

Content files use the Iceberg REST spec's DataFile / DeleteFile forms. Data-file objects and tasks are
rendered from columns by the compiled renderer (wire/json_rows.py), a chunk of rows at a time, never one
Python dict per file or per task.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson

from planner_service.errors import CorruptMetadataError
from planner_service.expressions.expression_json import expression_to_json
from planner_service.json_text import dumps, parse_json
from planner_service.metadata.json_values import to_json_column, to_json_value
from planner_service.planning.grouping import KeyRanges
from planner_service.planning.planned_files import FileTaskColumns
from planner_service.planning.post_scan import post_scan_filter
from planner_service.planning.read_restriction import reader_json
from planner_service.planning.scan_plan import ScanMetrics, ScanPlan
from planner_service.splitting.combine import CombinedTasks
from planner_service.wire import json_rows as rows
from planner_service.wire.content_file_json import ContentFileEncoder
from planner_service.wire.data_file_rows import CHUNK_ROWS, data_file_chunks

NAME_MAPPING = "schema.name-mapping.default"


def encode_plan(
    plan: ScanPlan,
    plan_id: str | None = None,
    storage_credentials: list[dict[str, Any]] | None = None,
    file_urls: dict[str, str] | None = None,
) -> Iterator[bytes]:
    """The body in chunks; vended `storage_credentials` and presigned `file_urls` (by file path: a restricted
    plan's files, io/presigning.py) go in the head. Raises before the first chunk for what can fail (the
    table's name mapping), so errors still get their status code."""
    head = plan_head(plan, plan_id)
    if storage_credentials:
        head["storage-credentials"] = storage_credentials
    if file_urls:
        head["file-urls"] = file_urls
    return _body(plan, head)


def _body(plan: ScanPlan, head: dict[str, Any]) -> Iterator[bytes]:
    files, tasks = plan.files, plan.combined
    yield dumps(head)[:-1]  # the object stays open
    yield b',"residuals":' + dumps([expression_to_json(r) for r in files.residuals] if files else [])
    yield b',"delete-files":' + orjson.dumps(_delete_files(plan))
    yield b',"files":['
    if files is not None and len(files):
        yield from _data_file_chunks(plan, files)
    yield b'],"tasks":['
    if tasks is not None and len(tasks):
        yield from _task_chunks(tasks, _task_keys(plan), key_ranges_json(plan))
    yield b"]"
    if plan.explain is not None:
        yield b',"explain":' + dumps(plan.explain.to_json())
    yield b"}"


ESTIMATES_PER_CHUNK = 1 << 18  # task estimates rendered at a time (a few MB of JSON)


def encode_deferred(
    plan: ScanPlan, plan_id: str, storage_credentials: list[dict[str, Any]] | None = None, estimates: bool = True
) -> Iterator[bytes]:
    """A plan too big to send inline, in chunks: its id, reader context and (with `estimates`) each task's
    estimates (GET /plans/{id}/tasks fetches the tasks), ESTIMATES_PER_CHUNK of them at a time. It names no
    file, so it carries no presigned URLs: each task fetched carries those of its own files."""
    head = plan_head(plan, plan_id)
    if storage_credentials:
        head["storage-credentials"] = storage_credentials
    tasks = plan.combined
    if not estimates:
        yield dumps(head)
        return
    if tasks is None:  # (a table without snapshots: no tasks)
        yield dumps({**head, "task-size-bytes": [], "task-estimated-row-count": []})
        return
    yield dumps(head)[:-1]  # the object stays open
    yield from _numbers("task-size-bytes", tasks.size_bytes)
    if plan.grouping is not None:  # each task's key, by its index into grouping.keys
        yield from _numbers("task-grouping-key", plan.grouping.task_key)
        ranges = key_ranges_json(plan)
        if ranges is not None:
            yield b',"task-key-range":['
            for begin in range(0, len(ranges), ESTIMATES_PER_CHUNK):
                yield (b"," if begin else b"") + orjson.dumps(ranges[begin : begin + ESTIMATES_PER_CHUNK])[1:-1]
            yield b"]"
    yield from _numbers("task-estimated-row-count", tasks.estimated_rows)
    yield b"}"


def _numbers(key: str, values: np.ndarray[Any, Any]) -> Iterator[bytes]:
    """`,"key":[...]` of a numpy array, a chunk at a time."""
    yield b',"' + key.encode() + b'":['
    for begin in range(0, len(values), ESTIMATES_PER_CHUNK):
        text = dumps(values[begin : begin + ESTIMATES_PER_CHUNK])[1:-1]
        yield b"," + text if begin else text
    yield b"]"


def plan_head(plan: ScanPlan, plan_id: str | None = None) -> dict[str, Any]:
    """Everything but the residuals, files and tasks (small: what a reader needs besides them)."""
    meta = plan.table.metadata
    used_specs = plan.files.spec_ids() if plan.files else []
    head: dict[str, Any] = {} if plan_id is None else {"plan-id": plan_id}
    head |= {
        "table": plan.table.name,
        "metadata-location": plan.table.metadata_location,
        "snapshot-id": plan.snapshot.snapshot_id if plan.snapshot else None,
        "schema": plan.schema.to_json(),  # projected to the selected columns and those the filter reads
        "non-null-field-ids": plan.non_null_field_ids,  # what a reader may declare non-nullable, and checks
        "filter": expression_to_json(plan.row_filter),  # the scan's filter, as asked
        "partition-specs": [meta.specs[s].to_json() for s in used_specs],
    }
    if head["filter"] is not True:  # what a reader applies to rows with SQL's null rules, as Spark does
        head["post-scan-filter"] = expression_to_json(
            post_scan_filter(plan.row_filter, meta.specs, meta.schema, plan.case_sensitive)
        )
    if plan.restriction is not None:  # what the reader must enforce: the row filter, then the masks
        head["read-restrictions"] = reader_json(plan.restriction, meta.schema, plan.schema)
    if NAME_MAPPING in meta.properties:  # Parquet files without field ids are read by this mapping
        head["name-mapping"] = _name_mapping(meta.properties)
    head["split-options"] = {
        "split-size": plan.options.split_size,
        "lookback": plan.options.lookback,
        "file-open-cost": plan.options.open_file_cost,
    }
    if plan.grouping is not None:
        head["grouping"] = {
            "type": plan.grouping.kind,
            "fields": [f.to_json() for f in plan.grouping.fields],
            "keys": grouping_keys_json(plan),
        }
        if plan.grouping.ranges is not None:
            head["grouping"]["sort-order"] = plan.grouping.ranges.key.to_json()
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


def _data_file_chunks(plan: ScanPlan, files: FileTaskColumns) -> Iterator[bytes]:
    meta = plan.table.metadata

    def tail(begin: int, end: int) -> list[rows.Part]:  # "residual": its index, then the file's deletes
        parts = [rows.literal(',"residual":'), rows.ints(files.residual_id[begin:end].astype(np.int64))]
        deletes = _delete_refs(files, begin, end)
        if deletes is not None:
            parts.append(rows.snippets(np.arange(len(deletes)), deletes))
        return parts

    return data_file_chunks(files, meta.specs, meta.schema, tail)


def _delete_refs(files: FileTaskColumns, begin: int, end: int) -> list[str] | None:
    """`,"delete-file-references":[...]` per file, empty where none apply (as Java's REST parser writes);
    None when no file has deletes."""
    if files.delete_offsets is None:
        return None
    out = []
    for i in range(begin, end):
        refs = files.deletes_of(i)
        out.append(f',"delete-file-references":[{",".join(map(str, refs.tolist()))}]' if len(refs) else "")
    return out


def _task_chunks(tasks: CombinedTasks, keys: tuple[Any, list[str]] | None, ranges: list[Any] | None) -> Iterator[bytes]:
    """The tasks' JSON; with `keys` (each task's key id, each key's JSON), each task's grouping key; with
    `ranges` (each task's), each task's key range."""
    for begin in range(0, len(tasks), CHUNK_ROWS):
        end = min(begin + CHUNK_ROWS, len(tasks))
        grouped = [] if keys is None else [rows.literal(',"grouping-key":'), rows.snippets(keys[0][begin:end], keys[1])]
        if ranges is not None:
            texts = [orjson.dumps(r).decode() for r in ranges[begin:end]]
            grouped += [rows.literal(',"key-range":'), rows.snippets(np.arange(end - begin, dtype=np.int64), texts)]
        yield rows.render(
            end - begin,
            [
                rows.literal('{"size-bytes":'),
                rows.ints(tasks.size_bytes[begin:end]),
                rows.literal(',"estimated-row-count":'),
                rows.ints(tasks.estimated_rows[begin:end]),
                rows.literal(',"splits":'),
                rows.splits(tasks.offsets, tasks.file, tasks.start, tasks.length, begin),
                *grouped,
                rows.literal("}"),
            ],
            b"," if begin else b"",
        )


def grouping_keys_json(plan: ScanPlan) -> list[list[Any]]:
    """Each distinct grouping key of a grouped plan, its values in the REST form (as a partition tuple's)."""
    grouping = plan.grouping
    if grouping is None:
        return []
    schema = plan.table.metadata.schema
    types = []
    for f in grouping.fields:
        source = schema.find_field(f.source_id)
        types.append(f.transform.result_type(source.type) if source is not None else None)
    return [
        [to_json_value(t, v) if t is not None else v for t, v in zip(types, key, strict=True)] for key in grouping.keys
    ]


def key_ranges_json(plan: ScanPlan, tasks: slice = slice(None)) -> list[Any] | None:
    """Each task's key range (of `tasks`, all by default) of a plan grouped by sort order: {"first": [...],
    "last": [...]}, the values in the REST form (a NaN as "NaN"), fewer than the key's fields where statistics
    bound no more; null for a task of a file without bounds. None for other plans."""
    grouping = plan.grouping
    if grouping is None or grouping.ranges is None:
        return None
    spans = grouping.ranges.task_spans[tasks]
    ends = [
        _key_column_json(grouping.ranges, [span[end] if span is not None else () for span in spans]) for end in (0, 1)
    ]
    return [None if span is None else {"first": a, "last": b} for span, a, b in zip(spans, *ends, strict=True)]


def _key_column_json(ranges: KeyRanges, keys: list[tuple[Any, ...]]) -> list[list[Any]]:
    """Keys of the sort key's fields (each as long as statistics bound it) in the REST form, field by field."""
    out: list[list[Any]] = [[] for _ in keys]
    for j, field in enumerate(ranges.key.fields):
        holders = [i for i, key in enumerate(keys) if len(key) > j]
        texts = to_json_column(field.result_type, [keys[i][j] for i in holders])
        for i, text in zip(holders, texts, strict=True):
            out[i].append(text)
    return out


def _task_keys(plan: ScanPlan) -> tuple[Any, list[str]] | None:
    if plan.grouping is None:
        return None
    return plan.grouping.task_key, [orjson.dumps(key).decode() for key in grouping_keys_json(plan)]


def _name_mapping(properties: dict[str, str]) -> Any:
    try:
        return parse_json(properties[NAME_MAPPING])
    except ValueError as exc:
        raise CorruptMetadataError(f"Table property {NAME_MAPPING} is not valid JSON: {exc}") from None


def metrics_to_json(m: ScanMetrics, task_count: int) -> dict[str, Any]:
    out = {
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
    return out if m.cut_short is None else {**out, "cut-short": m.cut_short}  # (asked for with a limit)

"""The Iceberg REST spec's ScanTasks (a REST plan's page): `file-scan-tasks` whose delete files are listed
once, in the page's own `delete-files`, and referred to by index (so no page carries delete files without
the tasks that use them, which clients reject).

A page of a plan's columns (FileTaskColumns) is rendered by the compiled renderer, its data files as the
/plan body's are (wire/data_file_rows.py), with no object per task; a page of task objects (a plan whose
data files carry stats-fields) is encoded one task at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson

from planner_service.expressions.expression_json import expression_to_json
from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.types import Schema
from planner_service.planning.planned_files import FileScanTask, FileTaskColumns
from planner_service.wire import json_rows as rows
from planner_service.wire.content_file_json import ContentFileEncoder, DeleteFileTable
from planner_service.wire.data_file_rows import data_file_chunks


def encode_scan_tasks(
    tasks: Sequence[FileScanTask],
    specs: dict[int, PartitionSpec],
    schema: Schema,
    stats_ids: frozenset[int] | None = None,
) -> dict[str, Any]:
    """`tasks` as ScanTasks; data files carry the stats of the `stats_ids` columns (REST stats-fields)."""
    encoder = ContentFileEncoder(specs, schema, stats_ids)
    deletes = DeleteFileTable(encoder)

    out_tasks = []
    for task in tasks:
        out: dict[str, Any] = {"data-file": encoder.encode(task.file)}
        if task.deletes:  # Java's RESTFileScanTaskParser leaves out an empty list
            out["delete-file-references"] = [deletes.ref(d) for d in task.deletes]
        out["residual-filter"] = expression_to_json(task.residual)
        out_tasks.append(out)
    return {"delete-files": deletes.files, "file-scan-tasks": out_tasks}


def residuals_json(files: FileTaskColumns) -> rows.SnippetTable:
    """The plan's residual filters as JSON texts, by residual id (what encode_scan_task_rows refers to)."""
    return rows.SnippetTable.of([orjson.dumps(expression_to_json(r)).decode() for r in files.residuals])


def encode_scan_task_rows(
    files: FileTaskColumns,
    begin: int,
    end: int,
    specs: dict[int, PartitionSpec],
    schema: Schema,
    residuals: rows.SnippetTable | None = None,
) -> dict[str, Any]:
    """files[begin:end] as ScanTasks, the same JSON as encode_scan_tasks of their objects (without stats),
    its two lists pre-rendered (orjson Fragments); `residuals`: residuals_json(files), made once per plan."""
    local: dict[int, int] = {}  # the plan's delete file index -> its index in this page's delete-files
    references = None
    if files.delete_offsets is not None:
        references = []
        for i in range(begin, end):
            refs = [local.setdefault(j, len(local)) for j in files.deletes_of(i).tolist()]
            references.append(f',"delete-file-references":[{",".join(map(str, refs))}]' if refs else "")
    residual_ids = files.residual_id[begin:end].astype(np.int64)
    residuals = residuals_json(files) if residuals is None else residuals

    def tail(first: int, last: int) -> list[rows.Part]:  # the file's deletes, then its residual
        parts = []
        if references is not None:
            chunk = references[first - begin : last - begin]
            parts.append(rows.snippets(np.arange(len(chunk)), chunk))
        parts += [
            rows.literal(',"residual-filter":'),
            rows.snippets(residual_ids[first - begin : last - begin], residuals),
        ]
        return parts

    tasks = b"[" + b"".join(data_file_chunks(files, specs, schema, tail, begin, end, omit_nulls=True)) + b"]"
    encoder = ContentFileEncoder(specs, schema)
    deletes = [encoder.encode(files.delete_files[j]) for j in local]  # (in the order of first reference)
    return {"delete-files": orjson.Fragment(orjson.dumps(deletes)), "file-scan-tasks": orjson.Fragment(tasks)}

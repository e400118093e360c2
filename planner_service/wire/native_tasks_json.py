"""Tasks of a plan fetched by index (GET /plans/{id}/tasks): each a self-contained CombinedScanTask in the
form a reader takes, with the plan's reader context (schema, filter, specs, name mapping) and only the
delete files these tasks use. A Spark executor fetches its own task this way, so no driver holds the plan.

    {"plan-id", "plan": {reader context, "delete-files": [DeleteFile, ...], ["file-urls": {path: url}]},
     "tasks": [{"index", "files": [{"data-file", "start", "length", "residual-filter",
                                    "delete-file-references"}, ...], "size-bytes", "estimated-row-count"}, ...]}

The files are rendered from the plan's columns by the compiled renderer, CHUNK_ROWS pieces at a time
(wire/data_file_rows.py), and streamed: a task of every file of a big plan costs a chunk's memory, not the
answer's. Each piece is a row; a row that starts a task opens it before its data file, one that ends a task
closes it after.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from planner_service.errors import NoSuchPlanTaskError
from planner_service.json_text import dumps
from planner_service.planning.planned_files import FileTaskColumns
from planner_service.planning.scan_plan import ScanPlan
from planner_service.splitting.combine import CombinedTasks
from planner_service.wire import json_rows as rows
from planner_service.wire.content_file_json import ContentFileEncoder
from planner_service.wire.data_file_rows import data_file_chunks
from planner_service.wire.rest_scan_tasks_json import residuals_json

MAX_TASKS_PER_REQUEST = 10_000


@dataclass(frozen=True)
class TaskRange:
    """Tasks start .. end - 1 of a plan, checked against it; their pieces are first .. last - 1."""

    start: int
    end: int
    first: int
    last: int

    @classmethod
    def of(cls, plan: ScanPlan, start: int, end: int | None) -> TaskRange:
        """NoSuchPlanTaskError for tasks the plan does not have, or too many at once."""
        tasks = plan.combined
        count = len(tasks) if tasks is not None else 0
        end = start + 1 if end is None else end
        if not 0 <= start < end <= count:
            raise NoSuchPlanTaskError(f"No tasks {start}..{end - 1} in plan: it has {count} tasks (0..{count - 1})")
        if end - start > MAX_TASKS_PER_REQUEST:
            raise NoSuchPlanTaskError(f"At most {MAX_TASKS_PER_REQUEST} tasks per request, not {end - start}")
        assert tasks is not None
        return cls(start, end, int(tasks.offsets[start]), int(tasks.offsets[end]))

    def files(self, plan: ScanPlan) -> np.ndarray[Any, Any]:
        """The plan's files (indexes into plan.files) these tasks read, each once."""
        assert plan.combined is not None
        return np.unique(plan.combined.file[self.first : self.last])


def encode_tasks(
    plan: ScanPlan,
    plan_id: str,
    reader_context: dict[str, Any],
    tasks: TaskRange,
    file_urls: dict[str, str] | None = None,
) -> Iterator[bytes]:
    """The tasks' body in chunks, with what reading them needs besides the tasks (`reader_context`:
    plan_head() without its metrics), the delete files they use and the presigned URLs of their files
    (`file_urls`, by path: a restricted plan's, io/presigning.py)."""
    files, combined = plan.files, plan.combined
    assert files is not None and combined is not None
    positions = combined.file[tasks.first : tasks.last]  # each piece's file, in the plan's files
    used, references = _delete_references(files, positions)
    meta = plan.table.metadata
    encoder = ContentFileEncoder(meta.specs, meta.schema)
    context = {**reader_context, "delete-files": [encoder.encode(files.delete_files[j]) for j in used]}
    if file_urls:
        context["file-urls"] = file_urls
    pieces = replace(files, rows=files.rows[positions], residual_id=files.residual_id[positions], delete_offsets=None)
    residuals = residuals_json(files)
    edges = _TaskEdges(combined, tasks)

    def before(begin: int, end: int) -> list[rows.Part]:  # a task's opening, on its first piece
        return [rows.snippets(*edges.openings(begin, end))]

    def tail(begin: int, end: int) -> list[rows.Part]:  # the piece's range, residual and deletes
        piece = slice(tasks.first + begin, tasks.first + end)
        parts = [
            rows.literal(',"start":'),
            rows.ints(combined.start[piece]),
            rows.literal(',"length":'),
            rows.ints(combined.length[piece]),
            rows.literal(',"residual-filter":'),
            rows.snippets(pieces.residual_id[begin:end].astype(np.int64), residuals),
            rows.literal(',"delete-file-references":'),
        ]
        if references is None:
            return [*parts, rows.literal("[]")]
        ids, texts = references
        return [*parts, rows.snippets(ids[begin:end], texts)]

    def after(begin: int, end: int) -> list[rows.Part]:  # a task's closing, on its last piece
        return [rows.snippets(*edges.closings(begin, end))]

    yield b'{"plan-id":' + dumps(plan_id) + b',"plan":' + dumps(context) + b',"tasks":['
    yield from data_file_chunks(pieces, meta.specs, meta.schema, tail, omit_nulls=True, before=before, after=after)
    yield b"]}"


class _TaskEdges:
    """Where tasks open and close among the pieces of a TaskRange (piece numbers counted from its first)."""

    def __init__(self, combined: CombinedTasks, tasks: TaskRange) -> None:
        self.combined, self.tasks = combined, tasks
        self.starts = combined.offsets[tasks.start : tasks.end] - tasks.first  # each task's first piece
        self.ends = combined.offsets[tasks.start + 1 : tasks.end + 1] - tasks.first - 1  # and its last

    def openings(self, begin: int, end: int) -> tuple[np.ndarray[Any, Any], rows.SnippetTable]:
        opened = self._within(self.starts, begin, end)
        texts = [""] + [f'{{"index":{self.tasks.start + int(t)},"files":[' for t in opened]
        return self._ids(self.starts[opened], begin, end), rows.SnippetTable.of(texts)

    def closings(self, begin: int, end: int) -> tuple[np.ndarray[Any, Any], rows.SnippetTable]:
        closed = self._within(self.ends, begin, end)
        sizes, estimates = self.combined.size_bytes, self.combined.estimated_rows
        texts = [""] + [
            f'],"size-bytes":{int(sizes[self.tasks.start + t])},'
            f'"estimated-row-count":{int(estimates[self.tasks.start + t])}}}'
            for t in closed.tolist()
        ]
        return self._ids(self.ends[closed], begin, end), rows.SnippetTable.of(texts)

    @staticmethod
    def _within(pieces: np.ndarray[Any, Any], begin: int, end: int) -> np.ndarray[Any, Any]:
        """The tasks (counted from the range's first) whose edge piece lies in begin .. end - 1."""
        return np.flatnonzero((pieces >= begin) & (pieces < end))

    @staticmethod
    def _ids(at: np.ndarray[Any, Any], begin: int, end: int) -> np.ndarray[Any, Any]:
        ids = np.zeros(end - begin, np.int64)
        ids[at - begin] = np.arange(1, len(at) + 1)
        return ids


def _delete_references(
    files: FileTaskColumns, positions: np.ndarray[Any, Any]
) -> tuple[list[int], tuple[np.ndarray[Any, Any], rows.SnippetTable] | None]:
    """The plan's delete files the pieces use, in order of first use, and each piece's references to them
    (indexes into that list) as JSON snippets; None when no piece has deletes."""
    if files.delete_offsets is None:
        return [], None
    local: dict[int, int] = {}  # the plan's delete file index -> its index in this answer's delete-files
    texts: dict[str, int] = {}
    ids = np.zeros(len(positions), np.int64)
    for i, position in enumerate(positions.tolist()):
        refs = [local.setdefault(j, len(local)) for j in files.deletes_of(position).tolist()]
        ids[i] = texts.setdefault(f"[{','.join(map(str, refs))}]", len(texts))
    if not local:
        return [], None
    return list(local), (ids, rows.SnippetTable.of(list(texts)))

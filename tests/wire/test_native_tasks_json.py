"""Tasks fetched by index (GET /plans/{id}/tasks), rendered from the plan's columns and streamed, are the JSON
of their objects (each piece's data file encoded alone, its residual, its deletes through a table of the
answer's own), on every conformance table (partitions and their evolution, deletes of every kind, v1 to v3,
ORC/Avro/Parquet), with filters, a split size that cuts files and one that packs every file in one task,
chunk boundaries anywhere (CHUNK_ROWS of 2 and 3). The objects' encoding is the reference: the reader reads
it, and tests/api/test_native.py holds the tasks to the plan Java makes."""

from __future__ import annotations

from typing import Any, Literal

import orjson
import pytest

from planner_service.expressions.expression import TRUE
from planner_service.expressions.expression_json import expression_from_json, expression_to_json
from planner_service.io.fileio import FileIO
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_plan import ScanPlan
from planner_service.planning.scan_request import ScanRequest
from planner_service.wire import data_file_rows, plan_json
from planner_service.wire.content_file_json import ContentFileEncoder, DeleteFileTable
from planner_service.wire.native_tasks_json import TaskRange, encode_tasks
from tests.conformance.reference import Conformance
from tests.planning.conformance_plans import conformance_table

FILTERS = (None, {"type": "lt", "term": "id", "value": 30})
OPTIONS: tuple[dict[str, int], ...] = (
    {},
    {"split-size": 1024, "file-open-cost": 0},
    {"split-size": 2**63 - 1, "file-open-cost": 0},
)
CONTEXT = {"schema": "the reader context, as given"}


def _objects(plan: ScanPlan, start: int, end: int) -> dict[str, Any]:
    """The tasks' JSON built from objects, one dict per piece (as the service answered before streaming)."""
    files, tasks = plan.files, plan.combined
    assert files is not None and tasks is not None
    meta = plan.table.metadata
    encoder = ContentFileEncoder(meta.specs, meta.schema)
    deletes = DeleteFileTable(encoder)
    first, last = int(tasks.offsets[start]), int(tasks.offsets[end])
    positions = sorted(set(tasks.file[first:last].tolist()))  # (every object alive at once: the encoder keys by id)
    content = dict(zip(positions, files.index.content_files(files.rows[positions]), strict=True))
    out = []
    for t in range(start, end):
        items = []
        for p in tasks.pieces(t):
            position = int(tasks.file[p])
            items.append(
                {
                    "data-file": encoder.encode(content[position]),
                    "start": int(tasks.start[p]),
                    "length": int(tasks.length[p]),
                    "residual-filter": expression_to_json(files.residuals[files.residual_id[position]]),
                    "delete-file-references": [
                        deletes.ref(files.delete_files[j]) for j in files.deletes_of(position).tolist()
                    ],
                }
            )
        out.append(
            {
                "index": t,
                "files": items,
                "size-bytes": int(tasks.size_bytes[t]),
                "estimated-row-count": int(tasks.estimated_rows[t]),
            }
        )
    return {"plan-id": "p", "plan": {**CONTEXT, "delete-files": deletes.files}, "tasks": out}


@pytest.mark.parametrize("chunk_rows", [2, 3, data_file_rows.CHUNK_ROWS])
def test_streamed_tasks_are_their_objects_json(
    conformance: Conformance, monkeypatch: pytest.MonkeyPatch, chunk_rows: int
) -> None:
    monkeypatch.setattr(data_file_rows, "CHUNK_ROWS", chunk_rows)
    planner = ScanPlanner(FileIO())
    compared = 0
    for name in conformance.tables:
        table = conformance_table(conformance, planner, name)
        for row_filter in FILTERS:
            for options in OPTIONS:
                try:
                    row = expression_from_json(row_filter) if row_filter else TRUE
                    plan = planner.plan(table, ScanRequest(row_filter=row, options=options))
                except Exception:  # a filter on a column the table lacks: nothing to compare
                    continue
                count = len(plan.combined) if plan.combined is not None else 0
                for start, end in {(0, 1), (count - 1, count), (0, count), (count // 2, min(count, count // 2 + 3))}:
                    if not 0 <= start < end <= count:
                        continue
                    body = b"".join(encode_tasks(plan, "p", CONTEXT, TaskRange.of(plan, start, end)))
                    assert orjson.loads(body) == _objects(plan, start, end), (name, row_filter, options, start)
                    compared += 1
    assert compared > 3 * len(conformance.tables)


@pytest.mark.parametrize("per_chunk", [1, 2, plan_json.ESTIMATES_PER_CHUNK])
def test_a_deferred_answer_in_chunks_is_its_head_and_estimates(
    conformance: Conformance, monkeypatch: pytest.MonkeyPatch, per_chunk: int
) -> None:
    """A plan answered by id, streamed a chunk of estimates at a time: its head (plan_head) and each task's
    estimates, grouped plans' keys and key ranges with them, as one JSON object."""
    monkeypatch.setattr(plan_json, "ESTIMATES_PER_CHUNK", per_chunk)
    planner = ScanPlanner(FileIO())
    cases: list[tuple[str, Literal["none", "partition"]]] = [
        ("row_groups", "none"),
        ("identity_part", "partition"),
        ("spec_evolution", "partition"),
    ]
    for name, grouping in cases:
        table = conformance_table(conformance, planner, name)
        plan = planner.plan(table, ScanRequest(grouping=grouping, options={"split-size": 1024, "file-open-cost": 0}))
        tasks = plan.combined
        assert tasks is not None and len(tasks) > 1
        expected = {**plan_json.plan_head(plan, "p"), "task-size-bytes": tasks.size_bytes.tolist()}
        if plan.grouping is not None:
            expected["task-grouping-key"] = plan.grouping.task_key.tolist()
        expected["task-estimated-row-count"] = tasks.estimated_rows.tolist()
        body = b"".join(plan_json.encode_deferred(plan, "p"))
        assert list(orjson.loads(body)) == list(expected)  # (the keys in order too)
        assert orjson.loads(body) == orjson.loads(orjson.dumps(expected)), (name, grouping)
        head = plan_json.encode_deferred(plan, "p", estimates=False)
        assert orjson.loads(b"".join(head)) == orjson.loads(orjson.dumps(plan_json.plan_head(plan, "p")))


def test_the_files_of_an_answer_are_those_its_json_names(conformance: Conformance) -> None:
    """What an answer's presigned URLs are made for (FileTaskColumns.locations): exactly the data and delete
    files its JSON names, for a whole plan (encode_plan) and for tasks by index (TaskRange.files), on every
    conformance table (deletes of every kind); the URLs ride in the head, or in the tasks' reader context."""
    planner = ScanPlanner(FileIO())
    with_deletes = 0
    for name in conformance.tables:
        plan = planner.plan(conformance_table(conformance, planner, name), ScanRequest(options=OPTIONS[1]))
        files, tasks = plan.files, plan.combined
        if files is None or tasks is None or not len(tasks):
            continue
        urls = {path: f"https://store/{i}" for i, path in enumerate(files.locations())}
        whole = orjson.loads(b"".join(plan_json.encode_plan(plan, "p", file_urls=urls)))
        named = {f["data-file"]["file-path"] for f in whole["files"]} | {d["file-path"] for d in whole["delete-files"]}
        assert set(files.locations()) == named == set(whole["file-urls"]), name
        with_deletes += bool(whole["delete-files"])
        for start, end in {(0, 1), (len(tasks) - 1, len(tasks))}:
            chosen = TaskRange.of(plan, start, end)
            mine = {path: urls[path] for path in files.locations(chosen.files(plan))}
            answer = orjson.loads(b"".join(encode_tasks(plan, "p", CONTEXT, chosen, mine)))
            named = {f["data-file"]["file-path"] for task in answer["tasks"] for f in task["files"]}
            named |= {d["file-path"] for d in answer["plan"]["delete-files"]}
            assert answer["plan"]["file-urls"] == mine and set(mine) == named, (name, start)
    assert with_deletes >= 3

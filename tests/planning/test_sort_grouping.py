"""grouping=sort-order on tables Iceberg wrote with a sort order (reference_tables.sorted_*), checked by its
invariant against the files' rows: no two files of a task overlap on the sort key, a task's rows lie in its
key range, tasks come in key order within each partition, files without bounds last and alone; and the same
file ranges as the ungrouped plan (Iceberg Java's, by the conformance suite). Keys compare as Spark orders
rows (tests/planning/spark_order.py), not as the planner does."""

from __future__ import annotations

import itertools
import re
import sys
from collections import Counter
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest

from planner_service.catalog.base import LoadedTable
from planner_service.errors import BadRequestError
from planner_service.io.fileio import FileIO
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import scan_request
from planner_service.planning.sort_ranges import SortField
from tests.conformance.reference import Conformance
from tests.planning.conformance_plans import conformance_table, task_pieces
from tests.planning.spark_order import SortColumn, spark_key

SORTED = ["sorted_ids", "sorted_multi", "sorted_transforms"]
SPLITS = [{"split-size": 2048, "file-open-cost": 64}, {}]


@pytest.fixture(scope="module")
def planner() -> ScanPlanner:
    return ScanPlanner(FileIO())


def _columns(table: LoadedTable, fields: tuple[SortField, ...]) -> list[SortColumn]:
    out = []
    for f in fields:
        source = table.metadata.schema.find_field(f.source_id)
        assert source is not None
        out.append(SortColumn(source.name, str(f.transform), f.descending, f.nulls_first))
    return out


def _file_keys(path: str, columns: list[SortColumn]) -> list[tuple[Any, ...]]:
    """Each row's sort key (as Spark orders rows), read from the data file itself."""
    data = pq.read_table(path.removeprefix("file:"), columns=sorted({c.name for c in columns})).to_pylist()
    return [spark_key(tuple(c.value(row) for c in columns), columns) for row in data]


@pytest.mark.parametrize("split", SPLITS, ids=["small-splits", "default"])
@pytest.mark.parametrize("name", SORTED)
def test_no_two_files_of_a_task_overlap_and_tasks_come_in_key_order(
    conformance: Conformance, planner: ScanPlanner, name: str, split: dict[str, int]
) -> None:
    table = conformance_table(conformance, planner, name)
    plan = planner.plan(table, scan_request(options=split, grouping="sort-order"))
    whole = planner.plan(table, scan_request(options=split))
    grouping = plan.grouping
    assert grouping is not None and grouping.ranges is not None and plan.files is not None
    tasks = task_pieces(plan)
    assert Counter(p for t in tasks for p in t) == Counter(p for t in task_pieces(whole) for p in t)
    columns = _columns(table, grouping.ranges.key.fields)
    keys = {path: _file_keys(path, columns) for path in {p for t in tasks for p, _, _ in t}}
    spans = grouping.ranges.task_spans
    unbounded_seen: set[int] = set()
    previous: dict[int, tuple[Any, ...]] = {}
    for t, task in enumerate(tasks):
        files = list(dict.fromkeys(path for path, _, _ in task))  # each file once, in task order
        for before, after in itertools.pairwise(files):
            assert max(keys[before]) < min(keys[after]), f"task {t}: {before} overlaps {after}"
        span, part = spans[t], int(grouping.task_key[t])
        if span is None:  # a file without bounds: alone, after the partition's other tasks
            assert len(files) == 1
            unbounded_seen.add(part)
            continue
        assert part not in unbounded_seen, f"task {t} comes after a task without bounds"
        first, last = (spark_key(v, columns[: len(v)]) for v in span)
        for key in (k for f in files for k in keys[f]):
            assert first <= key[: len(first)] and key[: len(last)] <= last, f"task {t}: {key} outside {span}"
        if part in previous:
            assert previous[part][: len(first)] <= first, f"task {t} starts before task {t - 1}"
        previous[part] = first
    if name == "sorted_ids":  # its last append has no id bounds: that file's tasks are last, unranged
        assert spans[-1] is None and spans[0] is not None


def test_a_plan_that_ignores_the_order_mixes_overlapping_files(conformance: Conformance, planner: ScanPlanner) -> None:
    """What the invariant rules out happens without it: the ungrouped plan of sorted_ids puts overlapping files
    in one task (the test above can fail)."""
    table = conformance_table(conformance, planner, "sorted_ids")
    key = planner.plan(table, scan_request(grouping="sort-order")).grouping
    assert key is not None and key.ranges is not None
    columns = _columns(table, key.ranges.key.fields)
    task = task_pieces(planner.plan(table, scan_request()))[0]
    files = list(dict.fromkeys(path for path, _, _ in task))
    ranges = [(min(k), max(k)) for k in (_file_keys(f, columns) for f in files)]
    assert any(a[1] >= b[0] and b[1] >= a[0] for i, a in enumerate(ranges) for b in ranges[i + 1 :])


def test_partitions_group_first(conformance: Conformance, planner: ScanPlanner) -> None:
    """sorted_multi is partitioned by days(ts): each task holds one day's files, days ascending."""
    table = conformance_table(conformance, planner, "sorted_multi")
    plan = planner.plan(table, scan_request(grouping="sort-order"))
    grouping = plan.grouping
    assert grouping is not None and plan.files is not None and plan.combined is not None
    assert [f.name for f in grouping.fields] == ["ts_day"] and len(grouping.keys) > 1
    assert list(grouping.keys) == sorted(grouping.keys)
    assert grouping.ranges is not None and [str(f.transform) for f in grouping.ranges.key.fields] == [
        "identity",
        "identity",
    ]
    index, rows = plan.files.index, plan.files.rows
    for t, k in enumerate(grouping.task_key.tolist()):
        files = [rows[int(plan.combined.file[p])] for p in plan.combined.pieces(t)]
        days = {index.partitions[int(index.partition_id[f])][1] for f in files}
        assert days == {grouping.keys[k]}


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("unpartitioned", "is unsorted; give the table one"),
        ("sorted_bucket", "starts with bucket[4], which file bounds do not order"),
    ],
)
def test_a_table_without_a_usable_sort_order_is_refused(
    conformance: Conformance, planner: ScanPlanner, name: str, message: str
) -> None:
    table = conformance_table(conformance, planner, name)
    with pytest.raises(BadRequestError, match=re.escape(message)):
        planner.plan(table, scan_request(grouping="sort-order"))


def test_sort_order_grouping_through_plan_and_by_id(conformance_service: str) -> None:
    body: dict[str, Any] = {"table": "db.sorted_multi", "grouping": "sort-order"}
    inline = httpx.post(f"{conformance_service}/plan", json=body, timeout=60).json()
    grouping = inline["grouping"]
    assert grouping["type"] == "sort-order" and [f["name"] for f in grouping["fields"]] == ["ts_day"]
    assert grouping["sort-order"]["fields"] == [
        {"transform": "identity", "source-id": 2, "direction": "asc", "null-order": "nulls-last"},
        {"transform": "identity", "source-id": 5, "direction": "desc", "null-order": "nulls-first"},
    ]
    ranges = [t["key-range"] for t in inline["tasks"]]
    assert all(set(r) == {"first", "last"} and len(r["first"]) <= 2 for r in ranges if r is not None)
    assert any(r is not None and "NaN" in (r["first"] + r["last"]) for r in ranges)  # the NaNs, as text
    by_id = httpx.post(f"{conformance_service}/plan", json={**body, "inline-task-limit": 0}, timeout=60).json()
    listed = httpx.get(f"{conformance_service}/plans/{by_id['plan-id']}", timeout=60).json()
    assert listed["task-key-range"] == ranges
    assert [grouping["keys"][k] for k in listed["task-grouping-key"]] == [t["grouping-key"] for t in inline["tasks"]]
    refused = httpx.post(f"{conformance_service}/plan", json={**body, "table": "db.unpartitioned"}, timeout=60)
    assert refused.status_code == 400
    assert "db.unpartitioned is unsorted" in refused.json()["error"]["message"]


def _deep_size(value: Any) -> int:
    """Bytes of a value made of tuples, counting shared objects once."""
    seen: set[int] = set()

    def size(v: Any) -> int:
        if id(v) in seen:
            return 0
        seen.add(id(v))
        return sys.getsizeof(v) + (sum(size(x) for x in v) if isinstance(v, tuple) else 0)

    return size(value)


@pytest.mark.parametrize("name", SORTED)
def test_the_plan_cache_weighs_the_ranges_it_holds(conformance: Conformance, planner: ScanPlanner, name: str) -> None:
    """A cached plan's weight counts its tasks' key ranges, within a factor of what they hold."""
    table = conformance_table(conformance, planner, name)
    grouping = planner.plan(table, scan_request(grouping="sort-order", options=SPLITS[0])).grouping
    assert grouping is not None and grouping.ranges is not None
    held = _deep_size(grouping.ranges.task_spans) + grouping.task_key.nbytes
    assert held / 2 <= grouping.nbytes <= held * 2

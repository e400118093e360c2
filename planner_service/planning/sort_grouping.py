"""Order-aware tasks (grouping=sort-order): within each partition, files in the table's sort order, split into
runs of files whose key ranges do not overlap, as DataFusion's ListingTable splits file groups by statistics.

Within one partition (the partition grouping's key; the whole plan when it has no field) the files are taken by
their first key, ascending, and each joins the run whose last file ends lowest, when that file ends strictly
before it begins; otherwise it starts a run. This makes as few runs as the files' deepest overlap allows (a
table written sorted is one run a partition). Each run is then cut into tasks in order, a task closed when the
next split would pass the split size (a lookback of one), splits of one file kept in order: no two files of a
task overlap on the key, and a task's files and splits come in key order. A partition's tasks are listed by
their first key, then last; files without bounds on the key's first field come after them, a file a task.
"""

from __future__ import annotations

import heapq
from dataclasses import replace
from typing import Any

import numpy as np

from planner_service.metadata.file_index import FileIndex
from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.types import Schema
from planner_service.planning.grouping import (
    KeyRanges,
    TaskGrouping,
    grouping_fields,
    partition_keys,
    specs_of,
    take_files,
    with_plan_files,
)
from planner_service.planning.sort_ranges import UNKNOWN, FileRanges, SortKey, file_ranges
from planner_service.splitting.combine import CombinedTasks, FileColumns, Packing, combine, take_tasks

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


def order_tasks(
    index: FileIndex,
    rows: Int64Array,
    *,
    specs: dict[int, PartitionSpec],
    schema: Schema,
    key: SortKey,
    columns: FileColumns,
    packing: Packing,
) -> tuple[CombinedTasks, TaskGrouping]:
    """The tasks of the files `rows` of `index` (whose splitting columns are `columns`), ordered by `key`:
    packed with a lookback of one, whatever `packing` says, the files kept in order."""
    fields = grouping_fields(specs_of(index, rows, specs), schema)
    if fields:
        part, keys = partition_keys(index, rows, fields, specs)
    else:
        part, keys = np.zeros(len(rows), np.int64), [()]
    ranges = file_ranges(key, index.stats, rows)
    files, starts = _runs(part, ranges)
    in_order = replace(packing, lookback=1)
    tasks = combine(take_files(columns, files), in_order, groups=starts, largest_bin_first=False)
    tasks = with_plan_files(tasks, files)
    first_file, last_file = tasks.file[tasks.offsets[:-1]], tasks.file[tasks.offsets[1:] - 1]
    bounded = ranges.bounded[first_file]
    first, last = np.where(bounded, ranges.first_rank[first_file], 0), np.where(bounded, ranges.last_rank[last_file], 0)
    task_part = part[first_file]
    order = np.lexsort((np.arange(len(tasks)), last, first, ~bounded, task_part))
    tasks = take_tasks(tasks, order)
    used, task_key = np.unique(task_part[order], return_inverse=True)
    firsts, lasts = ranges.keys(first_file[order], last=False), ranges.keys(last_file[order], last=True)
    spans = tuple(
        (_known(a), _known(b)) if ok else None for a, b, ok in zip(firsts, lasts, bounded[order].tolist(), strict=True)
    )
    grouping = TaskGrouping(
        fields, tuple(keys[k] for k in used.tolist()), task_key.astype(np.int64), KeyRanges(key, spans)
    )
    return tasks, grouping


def _runs(part: Int64Array, ranges: FileRanges) -> tuple[Int64Array, BoolArray]:
    """The files in run order (partition after partition, each run's files in key order) and where runs start."""
    n = len(part)
    order = np.lexsort((np.arange(n), ranges.last_rank, ranges.first_rank, ~ranges.bounded, part))
    run = np.empty(n, np.int64)
    ends: list[tuple[int, int]] = []  # (last key, run) of the current partition's runs: the lowest end first
    current, runs = -1, 0
    columns = (part[order], ranges.bounded[order], ranges.first_rank[order], ranges.last_rank[order])
    for i, p, bounded, first, last in zip(order.tolist(), *(c.tolist() for c in columns), strict=True):
        if p != current:
            ends, current = [], p
        if bounded and ends and ends[0][0] < first:
            r = ends[0][1]
            heapq.heapreplace(ends, (last, r))
        else:
            r, runs = runs, runs + 1
            if bounded:
                heapq.heappush(ends, (last, r))
        run[i] = r
    files = order[np.argsort(run[order], kind="stable")]
    starts = np.diff(run[files], prepend=-1) != 0
    return files.astype(np.int64), starts


def _known(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """The fields of a key up to the first one statistics do not bound."""
    if not any(value is UNKNOWN for value in key):
        return key
    for i, value in enumerate(key):
        if value is UNKNOWN:
            return key[:i]
    return key

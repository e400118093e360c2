"""From files to combined scan tasks (Java TableScanUtil.planTasks, 1.10), over columns.

Split every file, weigh each split, pack the splits in order with first-fit and lookback, then merge
adjacent splits of one file within a bin. Splitting, packing and merging are compiled loops
(planner_service/csrc), the rest a few numpy operations over the whole plan; no Python object is made
per split or per task, and no temporary array per split beyond the splits themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from planner_service import _kernels
from planner_service.errors import InvalidOptionError
from planner_service.splitting.bin_packing import pack_bins
from planner_service.splitting.splits import count_ranges, int64, split_files
from planner_service.splitting.stop import Stop, never

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
BYTES_PER_RANGE = 128  # a range beyond one a file: split, packing and task columns (98 B measured), its JSON


@dataclass(frozen=True)
class FileColumns:
    """What splitting and packing need of n files, one array element per file."""

    sizes: Int64Array
    splittable: BoolArray
    offset_counts: Int64Array  # split offsets per file
    flat_offsets: Int64Array  # all split offsets, one file after the other
    record_counts: Int64Array
    delete_bytes: Int64Array  # content bytes of the deletes that apply to the file
    delete_counts: Int64Array


@dataclass(frozen=True)
class CombinedTasks:
    """CombinedScanTasks as columns: task t is the pieces offsets[t] .. offsets[t+1] - 1, each a byte range
    of one file (`file` indexes the FileColumns). `is_split` marks Java's SplitScanTask pieces."""

    offsets: Int64Array
    file: Int64Array
    start: Int64Array
    length: Int64Array
    is_split: BoolArray
    size_bytes: Int64Array  # per task: its ranges plus every piece's delete bytes (CombinedScanTask.sizeBytes)
    estimated_rows: Int64Array  # per task: each range's share of its file's records

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def pieces(self, task: int) -> range:
        return range(int(self.offsets[task]), int(self.offsets[task + 1]))


@dataclass(frozen=True)
class RangeBound:
    """How many ranges a plan may cut its files into: what the table's own split size (`table_split_size`:
    read.split.target-size, adapted to Spark's parallelism as Iceberg adapts it) makes of them, which any plan
    of these files holds, but at most `most` (what the service's memory holds; None: no such bound); and
    `extra` more, what a request's own split size may add (its memory budget's worth). Only a split size far
    below the table's makes more: the ranges of an ordinary table of any size are never refused. Lookback and
    open-file cost need no bound: they change how ranges are packed (O(ranges log lookback)), not how many."""

    table_split_size: int
    extra: int
    most: int | None = None


@dataclass(frozen=True, kw_only=True)
class Packing:
    """How files become tasks (TableScanUtil.planTasks's split size, lookback and open-file cost, checked as
    Java checks them), and what bounds the work: the ranges `bound` allows (None: no bound), stopped when
    `stop` says."""

    split_size: int
    lookback: int
    open_file_cost: int
    bound: RangeBound | None = None
    stop: Stop = field(default_factory=never)

    def __post_init__(self) -> None:
        problem = split_option_problem(self.split_size, self.lookback, self.open_file_cost)
        if problem is not None:
            raise ValueError(problem)


def split_option_problem(split_size: int, lookback: int, open_file_cost: int) -> str | None:
    """What Java's TableScanUtil.planTasks refuses in these options, in its words (None: nothing)."""
    if split_size <= 0:
        return f"Split size must be > 0: {split_size}"
    if lookback <= 0:
        return f"Split planning lookback must be > 0: {lookback}"
    if open_file_cost < 0:
        return f"File open cost must be >= 0: {open_file_cost}"
    return None


class TooManyRangesError(InvalidOptionError):
    """A split size that cuts a plan's files into more ranges than its bound allows (RangeBound)."""


def combine(
    files: FileColumns,
    packing: Packing,
    *,
    groups: BoolArray | None = None,
    largest_bin_first: bool = True,
) -> CombinedTasks:
    """The files' tasks. `groups` marks the files that start a group packed on its own (every task holds files
    of one group); `largest_bin_first` as pack_bins (False with a lookback of 1 keeps the files' order).
    TooManyRangesError, before anything is allocated, when the files make more ranges than `packing.bound` allows."""
    split_size, stop = packing.split_size, packing.stop
    _check_ranges(files, packing)
    # every split is charged all of its file's delete bytes, and at least one open per file it opens
    splits = split_files(
        files.sizes,
        files.splittable,
        files.offset_counts,
        files.flat_offsets,
        split_size,
        files.delete_bytes,
        files.delete_counts,
        packing.open_file_cost,
        stop,
    )
    sizes, record_counts, delete_bytes = int64(files.sizes), int64(files.record_counts), int64(files.delete_bytes)
    del files  # a caller that hands over its columns gets the split offsets freed before the tasks are merged
    owner, start, length, is_split, weight = splits.owner, splits.start, splits.length, splits.is_split, splits.weight
    del splits
    breaks = None
    if groups is not None:  # a group starts at the first split of a file that starts one
        breaks = groups[owner] & np.concatenate(([True], owner[1:] != owner[:-1]))
    bins = pack_bins(weight, split_size, packing.lookback, largest_bin_first, breaks, stop)
    del weight  # (at 20,000,000 files these go 1.6 GB before the merge's own columns are made)

    # TableScanUtil.mergeTasks: within a bin, a split continues the previous one when both are splits of
    # the same file and the ranges touch; a run of such splits becomes one range. Each task's size is its
    # ranges' lengths plus their files' delete bytes; its rows, each range's share of its file's records.
    n_tasks = int(bins.max()) + 1 if len(bins) else 0
    merged = _kernels.merge_bins(
        bins, owner, start, length, is_split, n_tasks, sizes, record_counts, delete_bytes, stop.flag, stop.deadline
    )
    if merged is None:
        stop.stopped()
    offsets, run_file, run_start, run_length = (np.frombuffer(b, np.int64) for b in merged[:4])
    size_bytes, estimated_rows = (np.frombuffer(b, np.int64) for b in merged[5:])
    return CombinedTasks(
        offsets, run_file, run_start, run_length, np.frombuffer(merged[4], np.bool_), size_bytes, estimated_rows
    )


def _check_ranges(files: FileColumns, packing: Packing) -> None:
    bound = packing.bound
    if bound is None:
        return
    count = partial(count_ranges, files.sizes, files.splittable, files.offset_counts, files.flat_offsets)
    ranges = count(packing.split_size)
    own = ranges if packing.split_size == bound.table_split_size else count(bound.table_split_size)
    held = own if bound.most is None else min(own, bound.most)
    limit = held + bound.extra
    if ranges <= limit:
        return
    n_files, size = len(files.sizes), packing.split_size
    fits = _smallest_fitting_split_size(count, size, limit, int(files.sizes.max(initial=1)))
    advice = (
        f"ask for a split size of at least {fits:,} bytes (the split-size option)"
        if fits is not None
        else "their split offsets alone make more: plan fewer files at a time (a filter)"
    )
    cut = f"cuts the plan's {n_files:,} files into {ranges:,} ranges"
    if held < own:  # the table's own split size makes more than the service's memory holds
        raise TooManyRangesError(
            f"Split size {size:,} bytes {cut}, more than this service's memory holds ({limit:,} ranges of "
            f"{BYTES_PER_RANGE} bytes); {advice}"
        )
    raise TooManyRangesError(
        f"Split size {size:,} bytes (split-size) {cut}: {ranges - own:,} more than the table's own split size "
        f"({bound.table_split_size:,} bytes: read.split.target-size, adapted to Spark's parallelism) makes, where "
        f"a request may add {bound.extra:,} (plan_memory_bytes over {BYTES_PER_RANGE} bytes a range); {advice}"
    )


def _smallest_fitting_split_size(count: Callable[[int], int], too_small: int, limit: int, largest: int) -> int | None:
    """The smallest split size above `too_small` that cuts at most `limit` ranges (ranges only fall as the size
    grows; at the largest file's size or more, each file is one range or its offsets'), or None: none does."""
    high = max(largest, too_small + 1)
    if count(high) > limit:
        return None
    low = too_small  # count(low) > limit <= count(high)
    while high - low > 1:
        middle = (low + high) // 2
        if count(middle) <= limit:
            high = middle
        else:
            low = middle
    return high


def run_positions(starts: Int64Array, counts: Int64Array) -> Int64Array:
    """The positions of runs laid end to end: counts[i] positions from starts[i], for each i in turn."""
    before = np.cumsum(counts) - counts  # where each run starts in the result
    return np.repeat(starts - before, counts) + np.arange(int(counts.sum()), dtype=np.int64)


def take_tasks(tasks: CombinedTasks, order: Int64Array) -> CombinedTasks:
    """The tasks in the order `order` lists them."""
    counts = np.diff(tasks.offsets)[order]
    pieces = run_positions(tasks.offsets[:-1][order], counts)
    return CombinedTasks(
        np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
        tasks.file[pieces],
        tasks.start[pieces],
        tasks.length[pieces],
        tasks.is_split[pieces],
        tasks.size_bytes[order],
        tasks.estimated_rows[order],
    )

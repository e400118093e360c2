"""From files to combined scan tasks (Java TableScanUtil.planTasks, 1.10), over columns.

Split every file, weigh each split, pack the splits in order with first-fit and lookback, then merge
adjacent splits of one file within a bin. Splitting, packing and merging are compiled loops
(planner_service/csrc), the rest a few numpy operations over the whole plan; no Python object is made
per split or per task, and no temporary array per split beyond the splits themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner_service import _kernels
from planner_service.errors import InvalidOptionError
from planner_service.splitting.bin_packing import pack_bins
from planner_service.splitting.splits import count_ranges, int64, split_files
from planner_service.splitting.stop import Stop, never

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


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


@dataclass(frozen=True, kw_only=True)
class Packing:
    """How files become tasks (TableScanUtil.planTasks's split size, lookback and open-file cost, checked as
    Java checks them), and what bounds the work: at most `max_ranges` ranges (None: no bound), stopped when
    `stop` says. Lookback needs no bound: packing is O(ranges log lookback)."""

    split_size: int
    lookback: int
    open_file_cost: int
    max_ranges: int | None = None
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
    """A split size that cuts a plan's files into more ranges than its memory budget holds."""


def combine(
    files: FileColumns,
    packing: Packing,
    *,
    groups: BoolArray | None = None,
    largest_bin_first: bool = True,
) -> CombinedTasks:
    """The files' tasks. `groups` marks the files that start a group packed on its own (every task holds files
    of one group); `largest_bin_first` as pack_bins (False with a lookback of 1 keeps the files' order).
    TooManyRangesError, before anything is allocated, when the files make more than `packing.max_ranges`."""
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
    if packing.max_ranges is None:
        return
    ranges = count_ranges(files.sizes, files.splittable, files.offset_counts, files.flat_offsets, packing.split_size)
    if ranges <= packing.max_ranges:
        return
    n_files, total = len(files.sizes), int(files.sizes.sum())
    enough = max(packing.split_size + 1, -(-total // max(packing.max_ranges - n_files, 1)))
    raise TooManyRangesError(
        f"Split size {packing.split_size:,} bytes (split-size, or the table's read.split.target-size) cuts the "
        f"plan's {n_files:,} files into {ranges:,} ranges, more than its memory budget holds "
        f"({packing.max_ranges:,}: plan_memory_bytes); ask for a split size of at least {enough:,} bytes"
    )


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

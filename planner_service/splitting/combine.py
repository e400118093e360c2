"""From file scan tasks to combined scan tasks (Java TableScanUtil.planTasks, 1.10).

Split every task, weigh each split, pack the splits in order with first-fit and lookback, then merge
adjacent splits of one file within a bin. Splits and weights are computed for the whole plan with numpy;
only the packing, which is sequential by nature, walks the splits one by one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from planner_service.planning.scan_tasks import CombinedScanTask, FileScanTask
from planner_service.splitting.bin_packing import pack
from planner_service.splitting.splits import split_files


def plan_tasks(
    tasks: Sequence[FileScanTask], split_size: int, lookback: int, open_file_cost: int
) -> list[CombinedScanTask]:
    if split_size <= 0:
        raise ValueError(f"Split size must be > 0: {split_size}")
    if lookback <= 0:
        raise ValueError(f"Split planning lookback must be > 0: {lookback}")
    if open_file_cost < 0:
        raise ValueError(f"File open cost must be >= 0: {open_file_cost}")
    if not tasks:
        return []

    splits = split_files([t.file for t in tasks], split_size)
    n = len(tasks)
    delete_bytes = np.fromiter((sum(d.content_size for d in t.deletes) for t in tasks), np.int64, n)
    delete_count = np.fromiter((len(t.deletes) for t in tasks), np.int64, n)
    # every split is charged all of its file's delete bytes, and at least one open per file it opens
    weights = np.maximum(splits.length + delete_bytes[splits.owner], (1 + delete_count[splits.owner]) * open_file_cost)
    bins = pack(weights.tolist(), split_size, lookback)

    # TableScanUtil.mergeTasks: within a bin, a split continues the previous one when both are splits of
    # the same file and the ranges touch; a run of such splits becomes one range
    order = np.fromiter((i for b in bins for i in b), np.int64, len(splits))
    bin_of = np.repeat(np.arange(len(bins)), [len(b) for b in bins])
    owner, start, length = splits.owner[order], splits.start[order], splits.length[order]
    is_split = splits.is_split[order]
    continues = np.zeros(len(order), dtype=bool)
    continues[1:] = (
        (bin_of[1:] == bin_of[:-1])
        & is_split[1:]
        & is_split[:-1]
        & (owner[1:] == owner[:-1])
        & (start[:-1] + length[:-1] == start[1:])
    )
    run_starts = np.flatnonzero(~continues)
    run_lengths = np.add.reduceat(length, run_starts)
    run_bins = bin_of[run_starts]

    combined: list[CombinedScanTask] = []
    current: list[FileScanTask] = []
    current_bin = 0
    runs = zip(
        run_bins.tolist(),
        owner[run_starts].tolist(),
        start[run_starts].tolist(),
        run_lengths.tolist(),
        is_split[run_starts].tolist(),
        strict=True,
    )
    for b, task_index, run_start, run_length, split in runs:
        if b != current_bin:
            combined.append(CombinedScanTask(tuple(current)))
            current, current_bin = [], b
        t = tasks[task_index]
        current.append(FileScanTask(t.file, t.deletes, run_start, run_length, t.residual, split))
    combined.append(CombinedScanTask(tuple(current)))
    return combined

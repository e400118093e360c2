"""From file scan tasks to combined scan tasks (Java TableScanUtil.planTasks, 1.10)."""

from __future__ import annotations

from collections.abc import Sequence

from planner_service.planning.scan_tasks import CombinedScanTask, FileScanTask
from planner_service.splitting.bin_packing import pack
from planner_service.splitting.splits import split_ranges


def plan_tasks(
    tasks: Sequence[FileScanTask], split_size: int, lookback: int, open_file_cost: int
) -> list[CombinedScanTask]:
    """Split every task, pack the splits by weight with lookback, merge adjacent splits of each bin."""
    if split_size <= 0:
        raise ValueError(f"Split size must be > 0: {split_size}")
    if lookback <= 0:
        raise ValueError(f"Split planning lookback must be > 0: {lookback}")
    if open_file_cost < 0:
        raise ValueError(f"File open cost must be >= 0: {open_file_cost}")

    owners: list[int] = []  # split -> index of its task
    starts: list[int] = []
    lengths: list[int] = []
    is_split: list[bool] = []
    weights: list[int] = []
    for index, task in enumerate(tasks):
        # every split is charged all of its file's delete bytes, and at least one open per file it opens
        delete_bytes = sum(d.content_size for d in task.deletes) if task.deletes else 0
        min_weight = (1 + len(task.deletes)) * open_file_cost
        for start, length, split in split_ranges(task.file, split_size):
            owners.append(index)
            starts.append(start)
            lengths.append(length)
            is_split.append(split)
            weights.append(max(length + delete_bytes, min_weight))

    combined = []
    for bin_items in pack(weights, split_size, lookback):
        merged: list[FileScanTask] = []
        last = -1  # the split that `merged[-1]` ends with
        for i in bin_items:
            # TableScanUtil.mergeTasks: adjacent splits of the same file whose ranges touch become one
            if (
                last >= 0
                and is_split[last]
                and is_split[i]
                and owners[last] == owners[i]
                and (starts[last] + lengths[last] == starts[i])
            ):
                prev = merged[-1]
                merged[-1] = FileScanTask(prev.file, prev.deletes, prev.start, prev.length + lengths[i],
                                          prev.residual, True)  # fmt: skip
            else:
                t = tasks[owners[i]]
                merged.append(FileScanTask(t.file, t.deletes, starts[i], lengths[i], t.residual, is_split[i]))
            last = i
        combined.append(CombinedScanTask(tuple(merged)))
    return combined

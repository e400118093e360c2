"""From file scan tasks to combined scan tasks (Java TableScanUtil.planTasks, 1.10)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from planner_service.planning.scan_tasks import CombinedScanTask, FileScanTask
from planner_service.splitting.bin_packing import pack
from planner_service.splitting.splits import split_task


def plan_tasks(
    tasks: Iterable[FileScanTask], split_size: int, lookback: int, open_file_cost: int
) -> list[CombinedScanTask]:
    """Split every task, pack the splits by weight with lookback, merge adjacent splits of each bin."""
    if split_size <= 0:
        raise ValueError(f"Split size must be > 0: {split_size}")
    if lookback <= 0:
        raise ValueError(f"Split planning lookback must be > 0: {lookback}")
    if open_file_cost < 0:
        raise ValueError(f"File open cost must be >= 0: {open_file_cost}")

    def weight(t: FileScanTask) -> int:
        # every split is charged all of its file's delete bytes, and at least one open per file it opens
        return max(t.length + sum(d.content_size for d in t.deletes), (1 + len(t.deletes)) * open_file_cost)

    splits = (s for t in tasks for s in split_task(t, split_size))
    return [CombinedScanTask(tuple(merge_adjacent(b))) for b in pack(splits, split_size, lookback, weight)]


def merge_adjacent(tasks: list[FileScanTask]) -> list[FileScanTask]:
    """Adjacent splits of the same file object whose ranges touch become one (TableScanUtil.mergeTasks)."""
    out: list[FileScanTask] = []
    for t in tasks:
        last = out[-1] if out else None
        if (
            last is not None
            and last.is_split
            and t.is_split
            and last.file is t.file
            and last.start + last.length == t.start
        ):
            out[-1] = replace(last, length=last.length + t.length)
        else:
            out.append(t)
    return out

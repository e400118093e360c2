"""Splitting a file scan task into byte ranges (Java BaseContentScanTask.split, 1.10)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import replace

from planner_service.metadata.content_file import SPLITTABLE_FORMATS
from planner_service.planning.scan_tasks import FileScanTask


def usable_split_offsets(offsets: Sequence[int] | None, file_size: int) -> Sequence[int] | None:
    """Offsets are used only when present, inside the file and strictly ascending (BaseFile rules)."""
    if not offsets or offsets[-1] >= file_size:
        return None
    if any(b <= a for a, b in itertools.pairwise(offsets)):
        return None
    return offsets


def split_task(task: FileScanTask, target_size: int) -> Iterator[FileScanTask]:
    """One split per split offset (the target size is then ignored), else fixed-size splits from 0.

    An unsplittable format yields the task itself; a splittable empty file yields nothing.
    """
    if target_size <= 0:
        raise ValueError(f"Split size must be > 0: {target_size}")
    f = task.file
    if f.format not in SPLITTABLE_FORMATS:
        yield task
        return
    length = f.file_size_in_bytes
    offsets = usable_split_offsets(f.split_offsets, length)
    if offsets is not None:
        ends = [*offsets[1:], length]
        for start, end in zip(offsets, ends, strict=True):
            yield replace(task, start=start, length=end - start, is_split=True)
        return
    start = 0
    while start < length:
        size = min(target_size, length - start)
        yield replace(task, start=start, length=size, is_split=True)
        start += size

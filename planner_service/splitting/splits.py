"""Splitting a data file into byte ranges (Java BaseContentScanTask.split, 1.10)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from planner_service.metadata.content_file import SPLITTABLE_FORMATS, ContentFile

# (start, length, is_split): is_split marks Java's SplitScanTask, the only kind that merges with neighbours
Range = tuple[int, int, bool]


def usable_split_offsets(offsets: Sequence[int] | None, file_size: int) -> Sequence[int] | None:
    """Offsets are used only when present, inside the file and strictly ascending (BaseFile rules)."""
    if not offsets or offsets[-1] >= file_size:
        return None
    if len(offsets) > 1 and any(b <= a for a, b in itertools.pairwise(offsets)):
        return None
    return offsets


def split_ranges(f: ContentFile, target_size: int) -> list[Range]:
    """One range per split offset (the target size is then ignored), else fixed-size ranges from 0.

    An unsplittable format gives the whole file, unsplit; a splittable empty file gives nothing.
    """
    if target_size <= 0:
        raise ValueError(f"Split size must be > 0: {target_size}")
    length = f.file_size_in_bytes
    if f.format not in SPLITTABLE_FORMATS:
        return [(0, length, False)]
    offsets = usable_split_offsets(f.split_offsets, length)
    if offsets is not None:
        if len(offsets) == 1:
            return [(offsets[0], length - offsets[0], True)]
        ends = [*offsets[1:], length]
        return [(s, e - s, True) for s, e in zip(offsets, ends, strict=True)]
    return [(s, min(target_size, length - s), True) for s in range(0, length, target_size)]

"""Splitting data files into byte ranges (Java BaseContentScanTask.split, 1.10), for many files at once.

A splittable file (Parquet, ORC, Avro) is cut at its split offsets when they are usable: present, the
last one inside the file, strictly ascending (BaseFile.splitOffsets / ArrayUtil.isStrictlyAscending).
The target size is then ignored: one range per offset, the first starting at offsets[0] (bytes before it
belong to no range). Otherwise it is cut in fixed-size ranges from 0; an empty splittable file gives no
range at all. An unsplittable file (Puffin, metadata) is one range, which Java does not wrap in a
SplitScanTask (`is_split` False), so it never merges with a neighbour.

Computed with numpy over all files of a plan, from their columns: a table of 200,000 files has about half a
million splits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planner_service.metadata.content_file import SPLITTABLE_FORMATS, ContentFile

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]

# (start, length, is_split): is_split marks Java's SplitScanTask, the only kind that merges with neighbours
Range = tuple[int, int, bool]


@dataclass(frozen=True)
class Splits:
    """All ranges of a sequence of files, in file order and, within a file, in offset order."""

    owner: Int64Array  # the index of the file each range belongs to
    start: Int64Array
    length: Int64Array
    is_split: BoolArray

    def __len__(self) -> int:
        return len(self.owner)


def split_files(
    sizes: Int64Array, splittable: BoolArray, offset_counts: Int64Array, flat_offsets: Int64Array, target_size: int
) -> Splits:
    """The ranges of n files: their sizes, whether each is splittable, and their split offsets (the count
    per file, and all offsets one file after the other)."""
    if target_size <= 0:
        raise ValueError(f"Split size must be > 0: {target_size}")
    n = len(sizes)
    n_offsets, flat = offset_counts, flat_offsets
    first = np.cumsum(n_offsets) - n_offsets  # index in `flat` of each file's first offset
    use_offsets = splittable & _usable_offsets(flat, first, n_offsets, sizes)

    fixed = splittable & ~use_offsets
    n_fixed = -(-sizes // target_size)  # ceil; 0 for an empty file
    count = np.where(use_offsets, n_offsets, np.where(fixed, n_fixed, 1))
    owner = np.repeat(np.arange(n, dtype=np.int64), count)
    pos = np.arange(len(owner), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)

    file_size = sizes[owner]
    by_offset = use_offsets[owner]
    flat_index = np.where(by_offset, first[owner] + pos, 0)
    offset_start = flat[flat_index] if len(flat) else np.zeros(len(owner), np.int64)
    is_last = pos == count[owner] - 1
    next_offset = flat[np.where(by_offset & ~is_last, flat_index + 1, 0)] if len(flat) else offset_start
    offset_end = np.where(is_last, file_size, next_offset)

    by_size = fixed[owner]
    start = np.where(by_offset, offset_start, np.where(by_size, pos * target_size, 0))
    end = np.where(by_offset, offset_end, np.where(by_size, np.minimum(start + target_size, file_size), file_size))
    return Splits(owner, start, end - start, by_offset | by_size)


def _usable_offsets(flat: Int64Array, first: Int64Array, count: Int64Array, sizes: Int64Array) -> BoolArray:
    """Present, last one < file size, strictly ascending (one offset is ascending)."""
    has = count > 0
    last = flat[np.where(has, first + count - 1, 0)] if len(flat) else np.zeros(len(count), np.int64)
    ok = has & (last < sizes)
    if len(flat) > 1:
        owner = np.repeat(np.arange(len(count)), count)
        descending = (np.diff(flat) <= 0) & (owner[1:] == owner[:-1])
        ok &= np.bincount(owner[1:][descending], minlength=len(count)) == 0
    return ok


def split_ranges(f: ContentFile, target_size: int) -> list[Range]:
    """The ranges of one file (split_files for a single file)."""
    offsets = np.asarray(f.split_offsets or (), dtype=np.int64)
    s = split_files(
        np.array([f.file_size_in_bytes], np.int64),
        np.array([f.format in SPLITTABLE_FORMATS]),
        np.array([len(offsets)], np.int64),
        offsets,
        target_size,
    )
    return [(int(a), int(b), bool(c)) for a, b, c in zip(s.start, s.length, s.is_split, strict=True)]

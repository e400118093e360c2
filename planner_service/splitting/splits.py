"""Splitting data files into byte ranges (Java BaseContentScanTask.split, 1.10), for many files at once.

A splittable file (Parquet, ORC, Avro) is cut at its split offsets when they are usable: present, the
last one inside the file, strictly ascending (BaseFile.splitOffsets / ArrayUtil.isStrictlyAscending).
The target size is then ignored: one range per offset, the first starting at offsets[0] (bytes before it
belong to no range). Otherwise it is cut in fixed-size ranges from 0; an empty splittable file gives no
range at all. An unsplittable file (Puffin, metadata) is one range, which Java does not wrap in a
SplitScanTask (`is_split` False), so it never merges with a neighbour.

Computed over all files of a plan at once, from their columns, by a compiled loop
(planner_service/csrc/splitting.c): a table of 200,000 files has about half a million splits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planner_service import _kernels
from planner_service.splitting.stop import Stop, never

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


@dataclass(frozen=True)
class Splits:
    """All ranges of a sequence of files, in file order and, within a file, in offset order."""

    owner: Int64Array  # the index of the file each range belongs to
    start: Int64Array
    length: Int64Array
    is_split: BoolArray
    weight: Int64Array  # for packing: the length plus the file's delete bytes, at least its files' open costs

    def __len__(self) -> int:
        return len(self.owner)


def split_files(
    sizes: Int64Array,
    splittable: BoolArray,
    offset_counts: Int64Array,
    flat_offsets: Int64Array,
    target_size: int,
    delete_bytes: Int64Array | None = None,
    delete_counts: Int64Array | None = None,
    open_file_cost: int = 0,
    stop: Stop | None = None,
) -> Splits:
    """The ranges of n files: their sizes, whether each is splittable, and their split offsets (the count
    per file, and all offsets one file after the other); weighed for packing (TableScanUtil.planTasks)
    with the content bytes and number of the delete files of each file (none when not given). Count them
    first (count_ranges) where their number is not bounded otherwise: this allocates them all."""
    if target_size <= 0:
        raise ValueError(f"Split size must be > 0: {target_size}")
    stop = stop or never()
    zeros = np.zeros(len(sizes), np.int64)
    split = _kernels.split_files(
        int64(sizes),
        np.ascontiguousarray(splittable, dtype=np.bool_),
        int64(offset_counts),
        int64(flat_offsets),
        int(target_size),
        int64(zeros if delete_bytes is None else delete_bytes),
        int64(zeros if delete_counts is None else delete_counts),
        int(open_file_cost),
        stop.flag,
        stop.deadline,
    )
    if split is None:
        stop.stopped()
    owner, start, length, is_split, weight = split
    return Splits(
        np.frombuffer(owner, np.int64),
        np.frombuffer(start, np.int64),
        np.frombuffer(length, np.int64),
        np.frombuffer(is_split, np.bool_),
        np.frombuffer(weight, np.int64),
    )


def split_weights(
    lengths: Int64Array, delete_bytes: Int64Array, delete_counts: Int64Array, open_file_cost: int
) -> Int64Array:
    """Each range's weight for packing, as split_files weighs the ranges it makes (one rule, in C): its length
    plus its file's delete bytes, at least an open-file cost for the file and for each of its deletes."""
    weights = _kernels.split_weights(int64(lengths), int64(delete_bytes), int64(delete_counts), int(open_file_cost))
    return np.frombuffer(weights, np.int64)


def count_ranges(
    sizes: Int64Array, splittable: BoolArray, offset_counts: Int64Array, flat_offsets: Int64Array, target_size: int
) -> int:
    """How many ranges split_files cuts these files into, found without making them (O(files))."""
    if target_size <= 0:
        raise ValueError(f"Split size must be > 0: {target_size}")
    return _kernels.count_ranges(
        int64(sizes),
        np.ascontiguousarray(splittable, dtype=np.bool_),
        int64(offset_counts),
        int64(flat_offsets),
        int(target_size),
    )


def int64(values: Int64Array) -> Int64Array:
    """`values` as the contiguous int64 array the kernels take (no copy when it already is one)."""
    return np.ascontiguousarray(values, dtype=np.int64)

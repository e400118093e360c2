"""Per-file Python values in the column form the splitting kernels take, and their answers back as lists:
what tests hold to Iceberg Java's per-file semantics (the service itself works on columns throughout)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

from planner_service.metadata.content_file import SPLITTABLE_FORMATS, ContentFile
from planner_service.splitting.bin_packing import pack_bins
from planner_service.splitting.combine import FileColumns
from planner_service.splitting.splits import split_files

# (start, length, is_split): is_split marks Java's SplitScanTask, the only kind that merges with neighbours
Range = tuple[int, int, bool]


def pack(weights: Sequence[int], target_weight: int, lookback: int, largest_bin_first: bool = True) -> list[list[int]]:
    """The item indices of each bin, in output order (pack_bins as lists)."""
    bins = pack_bins(np.asarray(weights, dtype=np.int64), target_weight, lookback, largest_bin_first)
    out: list[list[int]] = [[] for _ in range(int(bins.max()) + 1 if len(bins) else 0)]
    for item, b in enumerate(bins.tolist()):
        out[b].append(item)
    return out


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


def file_columns(
    sizes: Sequence[int],
    formats: Sequence[str],
    split_offsets: Sequence[Sequence[int] | None],
    record_counts: Sequence[int],
    delete_bytes: Sequence[int] | None = None,
    delete_counts: Sequence[int] | None = None,
) -> FileColumns:
    """FileColumns from per-file Python values."""
    n = len(sizes)
    offsets = [o or () for o in split_offsets]
    zeros = [0] * n
    return FileColumns(
        np.asarray(sizes, np.int64).reshape(n),
        np.fromiter((f.upper() in SPLITTABLE_FORMATS for f in formats), bool, n),
        np.fromiter((len(o) for o in offsets), np.int64, n),
        np.fromiter(chain.from_iterable(offsets), np.int64),
        np.asarray(record_counts, np.int64).reshape(n),
        np.asarray(delete_bytes if delete_bytes is not None else zeros, np.int64).reshape(n),
        np.asarray(delete_counts if delete_counts is not None else zeros, np.int64).reshape(n),
    )

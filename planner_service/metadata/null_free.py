"""Which columns a set of data files is known to hold no null in: the field ids that every file's manifest
entry gives a null count of 0 (null_value_counts, field 110).

A file that gives no count for a field (metrics mode none, a column added after the file was written, a
writer that kept no metrics) says nothing about it, so one such file leaves the field unproven. Decoded
with each manifest and kept as one small set per manifest, not per file: the sets of the manifests a plan
reads, intersected, prove a column for every file of the plan (a superset of its files; what a filter drops
can only make the proof stronger than needed, never wrong).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

from planner_service.metadata.avro_columns import numpy_of

BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
Int64Array = np.ndarray[Any, np.dtype[np.int64]]
# Field ids are counted in a dense table up to this id (ids are small: schemas number their fields from 1);
# a manifest with larger ones proves nothing for them.
MAX_DENSE_ID = 1 << 16

NullFree = frozenset[int] | None  # None: no file at all, so no constraint (the identity of `intersect`)


def null_free_fields(
    counts: pa.Array | None, live: BoolArray, manifest_of_row: Int64Array, manifests: int
) -> list[NullFree]:
    """Per manifest, the field ids whose null count is present and 0 in every live row (`counts`: the
    entries' null_value_counts as list<struct<key, value>>, None when the manifests' schema lacks it;
    `live`: which rows are live; `manifest_of_row`: each row's manifest, ascending)."""
    live_rows = np.bincount(manifest_of_row[live], minlength=manifests)
    out: list[NullFree] = [None if n == 0 else frozenset() for n in live_rows.tolist()]
    if counts is None or not live.any() or pa.types.is_null(counts.type):
        return out
    if isinstance(counts, pa.ChunkedArray):
        counts = counts.combine_chunks()
    offsets = np.asarray(counts.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    entries = counts.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    lengths = np.diff(offsets)
    if counts.null_count:  # a file without the map: its row proves nothing
        lengths = np.where(np.asarray(counts.is_null().to_numpy(zero_copy_only=False), dtype=bool), 0, lengths)
    keys, missing_key = numpy_of(entries.field("key").cast(pa.int64()))
    values, missing_value = numpy_of(entries.field("value").cast(pa.int64()))
    zero = values == 0
    if missing_key is not None:
        zero &= ~missing_key
    if missing_value is not None:
        zero &= ~missing_value
    entry_row = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    zero &= live[entry_row] & (keys >= 0) & (keys < MAX_DENSE_ID)
    if not zero.any():
        return out
    keys, manifest = keys[zero], manifest_of_row[entry_row[zero]]
    width = int(keys.max()) + 1
    proven = np.bincount(manifest * width + keys, minlength=manifests * width).reshape(manifests, width)
    for m, n in enumerate(live_rows.tolist()):
        if n:
            out[m] = frozenset(np.flatnonzero(proven[m] == n).tolist())
    return out


def intersect(sets: Iterable[NullFree]) -> NullFree:
    """The fields every one of `sets` proves (None for no sets, or only Nones)."""
    out: NullFree = None
    for s in sets:
        if s is not None:
            out = s if out is None else out & s
    return out

"""Which columns a set of data files is known to hold no null in: the field ids that every file's manifest
entry gives a null count of 0 (null_value_counts, field 110).

A file that gives no count for a field (metrics mode none, a column added after the file was written, a
writer that kept no metrics) says nothing about it, so one such file leaves the field unproven; so does a
map that gives a field twice, once with another count. Each entry's proof is a bitmap of field ids
(`ZeroKeys`: 64-bit words, bit k of word k // 64 for field k), made by the decoder as it reads the entry
(metadata/avro_columns.py) or from the decoded counts when the plan reads all statistics anyway; the
bitmaps of a manifest's live entries, ANDed, are its proof, kept as one small set per manifest, not per
file. The sets of the manifests a plan reads, intersected, prove a column for every file of the plan (a
superset of its files; what a filter drops can only make the proof stronger than needed, never wrong).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

from planner_service.metadata.avro_columns import MAX_MASK_WORDS, numpy_of

BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
Int64Array = np.ndarray[Any, np.dtype[np.int64]]
ZeroKeys = np.ndarray[Any, np.dtype[np.uint64]]  # (entries, words): each entry's proven field ids as bits
NullFree = frozenset[int] | None  # None: no file at all, so no constraint (the identity of `intersect`)

# Without the table schema in a manifest's header, ids below 1,024 are proven.
DEFAULT_WORDS = 16
_FIELD_ID = re.compile(rb'"(?:id|element-id|key-id|value-id)"\s*:\s*(\d+)')


@functools.lru_cache(maxsize=64)
def mask_words(table_schema: str | None) -> int:
    """How many 64-bit words hold a bit for every field id of `table_schema` (the JSON a manifest's header
    keeps under "schema"), at most MAX_MASK_WORDS (ids past 65,535 are never proven)."""
    if not table_schema:
        return DEFAULT_WORDS
    ids = [int(m) for m in _FIELD_ID.findall(table_schema.encode())]
    return min(MAX_MASK_WORDS, max(ids, default=0) // 64 + 1)


def zero_keys_of(masks: pa.Array | None, length: int) -> ZeroKeys | None:
    """The decoder's bitmaps (fixed-size binary, one per entry; None: the manifests have no null counts
    that can be read so) as an (entries, words) array, without a copy."""
    if masks is None or pa.types.is_null(masks.type):
        return None
    assert isinstance(masks.type, pa.FixedSizeBinaryType) and masks.offset == 0
    words = masks.type.byte_width // 8
    return np.frombuffer(masks.buffers()[1], dtype=np.uint64, count=length * words).reshape(length, words)


def zero_keys_from_counts(counts: pa.Array | None, words: int) -> ZeroKeys | None:
    """The same bitmaps from decoded null counts (list<struct<key, value>>), for plans that decode them."""
    if counts is None or pa.types.is_null(counts.type):
        return None
    if isinstance(counts, pa.ChunkedArray):
        counts = counts.combine_chunks()
    offsets = np.asarray(counts.offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    entries = counts.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    lengths = np.diff(offsets)
    if counts.null_count:  # a file without the map: its row proves nothing
        lengths = np.where(np.asarray(counts.is_null().to_numpy(zero_copy_only=False), dtype=bool), 0, lengths)
    keys, missing_key = numpy_of(entries.field("key").cast(pa.int64()))
    values, missing_value = numpy_of(entries.field("value").cast(pa.int64()))
    row = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    usable = (keys >= 0) & (keys < 64 * words)
    if missing_key is not None:
        usable &= ~missing_key
    zero = usable & (values == 0)
    if missing_value is not None:
        zero &= ~missing_value
    proven, other = np.zeros(len(lengths) * words, np.uint64), np.zeros(len(lengths) * words, np.uint64)
    bits = np.left_shift(np.uint64(1), (keys & 63).astype(np.uint64))
    word = row * words + (keys >> 6)
    np.bitwise_or.at(proven, word[zero], bits[zero])
    np.bitwise_or.at(other, word[usable & ~zero], bits[usable & ~zero])
    return (proven & ~other).reshape(len(lengths), words)


def null_free_fields(
    zero_keys: ZeroKeys | None, live: BoolArray, manifest_of_row: Int64Array, manifests: int
) -> list[NullFree]:
    """Per manifest, the field ids that every live row proves (`zero_keys`: each row's bitmap, None when
    the manifests have no null counts; `live`: which rows are live; `manifest_of_row`: each row's manifest,
    ascending)."""
    live_rows = np.bincount(manifest_of_row[live], minlength=manifests)
    out: list[NullFree] = [None if n == 0 else frozenset() for n in live_rows.tolist()]
    if zero_keys is None or not live.any():
        return out
    rows = zero_keys[live] if not live.all() else zero_keys
    present = np.flatnonzero(live_rows)  # manifests with live rows: their rows are contiguous, in order
    starts = np.searchsorted(manifest_of_row[live], present)
    proven = np.bitwise_and.reduceat(rows, starts, axis=0)
    bits = np.unpackbits(proven.view(np.uint8), axis=1, bitorder="little")
    for m, fields in zip(present.tolist(), bits, strict=True):
        out[m] = frozenset(np.flatnonzero(fields).tolist())
    return out


def intersect(sets: Iterable[NullFree]) -> NullFree:
    """The fields every one of `sets` proves (None for no sets, or only Nones)."""
    out: NullFree = None
    for s in sets:
        if s is not None:
            out = s if out is None else out & s
    return out

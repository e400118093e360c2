"""Iceberg Java plans manifests in `java.util.HashSet` order (ManifestGroup: Sets.newHashSet(manifests)).

Bin packing depends on input order, so reproducing Java's CombinedScanTasks means reproducing that order:
HashMap buckets 0..capacity-1, each bucket in insertion (manifest-list) order. The hash is
GenericManifestFile.hashCode() = 31 + path.hashCode(), spread as h ^ (h >>> 16). The capacity follows
JDK 17's `new HashSet<>(collection)`: tableSizeFor(max((int)(n / .75f) + 1, 16)). (JDK 19+ sizes the
table differently for n = 3 * 2^k, k >= 2; Java 17 is the reference here.) Bins long enough to be
treeified (>= 8 colliding paths) are not modelled; they do not occur with real manifest paths.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")
_MASK = 0xFFFFFFFF


def java_string_hash(text: str) -> int:
    """String.hashCode over UTF-16 code units, as an unsigned 32-bit value."""
    return int(java_string_hashes([text])[0])


def java_string_hashes(texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.uint32]]:
    """String.hashCode of each text, all at once: the sum of each UTF-16 code unit times 31 to the power of the
    units after it, in unsigned 32-bit arithmetic (which wraps as Java's int does)."""
    encoded = "".join(texts).encode("utf-16-be")
    if len(encoded) == 2 * sum(len(t) for t in texts):  # no text has a character above U+FFFF (two units)
        lengths = np.fromiter((len(t) for t in texts), np.int64, len(texts))
    else:
        lengths = np.fromiter((len(t.encode("utf-16-be")) // 2 for t in texts), np.int64, len(texts))
    if not len(encoded):
        return np.zeros(len(texts), np.uint32)
    flat = np.frombuffer(encoded, ">u2").astype(np.uint32)
    ends = np.cumsum(lengths)
    after = np.repeat(ends, lengths) - 1 - np.arange(len(flat))  # units after each unit in its text
    powers = np.cumprod(np.full(int(lengths.max()), 31, np.uint32), dtype=np.uint32)
    powers = np.concatenate(([np.uint32(1)], powers[:-1]))
    terms = flat * powers[after]
    out = np.zeros(len(texts), np.uint32)
    filled = lengths > 0  # (reduceat would give an empty text its next unit)
    out[filled] = np.add.reduceat(terms, (ends - lengths)[filled], dtype=np.uint32)
    return out


def _table_size_for(cap: int) -> int:
    n = 1
    while n < cap:
        n <<= 1
    return min(n, 1 << 30)


def hashset_capacity(n: int) -> int:
    initial = int(np.float32(n) / np.float32(0.75)) + 1  # Java float arithmetic: (int) (n / .75f) + 1
    return _table_size_for(max(initial, 16))


def hashset_order(items: Sequence[T], path: Callable[[T], str]) -> list[T]:
    cap = hashset_capacity(len(items))  # HashSet(Collection) sizes itself by the collection, duplicates too
    first: dict[str, T] = {}
    for item in items:  # equal by path (GenericManifestFile.equals): the set keeps the first
        first.setdefault(path(item), item)
    h = (java_string_hashes(list(first)) + np.uint32(31)).astype(np.uint32)
    bucket = (h ^ (h >> np.uint32(16))) & np.uint32(cap - 1)
    kept = list(first.values())
    return [kept[i] for i in np.argsort(bucket, kind="stable").tolist()]

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
from typing import TypeVar

import numpy as np

T = TypeVar("T")
_MASK = 0xFFFFFFFF


def java_string_hash(text: str) -> int:
    """String.hashCode over UTF-16 code units, as an unsigned 32-bit value."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK
    return h


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
    buckets: dict[int, list[T]] = {}
    seen: set[str] = set()
    for item in items:
        key = path(item)
        if key in seen:  # equal by path (GenericManifestFile.equals): the set keeps the first
            continue
        seen.add(key)
        h = (31 + java_string_hash(key)) & _MASK
        buckets.setdefault((h ^ (h >> 16)) & (cap - 1), []).append(item)
    return [item for b in sorted(buckets) for item in buckets[b]]

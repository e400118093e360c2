"""Caches of immutable metadata: metadata.json, manifest lists and manifests never change once written,
so caching them by location is always correct. Bounded by an estimate of their size in memory."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

V = TypeVar("V")


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    entries: int = 0
    bytes: int = 0


class LruCache(Generic[V]):
    """A thread-safe LRU cache keyed by location, holding at most `max_bytes` (by `weigh`)."""

    def __init__(self, max_bytes: int, weigh: Callable[[V], int]) -> None:
        self._max_bytes = max_bytes
        self._weigh = weigh
        self._data: OrderedDict[str, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = CacheStats()

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    def __contains__(self, key: str) -> bool:
        """Whether `key` is kept (neither counted as a hit or miss nor made more recent)."""
        with self._lock:
            return key in self._data

    def get(self, key: str) -> V | None:
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                self.stats.misses += 1
                return None
            self._data.move_to_end(key)
            self.stats.hits += 1
            return hit[0]

    def put(self, key: str, value: V, evict: bool = True) -> None:
        """Keep `value`, evicting the least recently used as needed; with `evict` False only if it fits
        beside what is kept (a scan of more than the cache holds then keeps its first part, not a cycling
        window of it that the next scan of the same misses entirely)."""
        weight = self._weigh(value)
        if weight > self._max_bytes:
            return
        with self._lock:
            if not evict and self.stats.bytes + weight > self._max_bytes and key not in self._data:
                return
            replaced = self._data.pop(key, None)  # a newer value replaces the old (e.g. with more in it)
            if replaced is not None:
                self.stats.bytes -= replaced[1]
            self._data[key] = (value, weight)
            self.stats.bytes += weight
            while self.stats.bytes > self._max_bytes and self._data:
                _, (_, w) = self._data.popitem(last=False)
                self.stats.bytes -= w
                self.stats.evictions += 1
            self.stats.entries = len(self._data)

    def discard(self, key: str) -> None:
        with self._lock:
            dropped = self._data.pop(key, None)
            if dropped is not None:
                self.stats.bytes -= dropped[1]
                self.stats.entries = len(self._data)

    def get_or_load(self, key: str, load: Callable[[], V]) -> V:
        with self._lock:
            hit = self._data.get(key)
            if hit is not None:
                self._data.move_to_end(key)
                self.stats.hits += 1
                return hit[0]
            self.stats.misses += 1
        value = load()  # outside the lock: two concurrent misses may both load, which is harmless
        self.put(key, value)
        return value

"""LruCache: bounded by the weight of what it holds, least recently used out first; a value put again
under its key replaces the old one (the planner upgrades a manifest decoded without statistics)."""

from __future__ import annotations

from collections.abc import Callable

from planner_service.cache import LruCache


def test_evicts_least_recently_used_by_weight() -> None:
    cache: LruCache[str] = LruCache(10, len)
    cache.put("a", "aaaa")
    cache.put("b", "bbbb")
    assert cache.get("a") == "aaaa"  # a is now the most recently used
    cache.put("c", "cccc")  # 12 > 10: b goes
    assert cache.get("b") is None
    assert (cache.get("a"), cache.get("c")) == ("aaaa", "cccc")
    assert cache.stats.bytes == 8 and cache.stats.evictions == 1


def test_put_replaces_and_reweighs() -> None:
    cache: LruCache[str] = LruCache(10, len)
    cache.put("a", "aa")
    cache.put("a", "aaaaaa")
    assert cache.get("a") == "aaaaaa"
    assert cache.stats.bytes == 6 and cache.stats.entries == 1


def test_discard() -> None:
    cache: LruCache[str] = LruCache(10, len)
    cache.put("a", "aa")
    cache.discard("a")
    cache.discard("missing")
    assert cache.get("a") is None and cache.stats.bytes == 0 and cache.stats.entries == 0


def test_too_heavy_values_are_not_kept_and_loads_run_once() -> None:
    cache: LruCache[str] = LruCache(3, len)
    cache.put("big", "xxxx")
    assert cache.get("big") is None
    calls: list[int] = []

    def loader(value: str) -> Callable[[], str]:
        def load() -> str:
            calls.append(1)
            return value

        return load

    assert cache.get_or_load("k", loader("v")) == "v"
    assert cache.get_or_load("k", loader("w")) == "v"
    assert calls == [1]

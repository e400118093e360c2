"""Expected bins are Iceberg Java's own (core TestBinPacking, and the 1.10 reference's example)."""

import pytest

from tests.splitting.columns import pack

UNLIMITED = 2**31 - 1


def _pack(items: list[int], target: int, lookback: int = UNLIMITED, largest_first: bool = False) -> list[list[int]]:
    return [[items[i] for i in b] for b in pack(items, target, lookback, largest_first)]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (3, [[1, 2], [3], [4], [5]]),
        (5, [[1, 2], [3], [4], [5]]),
        (6, [[1, 2, 3], [4], [5]]),
        (8, [[1, 2, 3], [4], [5]]),
        (9, [[1, 2, 3], [4, 5]]),
        (10, [[1, 2, 3, 4], [5]]),
        (14, [[1, 2, 3, 4], [5]]),
        (15, [[1, 2, 3, 4, 5]]),
    ],
)
def test_basic_bin_packing(target: int, expected: list[list[int]]) -> None:
    assert _pack([1, 2, 3, 4, 5], target) == expected


def test_lookback() -> None:
    assert _pack([5, 1, 5, 1, 5, 1], 8) == [[5, 1, 1, 1], [5], [5]]
    assert _pack([5, 1, 5, 1, 5, 1], 8, 2) == [[5, 1, 1], [5, 1], [5]]
    assert _pack([5, 1, 5, 1, 5, 1], 8, 1) == [[5, 1], [5, 1], [5, 1]]
    assert _pack([32, 32, 32, 32, 64, 64, 128], 128, 1) == [[32, 32, 32, 32], [64, 64], [128]]
    assert _pack([128, 64, 64, 32, 32, 32, 32], 128, 1) == [[128], [64, 64], [32, 32, 32, 32]]


def test_largest_bin_first_eviction() -> None:
    assert _pack([36, 36, 36, 36, 65, 65, 128], 128, 2, largest_first=True) == [[36, 36, 36], [128], [36, 65], [65]]


def test_oversized_item_gets_its_own_bin() -> None:
    assert _pack([200, 1, 1], 100, 10, largest_first=True) == [[200], [1, 1]]


def test_lookback_must_be_positive() -> None:
    with pytest.raises(ValueError, match="lookback must be > 0: 0"):
        _pack([1], 10, 0)


@pytest.mark.parametrize("largest_first", [True, False])
def test_groups_pack_as_if_each_were_alone(largest_first: bool) -> None:
    """Java's planTaskGroups packs each key's splits on their own and lists the keys' bins one after another:
    `breaks` does that in one pass (the bins still open come out, oldest first, where a group starts)."""
    import numpy as np

    from planner_service.splitting.bin_packing import pack_bins

    groups = [[36, 36, 36, 36, 65], [65, 128, 1], [5, 1, 5, 1, 5, 1]]
    alone = [b for g in groups for b in _pack(g, 128, 2, largest_first)]
    items = [w for g in groups for w in g]
    breaks = np.array([i == 0 for g in groups for i in range(len(g))])
    bins = pack_bins(np.array(items, dtype=np.int64), 128, 2, largest_first, breaks)
    together = [[items[i] for i in np.flatnonzero(bins == b)] for b in range(int(bins.max()) + 1)]
    assert together == alone

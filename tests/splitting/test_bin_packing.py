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


def _java_packing(
    weights: list[int], target: int, lookback: int, largest_first: bool, starts: list[bool]
) -> list[list[int]]:
    """BinPacking.PackingIterable as Java writes it (a list of open bins scanned per item), each group packed
    on its own: the reference both of the compiled loops (a scan, and a tree for long lookbacks) must equal."""
    out: list[list[int]] = []
    bins: list[tuple[list[int], list[int]]] = []  # (items, [weight])
    for item, w in enumerate(weights):
        if starts[item]:
            out.extend(items for items, _ in bins)
            bins = []
        fit = next((b for b in bins if b[1][0] + w <= target), None)
        if fit is not None:
            fit[0].append(item)
            fit[1][0] += w
            continue
        bins.append(([item], [w]))
        if len(bins) > lookback:
            heaviest = max(range(len(bins)), key=lambda i: (bins[i][1][0], -i)) if largest_first else 0
            out.append(bins.pop(heaviest)[0])
    out.extend(items for items, _ in bins)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_long_lookbacks_pack_as_java_does(seed: int) -> None:
    """A lookback past the loop's scan (32 open bins) packs through a tree: the same bins, the same order, as
    Java's scan of its open bins, for lookbacks on both sides of that line, with groups and equal weights."""
    import random

    import numpy as np

    from planner_service.splitting.bin_packing import pack_bins

    rng = random.Random(seed)
    n = rng.choice([50, 400, 3000])
    weights = [rng.choice([rng.randint(0, 130), 64, 1, 128, 200]) for _ in range(n)]
    starts = [i == 0 or rng.random() < rng.choice([0.0, 0.01, 0.2]) for i in range(n)]
    for lookback in (1, 31, 32, 33, 100, 1000, UNLIMITED):
        for largest_first in (True, False):
            expected = _java_packing(weights, 128, lookback, largest_first, starts)
            bins = pack_bins(np.array(weights, np.int64), 128, lookback, largest_first, np.array(starts))
            got = [np.flatnonzero(bins == b).tolist() for b in range(int(bins.max()) + 1)]
            assert got == expected, (lookback, largest_first)


def test_an_unbounded_lookback_packs_in_n_log_n() -> None:
    """Java's int range of lookback over many bins that never fill (each item bigger than half the target):
    a loop over every open bin would take minutes; the tree takes well under a second."""
    import time

    import numpy as np

    from planner_service.splitting.bin_packing import pack_bins

    weights = np.full(300_000, 70, np.int64)
    began = time.process_time()
    bins = pack_bins(weights, 128, UNLIMITED, True)
    assert time.process_time() - began < 5  # a scan: 300,000 x 150,000 steps
    assert int(bins.max()) + 1 == 300_000


def test_a_stopped_packing_raises_its_reason() -> None:
    """The loop looks at its stop flag and deadline as it goes: set, it ends early with the plan's reason."""
    import time

    import numpy as np

    from planner_service.errors import PlanCancelledError, PlanTimeoutError
    from planner_service.planning.admission import Cancellation
    from planner_service.splitting.bin_packing import pack_bins

    weights = np.full(200_000, 70, np.int64)
    cancelled = Cancellation()
    cancelled.cancel()
    with pytest.raises(PlanCancelledError):
        pack_bins(weights, 128, UNLIMITED, True, stop=cancelled.stop())
    late = Cancellation()
    late.limit(0.001)
    time.sleep(0.01)
    with pytest.raises(PlanTimeoutError, match="plan_timeout_seconds"):
        pack_bins(weights, 128, 10, True, stop=late.stop())
    assert len(pack_bins(weights, 128, 10, True, stop=Cancellation().stop())) == 200_000

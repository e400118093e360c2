"""First-fit bin packing with a lookback of open bins (Java BinPacking.PackingIterable, 1.10).

Packing is sequential by nature (each item's bin depends on every earlier one), so the loop is compiled
with numba: half a million splits pack in milliseconds instead of the better part of a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit

Int64Array = np.ndarray[Any, np.dtype[np.int64]]


def pack_bins(weights: Int64Array, target_weight: int, lookback: int, largest_bin_first: bool = True) -> Int64Array:
    """The bin of each item, bins numbered in output order.

    Each item goes to the oldest open bin it fits in, else to a new bin. Past `lookback` open bins one bin
    is closed: the heaviest (the first of equals) with `largest_bin_first`, else the oldest. Closed bins
    come out in closing order, then the open ones oldest first. An item heavier than the target gets a
    bin of its own. Within a bin, items keep their input order."""
    if lookback <= 0:
        raise ValueError(f"Split planning lookback must be > 0: {lookback}")
    items = np.ascontiguousarray(weights, dtype=np.int64)
    slots = min(lookback, len(items)) + 1  # never more open bins than items (lookback may be 2^31 - 1)
    return _pack(items, np.int64(target_weight), np.int64(lookback), np.int64(slots), largest_bin_first)


def load_compiled() -> None:
    """Load (or compile) the packing loop now: a service calls this at start, not on its first plan."""
    pack_bins(np.ones(2, dtype=np.int64), 1, 1)


def pack(weights: Sequence[int], target_weight: int, lookback: int, largest_bin_first: bool = True) -> list[list[int]]:
    """The item indices of each bin, in output order (pack_bins as lists)."""
    bins = pack_bins(np.asarray(weights, dtype=np.int64), target_weight, lookback, largest_bin_first)
    out: list[list[int]] = [[] for _ in range(int(bins.max()) + 1 if len(bins) else 0)]
    for item, b in enumerate(bins.tolist()):
        out[b].append(item)
    return out


@njit(cache=True, nogil=True)
def _pack(weights: Any, target: Any, lookback: Any, slots: Any, largest_first: bool) -> Any:  # pragma: no cover
    n = len(weights)
    created = np.empty(n, np.int64)  # the creation number of each item's bin
    ordinal = np.empty(n, np.int64)  # creation number -> output position
    open_id = np.empty(slots, np.int64)
    open_weight = np.empty(slots, np.int64)
    n_open = 0
    n_created = 0
    n_out = 0
    for item in range(n):
        w = weights[item]
        room = target - w
        placed = False
        for i in range(n_open):
            if open_weight[i] <= room:
                open_weight[i] += w
                created[item] = open_id[i]
                placed = True
                break
        if placed:
            continue
        open_id[n_open] = n_created
        open_weight[n_open] = w
        created[item] = n_created
        n_open += 1
        n_created += 1
        if n_open > lookback:
            j = 0
            if largest_first:
                for i in range(1, n_open):
                    if open_weight[i] > open_weight[j]:
                        j = i
            ordinal[open_id[j]] = n_out
            n_out += 1
            for i in range(j, n_open - 1):
                open_id[i] = open_id[i + 1]
                open_weight[i] = open_weight[i + 1]
            n_open -= 1
    for i in range(n_open):
        ordinal[open_id[i]] = n_out
        n_out += 1
    out = np.empty(n, np.int64)
    for item in range(n):
        out[item] = ordinal[created[item]]
    return out

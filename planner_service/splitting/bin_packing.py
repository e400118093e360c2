"""First-fit bin packing with a lookback of open bins (Java BinPacking.PackingIterable, 1.10).

Packing is sequential by nature (each item's bin depends on every earlier one), so the loop is compiled
C (planner_service/csrc/bin_packing.c): half a million splits pack in milliseconds instead of the better
part of a second. Java looks through every open bin for each item; so does the loop for a short lookback,
while a long one (any int: it is a read option) finds bins through a tree, O(log lookback) an item.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner_service import _kernels
from planner_service.splitting.stop import Stop, never

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


def pack_bins(
    weights: Int64Array,
    target_weight: int,
    lookback: int,
    largest_bin_first: bool = True,
    breaks: BoolArray | None = None,
    stop: Stop | None = None,
) -> Int64Array:
    """The bin of each item, bins numbered in output order.

    Each item goes to the oldest open bin it fits in, else to a new bin. Past `lookback` open bins one bin
    is closed: the heaviest (the first of equals) with `largest_bin_first`, else the oldest. Closed bins
    come out in closing order, then the open ones oldest first. An item heavier than the target gets a
    bin of its own. Within a bin, items keep their input order. An item that `breaks` marks starts a group:
    the bins still open come out first (oldest first), as at the end of the input, so that each group is
    packed as if alone (Java's planTaskGroups packs each key's splits on their own, one key after another).
    `stop` ends the loop early (its reason raised)."""
    if lookback <= 0:
        raise ValueError(f"Split planning lookback must be > 0: {lookback}")
    stop = stop or never()
    items = np.ascontiguousarray(weights, dtype=np.int64)
    given = (items, int(target_weight), int(lookback), largest_bin_first, stop.flag, stop.deadline)
    if breaks is None:
        packed = _kernels.pack_bins(*given)
    else:
        packed = _kernels.pack_bins(*given, np.ascontiguousarray(breaks, dtype=np.bool_).view(np.uint8))
    if packed is None:
        stop.stopped()
    return np.frombuffer(packed, dtype=np.int64)

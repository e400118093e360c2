"""First-fit bin packing with a lookback of open bins (Java BinPacking.PackingIterable, 1.10)."""

from __future__ import annotations

from collections.abc import Sequence


def pack(weights: Sequence[int], target_weight: int, lookback: int, largest_bin_first: bool = True) -> list[list[int]]:
    """Pack item indices into bins. Each item goes to the oldest open bin it fits in, else to a new bin.
    Past `lookback` open bins one bin is closed: the heaviest (the first of equals) with
    `largest_bin_first`, else the oldest. Closed bins come out in closing order, then the open ones
    oldest first. An item heavier than the target gets a bin of its own."""
    if lookback <= 0:
        raise ValueError(f"Split planning lookback must be > 0: {lookback}")
    open_items: list[list[int]] = []
    open_weights: list[int] = []
    out: list[list[int]] = []
    for item, w in enumerate(weights):
        room = target_weight - w
        for i, bin_weight in enumerate(open_weights):
            if bin_weight <= room:
                open_items[i].append(item)
                open_weights[i] = bin_weight + w
                break
        else:
            open_items.append([item])
            open_weights.append(w)
            if len(open_items) > lookback:
                i = open_weights.index(max(open_weights)) if largest_bin_first else 0
                out.append(open_items.pop(i))
                open_weights.pop(i)
    out.extend(open_items)
    return out

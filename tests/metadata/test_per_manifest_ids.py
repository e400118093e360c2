"""Ids numbered per manifest and partitions interned by group, checked against plain Python on random
inputs (both take an O(n) path when the table of pairs is small, a sort otherwise)."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_service.metadata.file_index import intern_partitions
from planner_service.metadata.manifest import _per_manifest


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 40)), max_size=60), st.integers(0, 2000))
def test_each_manifest_numbers_its_ids_ascending(rows: list[tuple[int, int]], extra: int) -> None:
    rows.sort(key=lambda r: r[0])
    manifests = 6
    distinct = max((i for _, i in rows), default=0) + 1 + extra  # a large `extra` takes the sorting path
    manifest_of_row = np.array([m for m, _ in rows], dtype=np.int64)
    ids = np.array([i for _, i in rows], dtype=np.int64)
    local, used = _per_manifest(ids, manifest_of_row, manifests, distinct)
    expected_used = [sorted({i for m2, i in rows if m2 == m}) for m in range(manifests)]
    assert used == expected_used
    assert local.tolist() == [expected_used[m].index(i) for m, i in rows]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=50))
def test_partitions_are_numbered_in_first_seen_order(values: list[int]) -> None:
    partition = pl.Series("partition", [{"x": v} for v in values], dtype=pl.Struct({"x": pl.Int64}))
    first_row = np.array([values.index(v) for v in values], dtype=np.int64)
    partitions, ids = intern_partitions(0, partition, first_row)
    seen = list(dict.fromkeys(values))
    assert partitions == tuple((0, (v,)) for v in seen)
    assert ids.tolist() == [seen.index(v) for v in values]

"""null_free_fields: per manifest, the field ids every live entry's null_value_counts gives 0 (the spec's
field 110: a missing count, or a missing map, says nothing)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from planner_service.metadata.null_free import MAX_DENSE_ID, intersect, null_free_fields

COUNTS = pa.large_list(pa.struct([("key", pa.int32()), ("value", pa.int64())]))


def counts(*rows: dict[int, int] | None) -> pa.Array:
    return pa.array([None if r is None else [{"key": k, "value": v} for k, v in r.items()] for r in rows], COUNTS)


def test_a_field_is_proven_when_every_live_file_counts_no_null() -> None:
    nulls = counts({1: 0, 2: 0, 3: 5}, {1: 0, 2: 0, 3: 0}, {1: 0, 3: 0})
    live = np.array([True, True, True])
    assert null_free_fields(nulls, live, np.zeros(3, np.int64), 1) == [frozenset({1})]


def test_deleted_entries_do_not_count() -> None:
    nulls = counts({1: 0}, {1: 7}, {1: 0})
    live = np.array([True, False, True])  # the file with nulls is a DELETED entry
    assert null_free_fields(nulls, live, np.zeros(3, np.int64), 1) == [frozenset({1})]


def test_a_file_without_the_map_proves_nothing() -> None:
    nulls = counts({1: 0, 2: 0}, None)
    assert null_free_fields(nulls, np.array([True, True]), np.zeros(2, np.int64), 1) == [frozenset()]


def test_each_manifest_has_its_own_set_and_one_without_live_files_none() -> None:
    nulls = counts({1: 0, 2: 0}, {1: 0, 2: 3}, {2: 0}, {1: 0})
    live = np.array([True, True, True, False])
    manifest = np.array([0, 0, 1, 2], np.int64)
    per_manifest = null_free_fields(nulls, live, manifest, 3)
    assert per_manifest == [frozenset({1}), frozenset({2}), None]
    assert intersect(per_manifest) == frozenset()
    assert intersect([per_manifest[0], per_manifest[2]]) == frozenset({1})
    assert intersect([None, None]) is None


def test_no_counts_at_all() -> None:
    live = np.array([True])
    assert null_free_fields(None, live, np.zeros(1, np.int64), 1) == [frozenset()]
    assert null_free_fields(pa.nulls(1), live, np.zeros(1, np.int64), 1) == [frozenset()]


def test_a_sliced_array_and_huge_ids() -> None:
    """Offsets of a slice start past zero; ids past MAX_DENSE_ID are left unproven, not counted."""
    nulls = counts({9: 4}, {1: 0, MAX_DENSE_ID + 1: 0}, {1: 0, MAX_DENSE_ID + 1: 0}).slice(1)
    assert null_free_fields(nulls, np.array([True, True]), np.zeros(2, np.int64), 1) == [frozenset({1})]

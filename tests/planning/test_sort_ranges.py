"""A file's range of a sort key from its statistics alone, case by case from the spec's metrics and Spark's
order of rows: a file lies after another only when every row it may hold (nulls unless counted 0, NaN unless
counted 0, values between its bounds) sorts after every row the other may hold."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from planner_service.errors import CorruptMetadataError
from planner_service.metadata.partitioning import parse_transform
from planner_service.metadata.types import PrimitiveType
from planner_service.planning.sort_ranges import UNKNOWN, FileRanges, SortField, SortKey, file_ranges
from tests.pruning.factories import FileStats, data_file, stats_columns


def _long(v: int) -> bytes:
    return struct.pack("<q", v)


def _double(v: float) -> bytes:
    return struct.pack("<d", v)


def _key(kind: str, *, desc: bool = False, nulls_first: bool = True, required: bool = False) -> SortKey:
    field = SortField(parse_transform("identity"), 1, PrimitiveType(kind), required, desc, nulls_first)
    return SortKey(1, (field,))


def _numbers(low: int, high: int, rows: int = 10, nulls: int | None = 0) -> FileStats:
    counts = None if nulls is None else {1: nulls}
    return data_file(rows, {1: rows}, counts, None, {1: _long(low)}, {1: _long(high)})


def _ranges(key: SortKey, *files: FileStats) -> FileRanges:
    return file_ranges(key, stats_columns(*files), np.arange(len(files), dtype=np.int64))


def _after(r: FileRanges, later: int, earlier: int) -> bool:
    return bool(r.first_rank[later] > r.last_rank[earlier])


def test_files_whose_bounds_meet_overlap() -> None:
    r = _ranges(_key("long"), _numbers(1, 5), _numbers(5, 9), _numbers(6, 9))
    assert not _after(r, 1, 0) and _after(r, 2, 0) and not _after(r, 2, 1)
    assert r.keys(np.arange(3), last=False) == [(1,), (5,), (6,)] and r.keys(np.arange(3), last=True)[0] == (5,)


def test_nulls_count_unless_counted_zero() -> None:
    """A file whose null count is unknown may hold nulls: first with nulls-first, last with nulls-last."""
    uncounted, only_nulls = _numbers(1, 5, nulls=None), data_file(3, {1: 3}, {1: 3})
    first = _ranges(_key("long", nulls_first=True), uncounted, only_nulls)
    assert first.keys(np.arange(1), last=False) == [(None,)] and first.keys(np.arange(1), last=True) == [(5,)]
    assert not _after(first, 0, 1)  # both may hold a null
    last = _ranges(_key("long", nulls_first=False), uncounted, only_nulls)
    assert last.keys(np.arange(1), last=False) == [(1,)] and last.keys(np.arange(1), last=True) == [(None,)]
    assert not _after(last, 1, 0)
    assert _after(_ranges(_key("long"), only_nulls, _numbers(1, 5)), 1, 0)  # counted: no nulls in the second


def test_a_required_column_holds_no_nulls_uncounted() -> None:
    r = _ranges(_key("long", required=True), _numbers(1, 5, nulls=None), _numbers(6, 9, nulls=None))
    assert _after(r, 1, 0)


def test_nan_sorts_above_numbers_and_first_descending() -> None:
    with_nan = data_file(4, {1: 4}, {1: 0}, {1: 1}, {1: _double(1.0)}, {1: _double(2.0)})
    no_nan = data_file(4, {1: 4}, {1: 0}, {1: 0}, {1: _double(3.0)}, {1: _double(4.0)})
    unknown_nan = data_file(4, {1: 4}, {1: 0}, None, {1: _double(5.0)}, {1: _double(6.0)})
    up = _ranges(_key("double"), with_nan, no_nan, unknown_nan)
    assert not _after(up, 1, 0)  # with_nan ends at NaN: nothing numeric comes after it
    assert math.isnan(up.keys(np.arange(1), last=True)[0][0])
    assert _after(up, 2, 1) and not _after(up, 2, 0)  # an uncounted NaN widens the end, not the start
    assert math.isnan(up.keys(np.arange(3), last=True)[2][0])
    down = _ranges(_key("double", desc=True), no_nan, with_nan)
    assert not _after(down, 1, 0) and not _after(down, 0, 1)  # desc: 1..2 after 3..4, but its NaN comes first
    assert math.isnan(down.keys(np.arange(2), last=False)[1][0])


def test_negative_zero_equals_zero() -> None:
    negative = data_file(2, {1: 2}, {1: 0}, {1: 0}, {1: _double(-1.0)}, {1: _double(-0.0)})
    positive = data_file(2, {1: 2}, {1: 0}, {1: 0}, {1: _double(0.0)}, {1: _double(1.0)})
    assert not _after(_ranges(_key("double"), negative, positive), 1, 0)  # -0.0 and 0.0 are one value


def test_descending_reverses_the_order() -> None:
    r = _ranges(_key("long", desc=True), _numbers(10, 20), _numbers(1, 9))
    assert _after(r, 1, 0) and not _after(r, 0, 1)
    assert r.keys(np.arange(2), last=False) == [(20,), (9,)]


def test_a_file_without_bounds_has_no_range() -> None:
    unbounded = data_file(5, {1: 5}, {1: 0})
    r = _ranges(_key("long"), _numbers(1, 5), unbounded)
    assert list(r.bounded) == [True, False]
    assert r.keys(np.arange(2), last=False)[1] == (UNKNOWN,)
    empty = data_file(0, {1: 0}, {1: 0})  # no rows: nothing to order, and no bounds needed
    assert bool(_ranges(_key("long"), empty).bounded[0])


def test_a_later_field_without_bounds_leaves_the_first_to_order() -> None:
    second = SortField(parse_transform("identity"), 2, PrimitiveType("long"), False, False, True)
    key = SortKey(1, (_key("long").fields[0], second))
    a = data_file(5, {1: 5, 2: 5}, {1: 0, 2: 0}, None, {1: _long(1)}, {1: _long(5)})
    b = data_file(5, {1: 5, 2: 5}, {1: 0, 2: 0}, None, {1: _long(6), 2: _long(0)}, {1: _long(9), 2: _long(3)})
    r = _ranges(key, a, b)
    assert _after(r, 1, 0) and list(r.bounded) == [True, True]
    assert r.keys(np.arange(1), last=False) == [(1, UNKNOWN)]


@pytest.mark.parametrize("column", ["lower_bounds", "upper_bounds"])
def test_a_string_bound_that_is_not_utf8_is_corrupt(column: str) -> None:
    bounds = {"lower_bounds": {1: b"a"}, "upper_bounds": {1: b"b"}}
    bounds[column] = {1: b"\xff\xfe"}
    bad = data_file(2, {1: 2}, {1: 0}, None, bounds["lower_bounds"], bounds["upper_bounds"])
    with pytest.raises(CorruptMetadataError, match="Failed to decode a string value as UTF-8: bytes fffe"):
        _ranges(_key("string"), bad)
    with pytest.raises(CorruptMetadataError, match="UTF-8"):
        stats_columns(bad).bounds(column, 1, PrimitiveType("string"))

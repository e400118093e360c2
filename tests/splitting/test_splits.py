"""Expected ranges follow Iceberg Java (TestOffsetsBasedSplitScanTaskIterator; BaseContentScanTask.split)."""

import pytest

from planner_service.metadata.content_file import DATA_FILE, ContentFile
from planner_service.splitting.combine import Packing, combine
from tests.splitting.columns import file_columns, split_ranges


def _file(size: int, offsets: tuple[int, ...] | None = None, fmt: str = "PARQUET", path: str = "f") -> ContentFile:
    return ContentFile(DATA_FILE, path, fmt, 0, (), 10, size, 1, 1, 1, split_offsets=offsets)


def _ranges(f: ContentFile, target: int) -> list[tuple[int, int]]:
    return [(start, length) for start, length, _ in split_ranges(f, target)]


def _combined(
    files: list[ContentFile], target: int, lookback: int = 10, cost: int = 0
) -> list[list[tuple[str, int, int]]]:
    columns = file_columns(
        [f.file_size_in_bytes for f in files],
        [f.format for f in files],
        [f.split_offsets for f in files],
        [f.record_count for f in files],
    )
    tasks = combine(columns, Packing(split_size=target, lookback=lookback, open_file_cost=cost))
    return [
        [(files[tasks.file[p]].path, int(tasks.start[p]), int(tasks.length[p])) for p in tasks.pieces(t)]
        for t in range(len(tasks))
    ]


def test_split_by_offsets_ignores_target() -> None:
    f = _file(48, (4, 10, 15, 18, 30, 45))
    assert _ranges(f, 1000) == [(4, 6), (10, 5), (15, 3), (18, 12), (30, 15), (45, 3)]


def test_fixed_size_when_offsets_unusable() -> None:
    assert _ranges(_file(10, (4, 50)), 4) == [(0, 4), (4, 4), (8, 2)]  # last offset past the end
    assert _ranges(_file(10, (4, 4)), 4) == [(0, 4), (4, 4), (8, 2)]  # not strictly ascending
    assert _ranges(_file(10, None, fmt="AVRO"), 6) == [(0, 6), (6, 4)]


def test_unsplittable_and_empty_files() -> None:
    assert split_ranges(_file(100, None, fmt="PUFFIN"), 10) == [(0, 100, False)]
    assert _ranges(_file(0), 10) == []


def test_adjacent_splits_of_one_file_merge_within_a_bin() -> None:
    f, g = _file(30, None, path="f"), _file(30, None, path="g")
    # 10-byte splits, each bin holds three: f's three splits merge back, g's as well
    assert _combined([f, g], 10) == [
        [("f", 0, 10)],
        [("f", 10, 10)],
        [("f", 20, 10)],
        [("g", 0, 10)],
        [("g", 10, 10)],
        [("g", 20, 10)],
    ]
    assert _combined([f, g], 30) == [[("f", 0, 30)], [("g", 0, 30)]]
    assert _combined([f, g], 60) == [[("f", 0, 30), ("g", 0, 30)]]


def test_unsplittable_tasks_never_merge() -> None:
    p = _file(30, None, fmt="PUFFIN", path="p")
    assert _combined([p, p], 100) == [[("p", 0, 30), ("p", 0, 30)]]


def test_row_groups_packed_back_into_one_task() -> None:
    # a 100 MB file of 10 row groups and a 128 MB target: one task covering the file after offset 4
    mb = 1024 * 1024
    f = _file(100 * mb, tuple(4 + i * 10 * mb for i in range(10)))
    assert _combined([f], 128 * mb, 10, 4 * mb) == [[("f", 4, 100 * mb - 4)]]


@pytest.mark.parametrize(("size", "lookback", "cost"), [(0, 1, 0), (1, 0, 0), (1, 1, -1)])
def test_plan_tasks_validates(size: int, lookback: int, cost: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        _combined([], size, lookback, cost)


def test_the_compiled_loops_refuse_inconsistent_columns() -> None:
    import numpy as np

    from planner_service import _kernels

    sizes, none, go = np.array([10, 20], np.int64), np.zeros(2, np.int64), bytearray(1)
    with pytest.raises(ValueError, match="split_files: split offset counts past the offsets"):
        _kernels.split_files(
            sizes, np.ones(2, bool), np.array([1, 5], np.int64), np.array([0, 4], np.int64), 8, none, none, 0, go, 0.0
        )
    with pytest.raises(ValueError, match="split_files: a split size <= 0"):
        _kernels.split_files(sizes, np.ones(2, bool), none, np.zeros(0, np.int64), 0, none, none, 0, go, 0.0)
    with pytest.raises(ValueError, match="split_files: columns of different lengths"):
        _kernels.split_files(
            sizes, np.ones(2, bool), none, np.zeros(0, np.int64), 8, np.zeros(1, np.int64), none, 0, go, 0.0
        )
    ranges = np.zeros(3, np.int64)
    with pytest.raises(ValueError, match="merge_bins: a bin out of range"):
        _kernels.merge_bins(
            np.array([0, 1, 7], np.int64), ranges, ranges, ranges, np.zeros(3, bool), 2, sizes, none, none, go, 0.0
        )
    with pytest.raises(ValueError, match="merge_bins: a range of no file"):
        _kernels.merge_bins(
            np.zeros(3, np.int64),
            np.array([0, 1, 2], np.int64),
            ranges,
            ranges,
            np.zeros(3, bool),
            1,
            sizes,
            none,
            none,
            go,
            0.0,
        )


def test_splits_of_huge_files_do_not_overflow() -> None:
    big = 2**63 - 1
    ranges = split_ranges(_file(big, ()), 2**62)
    assert [(s, n) for s, n, _ in ranges] == [(0, 2**62), (2**62, 2**62 - 1)]  # Java: min(target, rest)


def test_ranges_are_counted_and_bounded_before_they_are_made() -> None:
    """A file without split offsets and a split size of one byte: a range per byte. count_ranges says so in
    O(files); combine refuses, before allocating any, more ranges than the table's own split size makes plus
    what a request may add (the message names a split size that fits: the smallest); a file's offsets, when
    usable, decide its ranges whatever the size."""
    from planner_service.splitting.combine import RangeBound, TooManyRangesError
    from planner_service.splitting.splits import count_ranges

    columns = file_columns([8_000_000, 100], ["avro", "parquet"], [None, [4]], [1, 1])
    assert count_ranges(columns.sizes, columns.splittable, columns.offset_counts, columns.flat_offsets, 1) == 8_000_001
    assert count_ranges(columns.sizes, columns.splittable, columns.offset_counts, columns.flat_offsets, 2**62) == 2
    huge = file_columns([2**62, 2**62, 2**62], ["avro"] * 3, [None] * 3, [1] * 3)
    assert count_ranges(huge.sizes, huge.splittable, huge.offset_counts, huge.flat_offsets, 1) == 2**63 - 1
    table = 1 << 20  # the table's own split size: 8 ranges of the first file (7.63 MiB), 1 of the second
    with pytest.raises(TooManyRangesError, match="cuts the plan's 2 files into 8,000,001 ranges") as refused:
        combine(columns, Packing(split_size=1, lookback=10, open_file_cost=0, bound=RangeBound(table, 1_000)))
    # at most 9 + 1,000 ranges: 1,008 of the first file, ceil(8,000,000 / 1,008) = 7,937.5 -> 7,937 bytes makes
    # ceil(8,000,000 / 7,937) = 1,008 ranges (+ 1), and 7,936 bytes 1,009 (+ 1) too many
    assert "7,999,992 more than the table's own split size (1,048,576 bytes" in str(refused.value)
    assert "at least 7,937 bytes" in str(refused.value)
    tasks = combine(columns, Packing(split_size=7_937, lookback=10, open_file_cost=0, bound=RangeBound(table, 1_000)))
    assert len(tasks.file) == 1_009  # (each full range fills a task: none merge)
    # the table's own split size is never refused, however many ranges it makes, up to the service's memory
    tasks = combine(columns, Packing(split_size=table, lookback=10, open_file_cost=0, bound=RangeBound(table, 0)))
    assert len(tasks) >= 1
    with pytest.raises(TooManyRangesError, match="more than this service's memory holds") as refused:
        combine(columns, Packing(split_size=1, lookback=10, open_file_cost=0, bound=RangeBound(1, 0, most=100)))
    assert "at least 80,809 bytes" in str(refused.value)  # 99 ranges of the first file: 8,000,000 / 99 = 80,808.1
    # a file's split offsets decide its ranges: offsets that alone make more than allowed cannot be helped
    offsets = file_columns([100], ["parquet"], [[4, 20, 40, 60]], [1])
    with pytest.raises(TooManyRangesError, match="their split offsets alone make more"):
        combine(offsets, Packing(split_size=1, lookback=10, open_file_cost=0, bound=RangeBound(1, 0, most=2)))


def test_a_stopped_split_raises_its_reason() -> None:
    from planner_service.errors import PlanCancelledError
    from planner_service.planning.admission import Cancellation

    columns = file_columns([1_000_000], ["avro"], [None], [1])
    cancel = Cancellation()
    cancel.cancel()
    with pytest.raises(PlanCancelledError):
        combine(columns, Packing(split_size=1, lookback=10, open_file_cost=0, stop=cancel.stop()))


def test_one_rule_weighs_a_range_for_packing_and_for_the_explorer() -> None:
    """split_weights (what the plan explorer shows) is split_files's own weight: length plus the file's delete
    bytes, at least an open cost for the file and each of its deletes."""
    import numpy as np

    from planner_service.splitting.splits import split_files, split_weights

    sizes = np.array([100, 10, 0], np.int64)
    deletes, counts = np.array([5, 0, 7], np.int64), np.array([1, 0, 2], np.int64)
    splits = split_files(
        sizes, np.zeros(3, bool), np.zeros(3, np.int64), np.zeros(0, np.int64), 64, deletes, counts, 30
    )
    assert splits.weight.tolist() == [105, 30, 90]
    assert split_weights(splits.length, deletes[splits.owner], counts[splits.owner], 30).tolist() == [105, 30, 90]

"""Expected ranges follow Iceberg Java (TestOffsetsBasedSplitScanTaskIterator; BaseContentScanTask.split)."""

import pytest

from planner_service.metadata.content_file import DATA, ContentFile
from planner_service.planning.scan_tasks import FileScanTask
from planner_service.splitting.combine import merge_adjacent, plan_tasks
from planner_service.splitting.splits import split_task


def _file(size: int, offsets: tuple[int, ...] | None = None, fmt: str = "PARQUET", path: str = "f") -> ContentFile:
    return ContentFile(DATA, path, fmt, 0, (), 10, size, 1, 1, 1, split_offsets=offsets)


def _ranges(f: ContentFile, target: int) -> list[tuple[int, int]]:
    return [(t.start, t.length) for t in split_task(FileScanTask(f, (), 0, f.file_size_in_bytes), target)]


def test_split_by_offsets_ignores_target() -> None:
    f = _file(48, (4, 10, 15, 18, 30, 45))
    assert _ranges(f, 1000) == [(4, 6), (10, 5), (15, 3), (18, 12), (30, 15), (45, 3)]


def test_fixed_size_when_offsets_unusable() -> None:
    assert _ranges(_file(10, (4, 50)), 4) == [(0, 4), (4, 4), (8, 2)]  # last offset past the end
    assert _ranges(_file(10, (4, 4)), 4) == [(0, 4), (4, 4), (8, 2)]  # not strictly ascending
    assert _ranges(_file(10, None, fmt="AVRO"), 6) == [(0, 6), (6, 4)]


def test_unsplittable_and_empty_files() -> None:
    puffin = _file(100, None, fmt="PUFFIN")
    tasks = list(split_task(FileScanTask(puffin, (), 0, 100), 10))
    assert [(t.start, t.length, t.is_split) for t in tasks] == [(0, 100, False)]
    assert _ranges(_file(0), 10) == []


def test_merge_adjacent_splits_of_the_same_file_only() -> None:
    f, g = _file(30, None), _file(30, None, path="g")
    a, b, c = (FileScanTask(f, (), s, 10, is_split=True) for s in (0, 10, 20))
    other = FileScanTask(g, (), 10, 10, is_split=True)
    assert [(t.start, t.length) for t in merge_adjacent([a, b, c])] == [(0, 30)]
    assert len(merge_adjacent([a, other])) == 2
    assert len(merge_adjacent([a, c])) == 2  # not contiguous


def test_row_groups_packed_back_into_one_task() -> None:
    # a 100 MB file of 10 row groups and a 128 MB target: one task covering the file after offset 4
    mb = 1024 * 1024
    f = _file(100 * mb, tuple(4 + i * 10 * mb for i in range(10)))
    tasks = plan_tasks([FileScanTask(f, (), 0, f.file_size_in_bytes)], 128 * mb, 10, 4 * mb)
    assert [[(t.start, t.length) for t in c.tasks] for c in tasks] == [[(4, 100 * mb - 4)]]


@pytest.mark.parametrize(("size", "lookback", "cost"), [(0, 1, 0), (1, 0, 0), (1, 1, -1)])
def test_plan_tasks_validates(size: int, lookback: int, cost: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        plan_tasks([], size, lookback, cost)

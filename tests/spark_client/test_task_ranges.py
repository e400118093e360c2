"""A plan by id read by at most N partitions: runs of consecutive tasks, every task once, in order."""

from __future__ import annotations

import itertools

import pytest

from spark_client.partitions import task_ranges


@pytest.mark.parametrize(("count", "most"), [(0, 5), (1, 5), (5, 5), (7, 3), (16_425_913, 200_000), (10, 1)])
def test_runs_cover_every_task_once_in_order(count: int, most: int) -> None:
    ranges = task_ranges(count, most)
    assert len(ranges) == min(count, most)
    covered = [i for start, end in ranges for i in range(start, end)] if count < 100_000 else None
    if covered is not None:
        assert covered == list(range(count))
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    sizes = [end - start for start, end in ranges]
    assert not sizes or (min(sizes) >= 1 and max(sizes) - min(sizes) <= 1)
    assert not ranges or (ranges[0][0] == 0 and ranges[-1][1] == count)

"""FileIndex: split offsets of any subset of rows, and partitions interned across manifests."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

from planner_service.metadata.file_index import FileIndex


@pytest.mark.parametrize("pick", ["all", "some", "none", "one"])
def test_split_offsets_of_rows_equal_polars_own_gather(pick: str) -> None:
    rng = np.random.default_rng(7)
    offsets = [None if rng.random() < 0.2 else rng.integers(0, 100, rng.integers(0, 5)).tolist() for _ in range(500)]
    frame = pl.DataFrame({"split_offsets": offsets}, schema={"split_offsets": pl.List(pl.Int64)})
    index = FileIndex(frame, ((0, ()),), np.zeros(500, np.int32), *_no_directory(500))
    rows = {
        "all": np.arange(500),
        "some": np.sort(rng.choice(500, 150, replace=False)),
        "none": np.zeros(0, np.int64),
        "one": np.array([17]),
    }[pick].astype(np.int64)
    counts, flat = index.split_offsets(rows)
    expected = frame.get_column("split_offsets").gather(rows)
    assert counts.tolist() == expected.list.len().fill_null(0).to_list()
    assert flat.tolist() == expected.explode().drop_nulls().to_list()


def test_concat_interns_partitions_by_java_equality() -> None:
    frame = pl.DataFrame({"split_offsets": [None, None]}, schema={"split_offsets": pl.List(pl.Int64)})
    a = FileIndex(frame, ((0, (1, "x")), (0, (0.0,))), np.array([0, 1], np.int32), *_no_directory(2))
    b = FileIndex(frame, ((0, (-0.0,)), (0, (1, "x"))), np.array([0, 1], np.int32), *_no_directory(2))
    both = FileIndex.concat([a, b])
    # -0.0 and 0.0 are different partitions for Java (Double.equals compares bits); (1, "x") is one
    assert both.partitions == ((0, (1, "x")), (0, (0.0,)), (0, (-0.0,)))
    assert both.partition_id.tolist() == [0, 1, 2, 0]


def test_an_index_without_statistics_refuses_to_give_them() -> None:
    frame = pl.DataFrame({"split_offsets": [None]}, schema={"split_offsets": pl.List(pl.Int64)})
    index = FileIndex(frame, ((0, ()),), np.zeros(1, np.int32), *_no_directory(1), has_stats=False)
    with pytest.raises(RuntimeError, match="without column statistics"):
        _ = index.stats
    with pytest.raises(RuntimeError, match="without column statistics"):
        index.content_files(with_stats=True)
    other = FileIndex(frame, ((0, ()),), np.zeros(1, np.int32), *_no_directory(1))
    assert not FileIndex.concat([index, other]).has_stats


def test_statistics_must_fit_the_index() -> None:
    frame = pl.DataFrame({"split_offsets": [None, None]}, schema={"split_offsets": pl.List(pl.Int64)})
    index = FileIndex(frame, ((0, ()),), np.zeros(2, np.int32), *_no_directory(2), has_stats=False)
    with pytest.raises(ValueError, match="Statistics of 1 rows"):
        index.with_statistics(pl.DataFrame({"value_counts": [None]}))


def _no_directory(rows: int) -> tuple[tuple[str, ...], np.ndarray[Any, np.dtype[np.int32]]]:
    return ("",), np.zeros(rows, np.int32)

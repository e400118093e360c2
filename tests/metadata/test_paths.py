"""Paths split into an interned directory and a name (planner_service/metadata/paths.py, csrc/paths.c), and
joined again on the wire as one JSON string (a directory snippet opens it, the name's tail closes it)."""

from __future__ import annotations

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pytest

from planner_service.metadata.paths import split_paths
from planner_service.wire import json_rows as rows

PATHS = [
    "s3://bucket/wh/db/t/data/ts_day=2023-01-01/category=books/00000-1-abc.parquet",
    "s3://bucket/wh/db/t/data/ts_day=2023-01-01/category=books/00001-1-abc.parquet",
    "s3://bucket/wh/db/t/data/ts_day=2023-01-02/category=books/00002-1-abc.parquet",
    "s3://bucket/wh/db/t/data/ts_day=2023-01-01/category=books/00003-1-abc.parquet",  # a directory seen before
    "relative-file.parquet",  # no '/': an empty directory
    "/ends/with/slash/",  # an empty name
    'file:/tmp/we"ird\\dir/\u00e9t\u00e9/na"me\\\x01.orc',  # what JSON escapes, in the directory and the name
    "",
]


def test_paths_split_into_interned_directories_and_names() -> None:
    directories: dict[bytes, int] = {}
    ids, names = split_paths(pa.array(PATHS, pa.large_string()), directories)
    texts = [d.decode() for d in directories]
    assert [texts[i] + n for i, n in zip(ids.tolist(), names.to_pylist(), strict=True)] == PATHS
    assert ids.tolist() == [0, 0, 1, 0, 2, 3, 4, 2]
    assert all("/" not in n for n in names.to_pylist())


def test_a_slice_splits_as_its_own_paths_and_directories_carry_over() -> None:
    directories = {b"s3://bucket/wh/db/t/data/ts_day=2023-01-02/category=books/": 0}
    ids, names = split_paths(pa.array(PATHS, pa.large_string()).slice(2, 3), directories)
    assert ids.tolist() == [0, 1, 2]
    assert names.to_pylist() == ["00002-1-abc.parquet", "00003-1-abc.parquet", "relative-file.parquet"]


def test_a_null_path_is_refused() -> None:
    with pytest.raises(ValueError, match="null"):
        split_paths(pa.array(["a/b", None], pa.large_string()), {})


@pytest.mark.parametrize("first", [0, 3])
def test_a_path_renders_as_the_json_string_of_the_whole_path(first: int) -> None:
    directories: dict[bytes, int] = {}
    ids, names = split_paths(pa.array(PATHS, pa.large_string()), directories)
    snippets = [orjson.dumps(d.decode()).decode()[:-1] for d in directories]
    tail = pl.Series(names.to_pylist()[first:])
    text = rows.render(len(tail), [rows.snippets(ids[first:].astype(np.int64), snippets), rows.string_tails(tail)])
    assert orjson.loads(b"[" + text + b"]") == PATHS[first:]

"""The reader judges each row group by its statistics (statistics.judge): groups no row of which can match
are not read; in groups whose every row matches, the filter's own columns are not read; and rows wanted
without any column (a count, identity-partition columns alone) are counted from the footer, not decoded.

What was read is observed through pyarrow's ParquetFile.iter_batches; the rows are checked against the
filter applied to the written rows in Python.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_client import read_task
from tests.conformance.cases import and_, p
from tests.spark_client.plans import field, file_task, plan, schema, write, write_rows

S = schema(field(1, "id", "long"), field(2, "f", "double"), field(3, "region", "string"))
IDS = list(range(100))  # 10 row groups of 10: group g holds ids 10g .. 10g + 9
REGIONS = ["eu" if i < 45 else "us" for i in IDS]  # groups 0-3 all "eu", 4 both, 5-9 all "us"


@pytest.fixture
def path(tmp_path: Path) -> str:
    rows: dict[str, list[Any]] = {"id": IDS, "f": [1.0] * 100, "region": REGIONS}
    return write_rows(tmp_path / "g.parquet", S, rows, row_group_size=10)


class Reads:
    """What iter_batches was asked for: (row groups, columns) per call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[list[int], list[str]]] = []
        original = pq.ParquetFile.iter_batches

        def spy(this: pq.ParquetFile, *args: Any, **kwargs: Any) -> Iterator[pa.RecordBatch]:
            self.calls.append((list(kwargs["row_groups"]), list(kwargs["columns"])))
            return original(this, *args, **kwargs)  # type: ignore[no-any-return]

        monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)

    def groups(self) -> list[int]:
        return [g for groups, _ in self.calls for g in groups]

    def columns(self) -> set[str]:
        return {c for _, columns in self.calls for c in columns}

    def clear(self) -> None:
        self.calls.clear()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Reads:
    return Reads(monkeypatch)


def read(path: str, row_filter: Any, columns: list[str] | None = None, **task: Any) -> pa.Table:
    """Read the file as one task of a plan whose scan filter is `row_filter` (its residual too)."""
    p_ = {**plan(S, [[file_task(path, residual=row_filter, **task)]]), "filter": row_filter}
    batches = list(read_task(p_["tasks"][0], p_, columns=columns))
    return pa.Table.from_batches(batches) if batches else pa.table({})


def test_groups_no_row_of_which_can_match_are_not_read(path: str, reads: Reads) -> None:
    between = and_(p("gt-eq", "id", 42), p("lt", "id", 47))
    assert sorted(read(path, between).column("id").to_pylist()) == [42, 43, 44, 45, 46]
    assert reads.groups() == [4]
    reads.clear()
    assert sorted(read(path, p("in", "id", values=[5, 95])).column("id").to_pylist()) == [5, 95]
    assert reads.groups() == [0, 9]
    reads.clear()
    assert read(path, p("is-null", "id")).num_rows == 0 and reads.groups() == []
    reads.clear()
    # doubles are never judged by statistics (NaN is not in Parquet's min/max): every group is read
    assert read(path, p("gt", "f", 5.0)).num_rows == 0 and len(reads.groups()) == 10


def test_groups_whose_every_row_matches_do_not_read_the_filter_columns(path: str, reads: Reads) -> None:
    """id >= 20 AND region = 'eu', reading `id`: groups 2 and 3 match whole, from their bounds, so `region`
    (a filter column alone) is not read for them; in group 4 the bounds decide `id >= 20` but not the
    region, so `region` is read to evaluate what is left; groups 0-1 and 5-9 are skipped."""
    out = read(path, and_(p("gt-eq", "id", 20), p("eq", "region", "eu")), columns=["id"])
    assert out.column("id").to_pylist() == list(range(20, 45))
    assert reads.calls == [([2], ["id"]), ([3], ["id"]), ([4], ["id", "region"])]
    reads.clear()
    # id >= 35: in group 3 the region is decided (all "eu") and the id is not: only `id` is read
    out = read(path, and_(p("gt-eq", "id", 35), p("eq", "region", "eu")), columns=["id"])
    assert out.column("id").to_pylist() == list(range(35, 45))
    assert reads.calls == [([3], ["id"]), ([4], ["id", "region"])]


def test_counting_decodes_nothing_where_the_statistics_decide(path: str, reads: Reads) -> None:
    """columns=[]: only row counts; groups whose every row matches are counted from the footer."""
    out = read(path, p("lt", "id", 42), columns=[])
    assert out.num_rows == 42 and out.num_columns == 0
    assert reads.groups() == [4]  # groups 0-3 counted unread; group 4 filtered; 5-9 skipped
    reads.clear()
    assert read(path, True, columns=[]).num_rows == 100 and reads.calls == []


def test_counting_subtracts_position_deletes_without_decoding(path: str, tmp_path: Path, reads: Reads) -> None:
    deletes = write(
        tmp_path / "deletes.parquet",
        pa.table(
            {"file_path": [path] * 3, "pos": [3, 4, 77]},
            schema=pa.schema(
                [
                    pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
                    pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"}),
                ]
            ),
        ),
    )
    delete_file = {"content": "position-deletes", "file-path": deletes, "file-format": "parquet"}
    p_ = {**plan(S, [[file_task(path, deletes=[0])]], delete_files=[delete_file]), "filter": p("lt", "id", 80)}
    batches = list(read_task(p_["tasks"][0], p_, columns=[]))
    assert sum(b.num_rows for b in batches) == 77  # the 80 ids 0..79 less 3, 4 and 77
    assert reads.calls == []

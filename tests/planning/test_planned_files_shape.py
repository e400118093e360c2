"""A plan owns what is true of exactly its files (issue 45): whether it holds the snapshot's shared index and
the row numbers of its files (most files kept) or a copy of its own (few kept), the columns it proves
null-free are those the manifests of its files prove, not the whole snapshot's, and its specs are its files'.

The table: three appends, so three manifests; the third writes a null into `note`. A plan of the first
two appends' files (two of three: the shared index) and one of the first append's file alone (one of three:
a copy) both prove `note` null-free; a plan of every file does not."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from planner_service.catalog.base import load_by_metadata_location
from planner_service.expressions.filter_string import parse_filter
from planner_service.io.fileio import FileIO
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import ScanRequest


@pytest.fixture
def metadata_location(tmp_path: Path) -> str:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "note", StringType()))
    table = catalog.create_table("db.t", schema=schema)
    for ids, note in (([1, 2], "a"), ([3, 4], "b"), ([5, 6], None)):
        table.append(pa.Table.from_pydict({"id": ids, "note": [note, note]}, schema=schema.as_arrow()))
    return str(table.metadata_location)


@pytest.mark.parametrize(
    ("row_filter", "files", "note_proven"),
    [("id <= 4", 2, True), ("id <= 2", 1, True), ("id <= 6", 3, False)],
    ids=["shared-index", "own-copy", "every-file"],
)
def test_a_plan_proves_what_its_own_files_prove(
    metadata_location: str, row_filter: str, files: int, note_proven: bool
) -> None:
    planner = ScanPlanner(FileIO())
    table = load_by_metadata_location(FileIO(), metadata_location)
    plan = planner.plan(table, ScanRequest(row_filter=parse_filter(row_filter)))
    assert plan.files is not None and len(plan.files) == files
    assert (2 in plan.non_null_field_ids) is note_proven
    assert plan.files.spec_ids() == [0]
    planner.close()

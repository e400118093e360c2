"""What bounds a plan's ranges (issue 53): the table's own split size is never refused, however many ranges it
makes (up to what the service's memory holds); a request's smaller split size may add only the plan memory
budget's worth beyond them; a refusal names the smallest split size that fits. The expected counts follow
from the files: 100 files of 1 GiB without split offsets, cut in fixed-size ranges (BaseContentScanTask.split)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner_service.catalog.base import LoadedTable
from planner_service.errors import InvalidOptionError
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import ScanRequest
from tests.planning.factories import FileEntry, MemoryIO, TableWriter

GIB, MIB = 1 << 30, 1 << 20
FILES = 100


def _table(io: MemoryIO, properties: dict[str, str]) -> LoadedTable:
    writer = TableWriter(io)
    entries = [FileEntry(f"s3://bucket/data/f-{i}.parquet", file_size=GIB) for i in range(FILES)]
    writer.manifest("s3://bucket/wh/db/events/metadata/m1.avro", entries)
    writer.snapshot(1, ["s3://bucket/wh/db/events/metadata/m1.avro"])
    table = writer.table()
    return replace(table, metadata=replace(table.metadata, properties=properties))


def _pieces(planner: ScanPlanner, table: LoadedTable, options: dict[str, object] | None = None) -> int:
    plan = planner.plan(table, ScanRequest(options=options or {}))
    assert plan.combined is not None
    return len(plan.combined.file)


def test_the_tables_own_split_size_is_never_refused() -> None:
    """1 MiB splits: 1,024 ranges a file, 102,400 in all, with a budget of 8 ranges beyond one a file."""
    io = MemoryIO()
    table = _table(io, {"read.split.target-size": str(MIB)})
    planner = ScanPlanner(io, range_budget_bytes=1024)
    assert _pieces(planner, table) == FILES * 1024


def test_a_request_may_add_the_budgets_worth_and_is_told_what_fits() -> None:
    """Beyond the table's 102,400 ranges a request may add 8 (1,024 bytes at 128 a range): 512 KiB splits
    would add 102,400; 1,048,576 bytes (1,024 a file) is the smallest size within 102,408."""
    io = MemoryIO()
    table = _table(io, {"read.split.target-size": str(MIB)})
    planner = ScanPlanner(io, range_budget_bytes=1024)
    with pytest.raises(InvalidOptionError) as refused:
        _pieces(planner, table, {"split-size": MIB // 2})
    message = str(refused.value)
    assert "cuts the plan's 100 files into 204,800 ranges: 102,400 more than the table's own split size" in message
    assert "a request may add 8" in message and "at least 1,048,576 bytes" in message
    assert _pieces(planner, table, {"split-size": 1_048_576}) == FILES * 1024
    assert _pieces(planner, table, {"split-size": GIB}) == FILES  # larger than the table's: fewer, never refused


def test_the_tables_own_ranges_past_the_services_memory_are_refused() -> None:
    """A service of 6.4 MB holds 50,000 ranges of 128 bytes: 1 MiB splits would make 102,400; 500 a file
    fit, at 2,147,484 bytes (2^30 / 2,147,483 is just over 500)."""
    io = MemoryIO()
    table = _table(io, {"read.split.target-size": str(MIB)})
    planner = ScanPlanner(io, range_budget_bytes=1024, memory_bytes=50_000 * 128)
    with pytest.raises(InvalidOptionError, match="more than this service's memory holds") as refused:
        _pieces(planner, table)
    assert "at least 2,147,484 bytes" in str(refused.value)
    assert _pieces(planner, table, {"split-size": 2_147_484}) == FILES * 500


def test_an_invalid_table_split_size_is_no_error_when_the_request_names_one() -> None:
    """Java reads the property only when no option names the split size; the bound then takes Iceberg's
    default (128 MiB: 8 ranges a file) as the table's own."""
    io = MemoryIO()
    table = _table(io, {"read.split.target-size": "not a number"})
    planner = ScanPlanner(io, range_budget_bytes=1024)
    assert _pieces(planner, table, {"split-size": 128 * MIB}) == FILES * 8
    with pytest.raises(InvalidOptionError, match=r"read\.split\.target-size"):
        _pieces(planner, table)  # (without an option, the property is read, and refused as Java refuses it)

"""The index's disk tier on real small and read-only file systems (a tmpfs mounted for the test; needs root): a
full disk costs decodes and one warning, never a plan, and nothing half-written is read back; a directory
remounted read-only still serves what it holds, and refuses new writes the same way; a directory that is
read-only from the start turns the tier off, saying why."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

import pytest

from planner_service.planning.index_tier import IndexTier, index_tier
from planner_service.planning.planner import ScanPlanner
from tests.planning.factories import FileEntry, MemoryIO, TableWriter
from tests.planning.test_index_tier import FILTERS, KEY, MANIFESTS, _answer, _plan, _table


def _read_only(point: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True, capture_output=True)


def _big_table(io: MemoryIO) -> TableWriter:
    """A table whose index does not fit 1 MiB with room to spare: 8 manifests of 400 files."""
    writer = TableWriter(io, location="s3://bucket/wh/db/big")
    paths = []
    for k in range(8):
        path = f"s3://bucket/wh/db/big/metadata/m{k}.avro"
        entries = [FileEntry(f"s3://bucket/big/{'x' * 60}/p{k}/f{i}.parquet", id_range=(i, i)) for i in range(400)]
        writer.manifest(path, entries)
        paths.append(path)
    writer.snapshot(1, paths)
    return writer


def test_a_full_disk_costs_decodes_never_a_plan(small_disk: Path, caplog: pytest.LogCaptureFixture) -> None:
    io = MemoryIO()
    writer = _big_table(io)
    expected = [_answer(_plan(ScanPlanner(io, threads=2), writer, f)) for f in FILTERS]
    filler = small_disk / "filler"
    stat = os.statvfs(small_disk)
    filler.write_bytes(b"\0" * max(0, stat.f_bavail * stat.f_frsize - 64 * 1024))
    caplog.set_level(logging.INFO, logger="planner_service.planning.index_tier")
    tier = IndexTier(small_disk / "index", 10**9, KEY)
    planner = ScanPlanner(io, cache_bytes=1, threads=2, tier=tier)
    try:
        for _ in range(2):
            assert [_answer(_plan(planner, writer, f)) for f in FILTERS] == expected
        assert tier.stats.write_failures >= 1
        assert caplog.text.count("cannot write to index_directory") == 1
        assert not list((small_disk / "index").glob(".*"))  # nothing half-written stays
        filler.unlink()  # room again: written again, and read back
        assert [_answer(_plan(planner, writer, f)) for f in FILTERS] == expected
        assert tier.stats.writes >= 1 and "writing to index_directory again" in caplog.text
    finally:
        planner.close()
    io.reads.clear()
    again = ScanPlanner(io, threads=2, tier=IndexTier(small_disk / "index", 10**9, KEY))
    try:
        assert _answer(_plan(again, writer, FILTERS[1])) == expected[1]
        assert again.manifests.tier is not None and again.manifests.tier.stats.hits > 0
    finally:
        again.close()


def test_a_directory_remounted_read_only_serves_what_it_holds(
    small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    io = MemoryIO()
    writer = _table(io)
    first = ScanPlanner(io, threads=2, tier=IndexTier(small_disk / "index", 10**9, KEY))
    expected = [_answer(_plan(first, writer, f)) for f in FILTERS]
    first.close()
    _read_only(small_disk)
    caplog.set_level(logging.WARNING)
    io.reads.clear()
    tier = IndexTier(small_disk / "index", 10**9, KEY)
    planner = ScanPlanner(io, cache_bytes=1, threads=2, tier=tier)
    try:
        assert [_answer(_plan(planner, writer, f)) for f in FILTERS] == expected
        assert io.reads_of(MANIFESTS) == [0, 0, 0, 0] and tier.stats.hits > 0
        other = _table(io).io  # (the same store) a table the tier never saw: decoded, not written
        new = TableWriter(other, location="s3://bucket/wh/db/new")
        new.manifest("s3://bucket/wh/db/new/metadata/m.avro", [FileEntry("s3://bucket/new/f.parquet")])
        new.snapshot(1, ["s3://bucket/wh/db/new/metadata/m.avro"])
        _plan(planner, new)
        assert tier.stats.write_failures >= 1 and caplog.text.count("cannot write to index_directory") == 1
    finally:
        planner.close()


def test_a_directory_read_only_from_the_start_turns_the_tier_off(
    small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (small_disk / "index").mkdir(mode=0o700)
    _read_only(small_disk)
    caplog.set_level(logging.WARNING)
    assert index_tier(str(small_disk / "index"), 10**9, KEY) is None
    [warned] = [r for r in caplog.records if "index_directory cannot be used" in r.getMessage()]
    assert "Read-only file system" in warned.error  # type: ignore[attr-defined]

"""The planner's caches, seen from outside: what planning reads (counted by MemoryIO) and what the caches
report (ScanPlanner.caches(), the figures /metrics publishes). Manifest lists and manifests never change
once written, so a manifest is decoded once and serves every snapshot and plan that lists it, a
snapshot's assembled file index serves its next plans, and the caches hold at most their byte budget,
dropping the least recently used first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from planner_service.expressions.expression import TRUE, Expression, Op, predicate
from planner_service.metadata.snapshot_choice import SnapshotChoice
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_plan import ScanPlan
from planner_service.planning.scan_request import ScanRequest
from tests.planning.factories import FileEntry, MemoryIO, TableWriter

META = "s3://bucket/wh/db/events/metadata"
M1, M2, M3 = f"{META}/m1.avro", f"{META}/m2.avro", f"{META}/m3.avro"
LIST1, LIST2, LIST3 = f"{META}/snap-1.avro", f"{META}/snap-2.avro", f"{META}/snap-3.avro"


def _entries(name: str, n: int = 3) -> list[FileEntry]:
    return [FileEntry(f"s3://bucket/data/{name}-{i}.parquet", id_range=(10 * i, 10 * i + 9)) for i in range(n)]


@pytest.fixture
def io() -> MemoryIO:
    return MemoryIO()


@pytest.fixture
def planner(io: MemoryIO) -> Iterator[ScanPlanner]:
    p = ScanPlanner(io, threads=2)
    yield p
    p.close()


def _plan(planner: ScanPlanner, writer: TableWriter, snapshot_id: int, row_filter: Expression = TRUE) -> ScanPlan:
    choice = SnapshotChoice(snapshot_id=snapshot_id)
    return planner.plan(writer.table(), ScanRequest(snapshot=choice, row_filter=row_filter, combine=False))


def _files(plan: ScanPlan) -> list[str]:
    return [t.file.path for t in plan.file_tasks]


def test_a_manifest_is_decoded_once_for_every_snapshot_that_lists_it(io: MemoryIO, planner: ScanPlanner) -> None:
    """Snapshot 2 lists snapshot 1's manifest and a new one: planning both, in any order and again, reads
    each manifest list and each manifest once."""
    writer = TableWriter(io)
    writer.manifest(M1, _entries("a"))
    writer.manifest(M2, _entries("b"), seq=2, snapshot_id=2)
    writer.snapshot(1, [M1])
    writer.snapshot(2, [M1, M2])
    first = _files(_plan(planner, writer, 1))
    second = _files(_plan(planner, writer, 2))
    assert io.reads_of([LIST1, M1, LIST2, M2]) == [1, 1, 1, 1]
    assert _files(_plan(planner, writer, 2)) == second
    assert _files(_plan(planner, writer, 1)) == first
    assert io.reads_of([LIST1, M1, LIST2, M2]) == [1, 1, 1, 1]
    assert sorted(second) == sorted(first + [f"s3://bucket/data/b-{i}.parquet" for i in range(3)])


def test_a_snapshots_file_index_serves_its_next_plans(io: MemoryIO, planner: ScanPlanner) -> None:
    """The second plan of a snapshot takes its assembled file index from the file-index cache: it reads
    nothing and does not look its manifests up one by one again."""
    writer = TableWriter(io)
    writer.manifest(M1, _entries("a"))
    writer.manifest(M2, _entries("b"))
    writer.snapshot(1, [M1, M2])
    first = _files(_plan(planner, writer, 1))
    caches = planner.caches()
    manifest_lookups = caches["manifests"].stats.hits + caches["manifests"].stats.misses
    index_hits = caches["file-indexes"].stats.hits
    reads = sum(io.reads.values())
    assert _files(_plan(planner, writer, 1)) == first
    assert sum(io.reads.values()) == reads
    assert caches["file-indexes"].stats.hits > index_hits
    assert caches["manifests"].stats.hits + caches["manifests"].stats.misses == manifest_lookups


def test_statistics_are_decoded_once_when_a_filter_first_needs_them(io: MemoryIO, planner: ScanPlanner) -> None:
    """A plan without a filter decodes no column statistics; the first filtered plan reads the manifest once
    more for them, and from then on filtered and unfiltered plans read nothing."""
    writer = TableWriter(io)
    writer.manifest(M1, _entries("a"))
    writer.snapshot(1, [M1])
    everything = _files(_plan(planner, writer, 1))
    assert io.reads[M1] == 1
    id_below_10 = predicate(Op.LT, "id", 10)
    assert _files(_plan(planner, writer, 1, row_filter=id_below_10)) == ["s3://bucket/data/a-0.parquet"]
    assert io.reads[M1] == 2
    assert _files(_plan(planner, writer, 1, row_filter=predicate(Op.GT_EQ, "id", 20))) == [
        "s3://bucket/data/a-2.parquet"
    ]
    assert _files(_plan(planner, writer, 1)) == everything
    assert io.reads[M1] == 2


def test_statistics_joining_many_manifests_keep_each_file_its_own(io: MemoryIO, planner: ScanPlanner) -> None:
    """Statistics added to 70 manifests decoded without them come in several chunks (MAX_STATS_CHUNK): each
    file keeps its own bounds, whichever chunk its manifest fell in."""
    writer = TableWriter(io)
    paths = [f"{META}/many-{k}.avro" for k in range(70)]
    for k, path in enumerate(paths):
        writer.manifest(
            path,
            [
                FileEntry(f"s3://bucket/data/m{k}-{i}.parquet", id_range=(100 * k + 10 * i, 100 * k + 10 * i + 9))
                for i in range(2)
            ],
        )
    writer.snapshot(1, paths)
    assert len(_files(_plan(planner, writer, 1))) == 140
    for k in (0, 15, 16, 33, 69):
        kept = _files(_plan(planner, writer, 1, row_filter=predicate(Op.EQ, "id", 100 * k + 15)))
        assert kept == [f"s3://bucket/data/m{k}-1.parquet"], k
    assert all(io.reads[path] == 2 for path in paths)


def _three_snapshots(io: MemoryIO) -> TableWriter:
    """Snapshots 1, 2, 3, each listing one manifest of the same shape: M1, M2, M3."""
    writer = TableWriter(io)
    for snapshot_id, manifest in ((1, M1), (2, M2), (3, M3)):
        writer.manifest(manifest, _entries(f"s{snapshot_id}"), snapshot_id=snapshot_id)
    for snapshot_id, manifest in ((1, M1), (2, M2), (3, M3)):
        writer.snapshot(snapshot_id, [manifest])
    return writer


def test_manifests_are_evicted_least_recently_used_first_within_the_byte_budget(io: MemoryIO) -> None:
    """A budget that holds any two of three manifests but not all three: planning 1, 2, 3 drops M1 (least
    recently used); planning 2 again reads nothing and makes M2 the most recent; planning 1 reads M1 and
    drops M3; planning 3 reads M3 and drops M2."""
    sizing_io = MemoryIO()
    sizing = ScanPlanner(sizing_io, threads=2)
    writer = _three_snapshots(sizing_io)
    weights = []
    for snapshot_id in (1, 2, 3):  # what each manifest weighs in the manifest cache
        before = sizing.caches()["manifests"].stats.bytes
        _plan(sizing, writer, snapshot_id)
        weights.append(sizing.caches()["manifests"].stats.bytes - before)
    sizing.close()
    assert all(w > 0 for w in weights)
    budget = sum(weights) - min(weights) // 2  # any two fit (sum - min <= budget), three do not

    planner = ScanPlanner(io, cache_bytes=budget, threads=2)
    try:
        writer = _three_snapshots(io)
        for snapshot_id in (1, 2, 3, 2, 1, 3):
            _plan(planner, writer, snapshot_id)
        # the other caches are far below their own minimum weights at this budget: only manifests are kept
        assert planner.caches()["file-indexes"].stats.entries == 0
        assert io.reads_of([M1, M2, M3]) == [2, 1, 2]
        manifests = planner.caches()["manifests"].stats
        assert manifests.entries == 2 and manifests.evictions == 3 and manifests.bytes <= budget
    finally:
        planner.close()


def test_a_cache_too_small_for_any_manifest_keeps_nothing(io: MemoryIO) -> None:
    """LruCache.put: a value heavier than the whole budget is not kept, so every plan reads everything again."""
    planner = ScanPlanner(io, cache_bytes=1, threads=2)
    try:
        writer = _three_snapshots(io)
        first = _files(_plan(planner, writer, 1))
        assert _files(_plan(planner, writer, 1)) == first
        assert io.reads_of([LIST1, M1]) == [2, 2]
        assert all(cache.stats.entries == 0 and cache.stats.bytes == 0 for cache in planner.caches().values())
    finally:
        planner.close()

"""The index's disk tier (planning/index_tier.py), seen from the planner: what a plan reads (counted by
MemoryIO) and what it answers. A planner over a tier that another planner filled (a restart, another worker)
plans without reading a manifest, and its plans equal those of a planner without the tier; a file torn, cut,
flipped or replaced is refused and the manifest decoded again; two planners decoding one manifest at once
publish one file; the directory stays within its bound; a disk that refuses writes costs decodes, never a
plan; a manifest outside the roots stays refused whatever the tier holds."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner_service.errors import LocationNotAllowedError
from planner_service.expressions.expression import TRUE, Expression, Op, predicate
from planner_service.io.roots import Roots
from planner_service.metadata.file_index import FileIndex
from planner_service.metadata.snapshot_choice import SnapshotChoice
from planner_service.planning.admission import Cancellation
from planner_service.planning.index_tier import IndexTier, index_tier
from planner_service.planning.manifest_reader import ManifestReader
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_plan import ScanPlan
from planner_service.planning.scan_request import ScanRequest
from tests.planning.factories import FileEntry, MemoryIO, TableWriter

META = "s3://bucket/wh/db/events/metadata"
MANIFESTS = [f"{META}/m{k}.avro" for k in range(4)]
KEY = b"s" * 32


def _table(io: MemoryIO) -> TableWriter:
    writer = TableWriter(io, partition_by="data")
    for k, path in enumerate(MANIFESTS):
        entries = [
            FileEntry(
                f"s3://bucket/data/p{k}/f{i}.parquet",
                id_range=(100 * k + 10 * i, 100 * k + 10 * i + 9),
                partition=(f"p{k}",),
                split_offsets=(4, 600) if i % 2 else None,
            )
            for i in range(5)
        ]
        writer.manifest(path, entries, seq=k + 1, snapshot_id=k + 1)
    writer.snapshot(1, MANIFESTS)
    return writer


@pytest.fixture
def io() -> MemoryIO:
    return MemoryIO()


@pytest.fixture
def writer(io: MemoryIO) -> TableWriter:
    return _table(io)


class Planners:
    """Planners over one tier directory, each a process's (closed at the end)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.made: list[ScanPlanner] = []

    def new(
        self, io: MemoryIO, max_bytes: int = 10**9, key: bytes = KEY, cache_bytes: int = 64 * 1024**2
    ) -> ScanPlanner:
        planner = ScanPlanner(io, cache_bytes=cache_bytes, threads=2, tier=IndexTier(self.root, max_bytes, key))
        self.made.append(planner)
        return planner


@pytest.fixture
def planners(tmp_path: Path) -> Iterator[Planners]:
    made = Planners(tmp_path / "index")
    yield made
    for planner in made.made:
        planner.close()


def _plan(planner: ScanPlanner, writer: TableWriter, row_filter: Expression = TRUE, explain: bool = False) -> ScanPlan:
    request = ScanRequest(snapshot=SnapshotChoice(snapshot_id=1), row_filter=row_filter, explain=explain)
    plan = planner.plan(writer.table(), request)
    if planner.manifests.tier is not None:
        planner.manifests.tier.flush()
    return plan


def _drop_assemblies(root: Path) -> None:
    for assembly in root.glob("asm-*"):
        assembly.unlink()


def _links(root: Path, kind: str) -> list[Path]:
    return [p for p in root.glob(f"*.{kind}") if p.is_symlink()]


def _segments(root: Path, kind: str) -> list[Path]:
    return sorted(root.glob(f"seg-*.{kind}"))


def _tier(planner: ScanPlanner) -> IndexTier:
    tier = planner.manifests.tier
    assert tier is not None
    return tier


def _read_from(plan: ScanPlan) -> set[str]:
    """Where the explained plan's kept manifests were read from."""
    assert plan.explain is not None
    return {m["read-from"] for m in plan.explain.to_json()["manifests"] if m["kept"]}


def _answer(plan: ScanPlan) -> list[object]:
    files = [
        (t.file.path, t.file.partition, t.file.record_count, t.file.split_offsets, str(t.residual))
        for t in plan.file_tasks
    ]
    tasks = [[(t.file.path, t.start, t.length) for t in c.tasks] for c in plan.tasks]
    return [files, tasks]


FILTERS = [TRUE, predicate(Op.GT_EQ, "id", 215), predicate(Op.EQ, "data", "p1"), predicate(Op.LT, "id", 5)]


def test_a_restarted_planner_reads_no_manifest_and_plans_the_same(
    io: MemoryIO, writer: TableWriter, planners: Planners
) -> None:
    without = ScanPlanner(io, threads=2)
    expected = [_answer(_plan(without, writer, f)) for f in FILTERS]
    without.close()
    io.reads.clear()
    first = planners.new(io)
    assert [_answer(_plan(first, writer, f)) for f in FILTERS] == expected
    assert io.reads_of(MANIFESTS) == [2, 2, 2, 2]  # (the unfiltered plan first: statistics decoded after)
    restarted = planners.new(io)
    assert [_answer(_plan(restarted, writer, f)) for f in reversed(FILTERS)] == expected[::-1]
    assert io.reads_of(MANIFESTS) == [2, 2, 2, 2]
    stats = _tier(restarted).stats
    assert stats.hits >= 4 and stats.misses == 0 and stats.writes == 0 and stats.rejected == 0


def test_statistics_decoded_later_are_written_beside_the_core(
    io: MemoryIO, writer: TableWriter, planners: Planners
) -> None:
    """An unfiltered plan writes each manifest without its statistics; a filtered plan of a restarted planner
    reads those from the tier, decodes only the statistics (reading each manifest once more) and writes them;
    the next restart reads everything from the tier."""
    _plan(planners.new(io), writer)
    assert (len(_links(planners.root, "core")), len(_segments(planners.root, "core"))) == (4, 1)
    assert not _links(planners.root, "stats")
    explained = _plan(planners.new(io), writer, FILTERS[1], explain=True)
    assert io.reads_of(MANIFESTS) == [2, 2, 2, 2]
    assert (len(_links(planners.root, "stats")), len(_segments(planners.root, "stats"))) == (4, 1)
    assert _read_from(explained) == {"index-tier"}
    last = planners.new(io)
    assert _answer(_plan(last, writer, FILTERS[1])) == _answer(explained)
    assert io.reads_of(MANIFESTS) == [2, 2, 2, 2]
    again = _plan(last, writer, FILTERS[1], explain=True)
    assert _read_from(again) == {"memory"}


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "replace", "relink", "planted-link"])
def test_a_damaged_file_is_refused_and_the_manifest_decoded_again(
    io: MemoryIO, writer: TableWriter, planners: Planners, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A damaged segment (a byte flipped, cut short, emptied, replaced by another segment) costs its manifests
    a decode; a link to another manifest's slot, or to a file that is not a segment (removed when the tier
    starts, with any link whose segment is gone), costs its own manifest."""
    expected = _answer(_plan(planners.new(io), writer, FILTERS[1]))
    [core] = _segments(planners.root, "core")
    [stats] = _segments(planners.root, "stats")
    data = bytearray(core.read_bytes())
    first = sorted(_links(planners.root, "core"), key=lambda link: os.readlink(link))[0]
    if damage == "flip":
        data[len(data) // 3] ^= 0x10
        core.write_bytes(bytes(data))
    elif damage == "truncate":
        core.write_bytes(bytes(data[: len(data) // 2]))
    elif damage == "empty":
        core.write_bytes(b"")
    elif damage == "replace":  # the statistics segment, under the core segment's name
        core.write_bytes(stats.read_bytes())
    elif damage == "relink":  # the first manifest's link pointed at the second's slot
        _drop_assemblies(planners.root)  # (which name segments, not links: planned manifest by manifest)
        first.unlink()
        first.symlink_to(f"{core.name}#1")
    else:
        _drop_assemblies(planners.root)
        first.unlink()
        first.symlink_to("../../../etc/passwd")
    io.reads.clear()
    caplog.set_level(logging.WARNING)
    restarted = planners.new(io)
    assert _answer(_plan(restarted, writer, FILTERS[1])) == expected
    # (each process that opened the segment before it was removed refuses it: the plan's chunks run on 2 threads)
    assert _tier(restarted).stats.rejected >= (0 if damage == "planted-link" else 1)
    decoded = 1 if damage in ("relink", "planted-link") else 4
    assert sum(io.reads_of(MANIFESTS)) == decoded  # those refused alone, decoded again
    assert ("was refused and is removed" in caplog.text) == (damage != "planted-link")
    again = planners.new(io)
    assert _answer(_plan(again, writer, FILTERS[1])) == expected
    assert sum(io.reads_of(MANIFESTS)) == decoded  # (written again: whole this time)
    assert _tier(again).stats.hits == 4


def test_files_under_another_key_are_not_read_nor_removed(
    io: MemoryIO, writer: TableWriter, planners: Planners
) -> None:
    """A replica with another signing key keeps files of its own: it neither trusts nor refuses (removes)
    those of the others."""
    _plan(planners.new(io), writer)
    other = planners.new(io, key=b"o" * 32)
    _plan(other, writer)
    assert _tier(other).stats.rejected == 0 and _tier(other).stats.hits == 0
    assert len(_links(planners.root, "core")) == 8
    _plan(planners.new(io), writer)
    assert io.reads_of(MANIFESTS) == [2, 2, 2, 2]


def test_two_planners_decoding_one_manifest_at_once_publish_one_file(
    io: MemoryIO, writer: TableWriter, planners: Planners
) -> None:
    together = [planners.new(io) for _ in range(4)]
    start = threading.Barrier(len(together))
    answers: list[list[object]] = []

    def plan(planner: ScanPlanner) -> None:
        start.wait()
        answers.append(_answer(_plan(planner, writer, FILTERS[1])))

    threads = [threading.Thread(target=plan, args=(p,)) for p in together]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == 4 and all(a == answers[0] for a in answers)
    links = _links(planners.root, "core") + _links(planners.root, "stats")
    assert len(links) == 8 and not list(planners.root.glob(".*"))  # one link each for core and stats, no partial
    assert sum(_tier(p).stats.writes for p in together) == 8
    # no segment that no link points at
    targets = {os.readlink(link).partition("#")[0] for link in links}
    assert {p.name for p in _segments(planners.root, "core") + _segments(planners.root, "stats")} == targets


def test_a_restarted_planner_reads_no_manifest_list_it_planned_before(
    io: MemoryIO, writer: TableWriter, planners: Planners
) -> None:
    expected = _answer(_plan(planners.new(io), writer))
    manifest_list = writer.table().metadata.snapshots[1].manifest_list
    assert manifest_list is not None and io.reads[manifest_list] == 1
    assert _answer(_plan(planners.new(io), writer)) == expected
    assert io.reads[manifest_list] == 1
    (listed,) = planners.root.glob("lst-*")
    listed.write_bytes(listed.read_bytes()[:-1] + b"\x00")  # damaged: refused, removed, read again
    restarted = planners.new(io)
    assert _answer(_plan(restarted, writer)) == expected
    assert io.reads[manifest_list] == 2 and _tier(restarted).stats.rejected == 1


def test_a_manifest_list_outside_the_roots_is_refused_whatever_the_tier_holds(
    io: MemoryIO, writer: TableWriter, planners: Planners
) -> None:
    _plan(planners.new(io), writer)
    io.roots = Roots(["s3://bucket/data/"])
    with pytest.raises(LocationNotAllowedError):
        _plan(planners.new(io), writer)


def test_a_filter_prunes_by_its_fields_files_and_opens_only_the_kept_rows_segments(
    io: MemoryIO, writer: TableWriter, planners: Planners, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan that read a filter's fields leaves their statistics decoded in files of their own; a restarted
    planner prunes by them (and the assembly's partitions), then opens only the segments of the rows it keeps."""
    without = ScanPlanner(io, threads=2)
    expected = [_answer(_plan(without, writer, f)) for f in FILTERS[1:]]
    without.close()
    monkeypatch.setattr("planner_service.planning.index_tier.SEGMENT_MANIFESTS", 1)  # a segment a manifest
    first = planners.new(io, cache_bytes=1)
    assert [_answer(_plan(first, writer, f)) for f in FILTERS[1:]] == expected
    assert len(list(planners.root.glob("fld-*"))) == 2  # id, and data
    assert len(_segments(planners.root, "core")) == len(_segments(planners.root, "stats")) == 4
    opened: set[str] = set()
    original = IndexTier._segment

    def segment(tier: IndexTier, name: str, kind: str) -> Any:
        opened.add(name)
        return original(tier, name, kind)

    monkeypatch.setattr(IndexTier, "_segment", segment)
    monkeypatch.setattr("planner_service.planning.index_tier.assembled_index", None)  # (never assembled whole)
    restarted = planners.new(io)
    io.reads.clear()
    # data = 'p1' keeps manifest m1's files, id < 5 one file of m0's: their core and stats segments alone
    assert [_answer(_plan(restarted, writer, f)) for f in FILTERS[2:]] == expected[1:]
    assert sum(io.reads_of(MANIFESTS)) == 0 and len(opened) == 4
    assert _answer(_plan(restarted, writer, FILTERS[1])) == expected[0]


def test_a_filter_that_keeps_no_file_plans_nothing_from_the_fields_files(
    io: MemoryIO, writer: TableWriter, planners: Planners
) -> None:
    none = predicate(Op.GT, "id", 10_000)
    expected = _answer(_plan(ScanPlanner(io, threads=2), writer, none))
    assert expected == [[], []]
    _plan(planners.new(io), writer, none)
    restarted = planners.new(io)
    assert _answer(_plan(restarted, writer, none)) == expected
    assert _tier(restarted).stats.hits == 4 and _tier(restarted).stats.misses == 0


@pytest.mark.parametrize("damage", ["flip", "cut", "other-field"])
def test_a_damaged_fields_file_is_refused_and_the_plan_made_from_the_index(
    io: MemoryIO, writer: TableWriter, planners: Planners, damage: str
) -> None:
    expected = _answer(_plan(planners.new(io), writer, FILTERS[1]))
    _plan(planners.new(io), writer, FILTERS[2])
    files = sorted(planners.root.glob("fld-*"), key=lambda p: p.stat().st_mtime)
    assert len(files) == 2
    if damage == "flip":
        data = bytearray(files[0].read_bytes())
        data[len(data) // 2] ^= 0x10
        files[0].write_bytes(bytes(data))
    elif damage == "cut":
        files[0].write_bytes(files[0].read_bytes()[:-100])
    else:  # the file of field `data` under the name of field `id`'s
        files[0].write_bytes(files[1].read_bytes())
    restarted = planners.new(io)
    assert _answer(_plan(restarted, writer, FILTERS[1])) == expected
    assert _tier(restarted).stats.rejected == 1  # (and written again by the plan from the index)
    again = planners.new(io)
    assert _answer(_plan(again, writer, FILTERS[1])) == expected
    assert _tier(again).stats.rejected == 0 and _tier(again).stats.hits == 4


def test_what_a_full_queue_could_not_take_is_decoded_again_and_written_once_idle(
    io: MemoryIO, writer: TableWriter, planners: Planners, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold plan bigger than the writer's queue: the manifests it could not queue are decoded again by the
    tier's thread once the process no longer decodes, so the next process reads no manifest."""
    monkeypatch.setattr("planner_service.planning.index_tier.PENDING_BYTES", 1)  # the queue takes nothing
    first = planners.new(io, cache_bytes=1)
    expected = _answer(_plan(first, writer, FILTERS[1]))
    assert io.reads_of(MANIFESTS) == [2, 2, 2, 2]  # the plan's read, and the tier's own
    assert len(_links(planners.root, "core")) == 4 and len(_links(planners.root, "stats")) == 4
    io.reads.clear()
    restarted = planners.new(io)
    assert _answer(_plan(restarted, writer, FILTERS[1])) == expected
    assert io.reads_of(MANIFESTS) == [0, 0, 0, 0]


def test_a_decode_for_the_tier_waits_while_the_process_decodes(
    io: MemoryIO, writer: TableWriter, planners: Planners, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("planner_service.planning.index_tier.PENDING_BYTES", 1)
    planner = planners.new(io, cache_bytes=1)
    tier = _tier(planner)
    with tier.decoding():  # (another plan of this process decoding meanwhile)
        planner.plan(writer.table(), ScanRequest(snapshot=SnapshotChoice(snapshot_id=1)))
        time.sleep(0.3)
        assert not _links(planners.root, "core")
    tier.flush()
    assert len(_links(planners.root, "core")) == 4


def test_the_directory_keeps_within_its_bound_least_recently_used_out(io: MemoryIO, planners: Planners) -> None:
    writers = []
    for t in range(6):
        w = TableWriter(io, location=f"s3://bucket/wh/db/t{t}")
        w.manifest(
            f"s3://bucket/wh/db/t{t}/metadata/m.avro", [FileEntry(f"s3://bucket/t{t}/f{i}.parquet") for i in range(50)]
        )
        w.snapshot(1, [f"s3://bucket/wh/db/t{t}/metadata/m.avro"])
        writers.append(w)
    probe = planners.new(io)
    _plan(probe, writers[0])
    size = sum(p.stat().st_size for p in planners.root.glob("seg-*"))
    bound = int(size * 3.5)  # three tables' files fit, not four
    planner = planners.new(io, max_bytes=bound, cache_bytes=1)
    for w in writers:
        _plan(planner, w)
    held = sum(p.stat().st_size for p in planners.root.glob("seg-*"))
    tier = planner.manifests.tier
    assert tier is not None and held <= bound and tier.stats.evictions >= 3
    io.reads.clear()
    _plan(planner, writers[-1])  # the newest stayed
    assert io.reads["s3://bucket/wh/db/t5/metadata/m.avro"] == 0


def test_a_directory_that_refuses_writes_costs_decodes_never_a_plan(
    io: MemoryIO, writer: TableWriter, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Writes that fail (here: the directory replaced by a file after the tier started) are counted and logged
    once; every plan is answered as without the tier."""
    expected = [_answer(_plan(ScanPlanner(io, threads=2), writer, f)) for f in FILTERS]
    root = tmp_path / "index"
    tier = IndexTier(root, 10**9, KEY)
    planner = ScanPlanner(io, cache_bytes=1, threads=2, tier=tier)
    root.rename(tmp_path / "gone")
    root.write_text("not a directory")
    caplog.set_level(logging.WARNING)
    try:
        assert [_answer(_plan(planner, writer, f)) for f in FILTERS] == expected
        assert tier.stats.write_failures >= 4 and tier.stats.writes == 0
        assert caplog.text.count("cannot write to index_directory") == 1
    finally:
        planner.close()


def test_a_directory_that_cannot_be_used_turns_the_tier_off(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "file").write_text("x")
    caplog.set_level(logging.WARNING)
    assert index_tier(str(tmp_path / "file"), 10**9, KEY) is None
    assert "index_directory cannot be used" in caplog.text
    assert index_tier("", 10**9, KEY) is None and index_tier(str(tmp_path / "ok"), 0, KEY) is None
    made = index_tier(str(tmp_path / "ok"), 10**9, KEY)
    assert made is not None and oct((tmp_path / "ok").stat().st_mode & 0o777) == "0o700"
    made.close()


def test_a_manifest_outside_the_roots_is_refused_whatever_the_tier_holds(
    io: MemoryIO, writer: TableWriter, planners: Planners
) -> None:
    _plan(planners.new(io), writer, FILTERS[1])
    io.reads.clear()
    io.roots = Roots(["s3://bucket/elsewhere"])
    restricted = planners.new(io)
    with pytest.raises(LocationNotAllowedError):
        restricted.manifests.index(
            restricted.manifests.manifest_list(writer.table().metadata.snapshots[1]), Cancellation()
        )
    assert io.reads_of(MANIFESTS) == [0, 0, 0, 0]


@pytest.mark.parametrize("damage", ["none", "flip", "other-list", "segment-gone"])
def test_a_planned_snapshot_is_assembled_from_one_file(
    io: MemoryIO, writer: TableWriter, planners: Planners, damage: str
) -> None:
    """A restarted planner maps a snapshot's assembly and its segments (no manifest read, none assembled
    part by part); a damaged assembly, one of another list of manifests under this one's name, or one whose
    segment is gone is not used: the snapshot is assembled manifest by manifest, as without it."""
    expected = [_answer(_plan(planners.new(io), writer, f)) for f in FILTERS]
    assemblies = sorted(planners.root.glob("asm-*"))
    assert len(assemblies) == 2  # the snapshot's, with and without statistics
    if damage == "flip":
        data = bytearray(assemblies[0].read_bytes())
        data[5] ^= 1
        assemblies[0].write_bytes(bytes(data))
    elif damage == "other-list":  # the assembly without statistics under the name of the one with them
        assemblies[0].write_bytes(assemblies[1].read_bytes())
    elif damage == "segment-gone":
        _segments(planners.root, "stats")[0].unlink()
    restarted = planners.new(io)
    io.reads.clear()
    parts = []
    original = FileIndex.concat

    def counted(cls: type[FileIndex], indexes: Any) -> FileIndex:
        parts.append(len(indexes))
        made: FileIndex = original.__func__(cls, indexes)  # type: ignore[attr-defined]
        return made

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(FileIndex, "concat", classmethod(counted))
        assert [_answer(_plan(restarted, writer, f)) for f in FILTERS] == expected
    if damage == "none":  # (a filtered plan gathers the rows it keeps from their manifests' slots)
        assert 4 not in parts and sum(io.reads_of(MANIFESTS)) == 0
    else:
        assert 4 in parts  # assembled manifest by manifest
        assert sum(io.reads_of(MANIFESTS)) == (4 if damage == "segment-gone" else 0)
    assert _tier(restarted).stats.rejected == (1 if damage in ("flip", "other-list") else 0)


def test_a_plan_that_streamed_its_manifests_leaves_them_assembled(
    io: MemoryIO, writer: TableWriter, planners: Planners, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Manifests too many for the manifest cache are decoded and pruned a group at a time; with the tier, the
    plan leaves their assembly behind, and the next plan of them (this process's or another's) maps it whole
    instead of streaming."""
    streamed = []
    pruned_index = ManifestReader.pruned_index

    def counted(self: ManifestReader, manifests: Any, *args: Any) -> Any:
        streamed.append(len(manifests))
        return pruned_index(self, manifests, *args)

    monkeypatch.setattr(ManifestReader, "pruned_index", counted)
    expected = _answer(_plan(ScanPlanner(io, cache_bytes=1, threads=2), writer, FILTERS[1]))
    assert streamed == [4]
    first = planners.new(io, cache_bytes=1)
    assert _answer(_plan(first, writer, FILTERS[1])) == expected
    assert streamed == [4, 4] and len(list(planners.root.glob("asm-*"))) == 1
    io.reads.clear()
    assert _answer(_plan(planners.new(io, cache_bytes=1), writer, FILTERS[1])) == expected
    assert streamed == [4, 4] and sum(io.reads_of(MANIFESTS)) == 0

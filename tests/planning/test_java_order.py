"""Java's manifest order (reference §2.4): ManifestGroup and the DeleteFileIndex builder iterate manifests
as `Sets.newHashSet(manifests)` does, and bin packing depends on that order.

Every expected value here was printed by Java 17 (OpenJDK 17.0.15; the JDK 25 orders are noted where
they differ) running this program, which reproduces GenericManifestFile's equals and hashCode
(Guava Objects.hashCode(path) = 31 + path.hashCode()):

    static final class M {
      final String path;
      M(String path) { this.path = path; }
      public boolean equals(Object o) { return o instanceof M && ((M) o).path.equals(path); }
      public int hashCode() { return Arrays.hashCode(new Object[] {path}); }
    }
    // for each case: paths -> new HashSet<>(list of M) -> the index in `paths` of each M iterated
    // and for each string s: s.hashCode()
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_service.metadata.snapshot_choice import SnapshotChoice
from planner_service.planning.java_order import hashset_capacity, hashset_order, java_string_hash, java_string_hashes
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import ScanRequest
from tests.planning.factories import DELETE_MANIFEST, POSITION_DELETES, FileEntry, MemoryIO, TableWriter

REALISTIC = [f"s3://bucket/wh/db/events/metadata/8d1f0{i}a7-5b2c-4e0f-9a3d-6c4b2e1f0a9{i}-m{i}.avro" for i in range(5)]


def manifests(n: int) -> list[str]:
    return [f"/tmp/warehouse/db/t/metadata/manifest-{i}.avro" for i in range(n)]


def order_of(paths: list[str]) -> list[int]:
    return [paths.index(p) for p in hashset_order(paths, lambda p: p)]


@pytest.mark.parametrize(
    ("text", "java_hash"),
    [
        ("", 0),
        ("a", 97),
        ("abc", 96354),
        ("Aa", 2112),
        ("BB", 2112),
        ("polygenelubricants", -2147483648),
        ("\U0001f600", 1772899),  # one code point, two UTF-16 units
        ("été", 227742),
        ("s3://bucket/warehouse/db/t/metadata/snap-1-1-abc.avro", 642917742),
    ],
)
def test_java_string_hash(text: str, java_hash: int) -> None:
    """String.hashCode over UTF-16 code units, as the unsigned 32-bit value of Java's int."""
    assert java_string_hash(text) == java_hash & 0xFFFFFFFF


@pytest.mark.parametrize(
    ("n", "capacity"),
    [(0, 16), (1, 16), (11, 16), (12, 32), (13, 32), (23, 32), (24, 64), (48, 128), (96, 256), (100, 256)],
)
def test_hashset_capacity_is_jdk_17s(n: int, capacity: int) -> None:
    """§2.4, JDK <= 18: tableSizeFor(max((int)(n / .75f) + 1, 16)); n = 12 gives 32 buckets (JDK 19+: 16)."""
    assert hashset_capacity(n) == capacity


@pytest.mark.parametrize(
    ("paths", "java_order"),
    [
        pytest.param(REALISTIC, [2, 4, 1, 3, 0], id="5 manifests"),
        pytest.param(REALISTIC[:3], [2, 1, 0], id="3 manifests"),
        pytest.param(manifests(12), [9, 0, 5, 10, 7, 2, 1, 4, 8, 3, 11, 6], id="12 manifests"),
        pytest.param(manifests(13), [9, 0, 5, 10, 7, 12, 2, 1, 4, 8, 3, 11, 6], id="13 manifests"),
        pytest.param(
            manifests(24),
            [9, 0, 10, 14, 17, 1, 4, 8, 22, 11, 23, 18, 5, 7, 12, 15, 20, 2, 21, 13, 3, 19, 16, 6],
            id="24 manifests",
        ),
        pytest.param(["BB", "Aa"], [0, 1], id="equal hashes keep insertion order"),
        pytest.param(["Aa", "BB"], [0, 1], id="equal hashes keep insertion order, reversed"),
    ],
)
def test_hashset_order_is_java_17s(paths: list[str], java_order: list[int]) -> None:
    assert order_of(paths) == java_order


def test_the_bucket_count_changes_the_order() -> None:
    """12 paths: JDK 17 uses 32 buckets and puts "q" (31 + 113 = 144, bucket 16) last; JDK 25 uses 16
    buckets, where "q" lands in bucket 0, first. The planner follows JDK 17."""
    chars = ["q", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"]
    assert order_of(chars) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0]  # JDK 25: [0, 1, ..., 11]


# -- the planner plans in that order ------------------------------------------------------------------------


@pytest.fixture
def planner() -> Iterator[ScanPlanner]:
    p = ScanPlanner(MemoryIO(), threads=2)
    yield p
    p.close()


def _data_paths(planner: ScanPlanner, writer: TableWriter) -> list[str]:
    plan = planner.plan(writer.table(), ScanRequest(combine=False))
    return [task.file.path for task in plan.file_tasks]


def test_data_manifests_are_planned_in_hashset_order(planner: ScanPlanner) -> None:
    """ManifestGroup: planFiles() gives the manifests' files in HashSet order, each manifest's in entry order."""
    assert isinstance(planner.io, MemoryIO)
    writer = TableWriter(planner.io)
    for i, path in enumerate(REALISTIC):
        writer.manifest(
            path, [FileEntry(f"s3://bucket/data/m{i}-a.parquet"), FileEntry(f"s3://bucket/data/m{i}-b.parquet")]
        )
    writer.snapshot(1, REALISTIC)
    expected = [f"s3://bucket/data/m{i}-{x}.parquet" for i in [2, 4, 1, 3, 0] for x in "ab"]
    assert _data_paths(planner, writer) == expected


def test_skipped_manifests_do_not_change_the_hashset(planner: ScanPlanner) -> None:
    """ManifestGroup builds the set from every data manifest, then skips those without added or existing
    files while iterating: 12 manifests (32 buckets) with one empty keep the 12-manifest order; ordering
    the 11 others alone (16 buckets) would give [9, 1, 4, 8, 0, 5, 10, 3, 7, 6, 2]."""
    assert isinstance(planner.io, MemoryIO)
    writer = TableWriter(planner.io)
    paths = manifests(12)
    for i, path in enumerate(paths[:11]):
        writer.manifest(path, [FileEntry(f"s3://bucket/data/{i}.parquet")])
    writer.empty_manifest(paths[11])
    writer.snapshot(1, paths)
    expected = [f"s3://bucket/data/{i}.parquet" for i in [9, 0, 5, 10, 7, 2, 1, 4, 8, 3, 6]]
    assert _data_paths(planner, writer) == expected
    assert planner.io.reads[paths[11]] == 0  # skipped unread


def test_delete_manifests_are_loaded_in_hashset_order(planner: ScanPlanner) -> None:
    """DeleteFileIndex.builderFor(io, Sets.newHashSet(deleteManifests)): the delete files load in HashSet
    order of their manifests, and equal sequence numbers keep that order in task.deletes() (§6.2)."""
    assert isinstance(planner.io, MemoryIO)
    writer = TableWriter(planner.io)
    data = writer.manifest("s3://bucket/wh/db/events/metadata/data-m0.avro", [FileEntry("s3://bucket/data/d.parquet")])
    for i, path in enumerate(REALISTIC[:3]):
        deletes = [FileEntry(f"s3://bucket/data/pos-{i}.parquet", POSITION_DELETES)]
        writer.manifest(path, deletes, DELETE_MANIFEST, seq=2)
    writer.snapshot(1, [data, *REALISTIC[:3]], seq=2)
    plan = planner.plan(writer.table(), ScanRequest(snapshot=SnapshotChoice(snapshot_id=1), combine=False))
    [task] = plan.file_tasks
    assert [d.path for d in task.deletes] == [f"s3://bucket/data/pos-{i}.parquet" for i in [2, 1, 0]]


@given(st.lists(st.text(), max_size=40))
@settings(max_examples=200, deadline=None, derandomize=True, database=None)
def test_hashes_of_many_texts_are_each_texts_hash(texts: list[str]) -> None:
    """All at once as one at a time: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, mod 2^32 (the
    String.hashCode javadoc), for any texts: empty, astral (two units), mixed in one list."""
    expected = []
    for text in texts:
        units = text.encode("utf-16-be")
        h = 0
        for i in range(0, len(units), 2):
            h = (h * 31 + int.from_bytes(units[i : i + 2], "big")) % 2**32
        expected.append(h)
    assert java_string_hashes(texts).tolist() == expected

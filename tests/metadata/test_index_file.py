"""A decoded manifest on disk (metadata/index_file.py): read back, it is the index that was written, partition
values of every type included (by Java's equality: -0.0, NaN, a decimal's scale); a file changed in any byte,
cut short, written under another key or for another manifest is refused before it is parsed."""

from __future__ import annotations

import json
import math
import uuid
from decimal import Decimal
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

from planner_service.metadata.conversions import java_equality_key
from planner_service.metadata.file_index import INDEX_SCHEMA, STATS_COLUMNS, FileIndex
from planner_service.metadata.index_file import (
    CORE,
    FORMAT,
    MAGIC,
    STATS,
    InvalidIndexFile,
    core_segments,
    list_file,
    open_list,
    open_segment,
    stats_segments,
)
from planner_service.metadata.manifest_list import FieldSummary, ManifestFile

KEY = b"k" * 32
MANIFEST = "s3://bucket/t/metadata/m0.avro\x002048\x005\x0042"
VALUES: list[Any] = [
    None,
    0,
    -(2**63),
    True,
    False,
    1.5,
    -0.0,
    math.nan,
    math.inf,
    "",
    "día ✓",
    b"\x00\xff",
    Decimal("1.50"),
    Decimal("-0.001"),
    Decimal("1E+3"),
    uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
]


def _index(rows: int = 4, with_stats: bool = True) -> FileIndex:
    data: dict[str, list[Any]] = {
        "content": [0] * rows,
        "file_name": [f"f-{i}.parquet" for i in range(rows)],
        "file_format": ["PARQUET"] * rows,
        "record_count": list(range(rows)),
        "split_offsets": [[4, 100 + i] if i % 2 else None for i in range(rows)],
        "value_counts": [[{"key": 1, "value": i}] for i in range(rows)],
        "lower_bounds": [[{"key": 1, "value": bytes([i])}] for i in range(rows)],
    }
    frame = pl.DataFrame({name: data.get(name, [None] * rows) for name in INDEX_SCHEMA}, schema=INDEX_SCHEMA)
    frame = frame.drop("status").with_columns(pl.col("record_count").alias("status").cast(pl.Int32))
    if not with_stats:
        frame = frame.with_columns(pl.Series(name, dtype=pl.Null).extend_constant(None, rows) for name in STATS_COLUMNS)
    partitions = ((0, tuple(VALUES)), (3, ("x", 1)))
    return FileIndex(
        frame,
        partitions,
        np.array([i % 2 for i in range(rows)], np.int32),
        ("s3://other/", "s3://bucket/t/data/", "s3://unused/"),
        np.array([1] * (rows - 1) + [0], np.int32)[:rows],
        has_stats=with_stats,
        null_free=frozenset({1, 7}),
    )


def core_file(index: FileIndex, manifest: str, key: bytes) -> bytes:
    [(data, manifests)] = core_segments([(manifest, index)], key)
    assert manifests == [manifest]
    return data


def stats_file(stats: pl.DataFrame, manifest: str, key: bytes) -> bytes:
    [(data, _)] = stats_segments([(manifest, stats)], key)
    return data


def read_stats(data: bytes, manifest: str, key: bytes, rows: int) -> pl.DataFrame:
    return open_segment(pa.py_buffer(data), STATS, key).stats(0, manifest, rows)


def _read(data: bytes, manifest: str = MANIFEST, key: bytes = KEY) -> FileIndex:
    return open_segment(pa.py_buffer(data), CORE, key).index(0, manifest)


def test_an_index_reads_back_as_written() -> None:
    index = _index()
    core = _read(core_file(index, MANIFEST, KEY))
    assert not core.has_stats and core.mapped and core.null_free == index.null_free
    assert core.paths() == index.paths()
    assert core.partition_id.tolist() == index.partition_id.tolist()
    # every value as Java's equals() sees it (-0.0 is not 0.0, NaN is NaN, 1.50 is not 1.5)
    got = [(s, tuple(java_equality_key(v) for v in values)) for s, values in core.partitions]
    want = [(s, tuple(java_equality_key(v) for v in values)) for s, values in index.partitions]
    assert repr(got) == repr(want)
    assert [type(v) for v in core.partitions[0][1]] == [type(v) for v in VALUES]
    assert str(core.partitions[0][1][12]) == "1.50" and math.copysign(1, core.partitions[0][1][6]) == -1
    core_columns = [c for c in index.frame.columns if c not in STATS_COLUMNS]
    assert_frame_equal(core.frame.select(core_columns), index.frame.select(core_columns))
    stats = read_stats(stats_file(index.frame.select(STATS_COLUMNS), MANIFEST, KEY), MANIFEST, KEY, 4)
    whole = core.with_statistics(stats, mapped=True)
    assert whole.mapped and whole.has_stats
    assert_frame_equal(whole.frame, index.frame)
    assert whole.content_files(with_stats=True)[3].lower_bounds == {1: b"\x03"}


def test_an_index_without_statistics_reads_back_without_them() -> None:
    index = _index(with_stats=False)
    core = _read(core_file(index, MANIFEST, KEY))
    assert_frame_equal(core.frame, index.frame)
    assert FileIndex.concat([core, index]).frame.height == 8  # (the same columns, in the same order)


def test_no_rows() -> None:
    index = _index(rows=0)
    assert len(_read(core_file(index, MANIFEST, KEY))) == 0


@pytest.mark.parametrize("where", ["first", "middle", "json", "length", "mac", "magic"])
def test_a_flipped_byte_anywhere_is_refused(where: str) -> None:
    data = bytearray(core_file(_index(), MANIFEST, KEY))
    json_at = data.index(b'{"format"')
    at = {
        "first": 0,
        "middle": json_at // 2,
        "json": json_at + 3,
        "length": len(data) - 48,
        "mac": len(data) - 30,
        "magic": len(data) - 1,
    }[where]
    data[at] ^= 0x01
    with pytest.raises(InvalidIndexFile):
        _read(bytes(data))


@pytest.mark.parametrize("keep", [0, 10, 47, 48, -1, -41])
def test_a_file_cut_short_is_refused(keep: int) -> None:
    data = core_file(_index(), MANIFEST, KEY)
    with pytest.raises(InvalidIndexFile):
        _read(data[:keep])


def test_a_file_for_another_manifest_or_under_another_key_or_of_another_kind_is_refused() -> None:
    data = core_file(_index(), MANIFEST, KEY)
    with pytest.raises(InvalidIndexFile, match="another manifest"):
        _read(data, manifest=MANIFEST.replace("m0", "m1"))
    with pytest.raises(InvalidIndexFile, match="MAC"):
        _read(data, key=b"j" * 32)
    stats = stats_file(_index().frame.select(STATS_COLUMNS), MANIFEST, KEY)
    with pytest.raises(InvalidIndexFile, match="stats"):
        _read(stats)
    with pytest.raises(InvalidIndexFile, match="4 rows for an index of 3"):
        read_stats(stats, MANIFEST, KEY, 3)


def test_a_planted_file_that_is_valid_arrow_is_refused() -> None:
    """Arrow IPC that anyone can write, with a made-up trailer: no MAC under the key, never parsed."""
    sink = pa.BufferOutputStream()
    table = pa.table({"content": [0]})
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    slot = {"manifest": MANIFEST, "rows": 1, "columns": ["content"], "partitions": [], "directories": []}
    text = json.dumps({"format": FORMAT, "kind": "core", "slots": [slot]}).encode()
    forged = sink.getvalue().to_pybytes() + text + len(text).to_bytes(8, "little") + b"\0" * 32 + MAGIC
    with pytest.raises(InvalidIndexFile, match="MAC"):
        _read(forged)


def test_only_single_manifests_indexes_are_written() -> None:
    both = FileIndex.concat([_index(), _index()])
    with pytest.raises(ValueError, match="single manifests"):
        core_file(both, MANIFEST, KEY)


def test_a_segment_holds_many_manifests_one_a_slot_by_schema() -> None:
    """Manifests decoded together share a segment per schema of their columns; each slot is its own manifest's
    index, and a slot looked up for another manifest is refused."""
    plain = _index(rows=3)
    other = _index(rows=5, with_stats=False).frame.with_columns(pl.lit(None, pl.Null).alias("key_metadata"))
    typed = FileIndex(other, plain.partitions, np.zeros(5, np.int32), ("d/",), np.zeros(5, np.int32))
    parts = [("m0", plain), ("m1", typed), ("m2", _index(rows=2))]
    segments = core_segments(parts, KEY)
    assert [manifests for _, manifests in segments] == [["m0", "m2"], ["m1"]]
    first = open_segment(pa.py_buffer(segments[0][0]), CORE, KEY)
    assert first.index(1, "m2").paths() == _index(rows=2).paths() and len(first.index(0, "m0")) == 3
    second = open_segment(pa.py_buffer(segments[1][0]), CORE, KEY)
    assert second.index(0, "m1").paths() == [
        "d/f-0.parquet",
        "d/f-1.parquet",
        "d/f-2.parquet",
        "d/f-3.parquet",
        "d/f-4.parquet",
    ]
    with pytest.raises(InvalidIndexFile, match="another manifest"):
        first.index(0, "m2")
    with pytest.raises(InvalidIndexFile, match="another manifest"):
        first.index(2, "m2")


def test_a_manifest_list_reads_back_as_decoded() -> None:
    manifests = [
        ManifestFile(
            "s3://b/t/metadata/m0.avro", 4096, 1, 0, 7, 3, 42, 10, 0, 2, 1000, 0, 20,
            (FieldSummary(True, None, b"\x00\x01", None), FieldSummary(False, True, None, b"\xff")),
            key_metadata=b"\x09",
            first_row_id=5,
        ),
        ManifestFile("s3://b/t/metadata/m1.avro", 10, 0, 1, 0, 0, None, None, None, None, None, None, None, None),
    ]  # fmt: skip
    location = "s3://b/t/metadata/snap-1.avro"
    data = list_file(location, manifests, KEY)
    assert open_list(pa.py_buffer(data), location, KEY) == manifests
    with pytest.raises(InvalidIndexFile, match="another list"):
        open_list(pa.py_buffer(data), location.replace("snap-1", "snap-2"), KEY)
    with pytest.raises(InvalidIndexFile, match="MAC"):
        open_list(pa.py_buffer(data), location, b"j" * 32)
    with pytest.raises(InvalidIndexFile, match="list"):
        open_segment(pa.py_buffer(data), CORE, KEY)


def test_an_assemblys_partitions_read_back_as_interned() -> None:
    """Partitions of several specs and arities (none for an unpartitioned spec), values of every kind, as the
    assembly writes them (a column a spec's field) and reads them back, in their order."""
    from planner_service.metadata.index_assembly import _partitions_json, _partitions_of

    partitions = [
        (0, (1, "a")),
        (1, ()),
        (2, tuple(VALUES)),
        (0, (None, "b")),
        (1, ()),
        (0, (-(2**63), "")),
    ]
    written = json.loads(json.dumps(_partitions_json(partitions)))
    back = _partitions_of(written)
    assert [(s, [java_equality_key(v) for v in values]) for s, values in back] == [
        (s, [java_equality_key(v) for v in values]) for s, values in partitions
    ]
    assert [[type(v) for v in values] for _, values in back] == [[type(v) for v in values] for _, values in partitions]

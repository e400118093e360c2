"""Deletion vectors (Puffin deletion-vector-v1 blobs) and equality deletes, from hand-made files."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyroaring import BitMap64

from spark_client.deletes import DV_MAGIC, CorruptDeleteFile, EqualityDeletes, decode_deletion_vector, equality_mask
from tests.spark_client.plans import field, file_task, plan, read_all, schema, write_rows


def dv_blob(positions: list[int]) -> bytes:
    """A deletion-vector-v1 blob as the spec lays it out."""
    body = DV_MAGIC + BitMap64(positions).serialize()
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def portable_roaring64(positions: list[int]) -> bytes:
    """The spec's portable 64-bit Roaring format written by hand (array containers only)."""
    buckets: dict[int, list[int]] = {}
    for p in sorted(set(positions)):
        buckets.setdefault(p >> 32, []).append(p & 0xFFFFFFFF)
    out = struct.pack("<Q", len(buckets))
    for key, lows in sorted(buckets.items()):
        containers: dict[int, list[int]] = {}
        for low in lows:
            containers.setdefault(low >> 16, []).append(low & 0xFFFF)
        # portable 32-bit bitmap without runs: cookie 12346, container count, (key, cardinality - 1) pairs,
        # the containers' offsets, then each array container's 16-bit values
        bitmap = struct.pack("<II", 12346, len(containers))
        bitmap += b"".join(struct.pack("<HH", k, len(v) - 1) for k, v in sorted(containers.items()))
        offset = len(bitmap) + 4 * len(containers)
        for _, values in sorted(containers.items()):
            bitmap += struct.pack("<I", offset)
            offset += 2 * len(values)
        bitmap += b"".join(struct.pack(f"<{len(v)}H", *v) for _, v in sorted(containers.items()))
        out += struct.pack("<I", key) + bitmap
    return out


POSITIONS = [0, 1, 5, 65535, 65536, 1 << 31, (1 << 32) + 7, (3 << 32) + 1]


def test_decodes_positions_across_32_bit_buckets() -> None:
    assert decode_deletion_vector(dv_blob(POSITIONS)).tolist() == POSITIONS


def test_the_portable_format_by_hand_is_what_pyroaring_writes() -> None:
    assert portable_roaring64(POSITIONS) == BitMap64(POSITIONS).serialize()
    body = DV_MAGIC + portable_roaring64(POSITIONS)
    blob = struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    assert decode_deletion_vector(blob).tolist() == POSITIONS


def test_an_empty_vector_deletes_nothing() -> None:
    assert decode_deletion_vector(dv_blob([])).tolist() == []


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "CRC-32"),
        (lambda b: b[:4] + b"\0\0\0\0" + b[8:], "magic"),
        (lambda b: struct.pack(">I", 3) + b[4:], "length"),
        (lambda b: b[:6], "too short"),
    ],
)
def test_a_damaged_vector_is_refused(damage: object, message: str) -> None:
    with pytest.raises(CorruptDeleteFile, match=message):
        decode_deletion_vector(damage(dv_blob([1, 2, 3])), "f.puffin")  # type: ignore[operator]


def test_a_dv_in_a_puffin_file_is_read_at_its_offset(tmp_path: Path) -> None:
    s = schema(field(1, "id", "long"))
    data = write_rows(tmp_path / "d.parquet", s, {"id": list(range(10))})
    blob = dv_blob([2, 3, 9])
    puffin = tmp_path / "dv.puffin"
    puffin.write_bytes(b"PFA1" + b"x" * 20 + blob + b"trailing footer")
    delete = {
        "content": "position-deletes",
        "file-format": "puffin",
        "file-path": str(puffin),
        "referenced-data-file": data,
        "content-offset": 24,
        "content-size-in-bytes": len(blob),
    }
    table = read_all(plan(s, [[file_task(data, deletes=[0])]], delete_files=[delete]))
    assert table.column("id").to_pylist() == [0, 1, 4, 5, 6, 7, 8]


# --- Equality deletes -----------------------------------------------------------------------------------------


def deletes(**columns: pa.Array) -> EqualityDeletes:
    return EqualityDeletes(
        tuple(int(k[1:]) for k in columns), pa.table(list(columns.values()), names=[k[1:] for k in columns])
    )


def test_equality_nulls_match_nulls() -> None:
    d = deletes(c1=pa.array([1, None, 3], pa.int64()), c2=pa.array(["a", "b", None]))
    keys = [pa.array([1, None, None, 3, 3, 1], pa.int64()), pa.array(["a", "b", "a", None, "x", None])]
    assert equality_mask(keys, d).to_pylist() == [False, False, True, False, True, True]


def test_equality_keys_are_widened_to_the_delete_files_type() -> None:
    d = deletes(c1=pa.array([5, 7], pa.int64()))
    assert equality_mask([pa.array([5, 6, 7, None], pa.int32())], d).to_pylist() == [False, True, False, True]


@pytest.mark.parametrize(
    "values",
    [
        pa.array([True, None], pa.bool_()),
        pa.array([1.5, None], pa.float64()),
        pa.array([b"\x01", None], pa.binary()),
        pa.array([5, None], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        pa.array([3, None], pa.int32()).cast(pa.date32()),
        pa.array([b"0123456789abcdef", None], pa.binary(16)),
    ],
)
def test_equality_on_each_key_type(values: pa.Array) -> None:
    d = EqualityDeletes((1,), pa.table({"1": values.slice(0, 1)}))
    assert equality_mask([values], d).to_pylist() == [False, True]


def test_equality_deletes_read_by_field_id_and_applied(tmp_path: Path) -> None:
    """The delete file names its column otherwise (written before a rename): the field id decides."""
    s = schema(field(1, "id", "long"), field(2, "name", "string"))
    data = write_rows(tmp_path / "d.parquet", s, {"id": [1, 2, 3, None], "name": ["a", "b", "c", "d"]})
    eq = tmp_path / "eq.parquet"
    pq.write_table(
        pa.table(
            {"old_id": [2, None]}, schema=pa.schema([pa.field("old_id", pa.int64(), True, {b"PARQUET:field_id": b"1"})])
        ),
        eq,
    )
    delete = {"content": "equality-deletes", "file-format": "parquet", "file-path": str(eq), "equality-ids": [1]}
    projected = schema(field(2, "name", "string"))  # the equality column is read, compared, then dropped
    table = read_all(plan(projected, [[file_task(data, deletes=[0])]], delete_files=[delete]))
    assert table.column_names == ["name"]
    assert table.column("name").to_pylist() == ["a", "c"]

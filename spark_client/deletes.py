"""The delete files of a task: position deletes, deletion vectors and equality deletes.

The planner has already chosen which delete files apply to which data file (sequence numbers, partition
and file scoping, a DV hiding older position deletes), so every file a task refers to is applied:
* position deletes (Parquet, columns file_path and pos): the rows of this data file whose position is
  listed, where position counts the file's rows from 0 (spec, "Position Delete Files"); a partition-scoped
  file also lists other data files' rows, so only entries whose file_path equals the data file's location
  count.
* deletion vectors (v3, Puffin blob "deletion-vector-v1" at content-offset, content-size-in-bytes long):
  4-byte big-endian length of magic + bitmap, magic D1 D3 39 64, a 64-bit Roaring bitmap in the portable
  format (8-byte LE count of 32-bit buckets, each a 4-byte LE key and a portable 32-bit Roaring bitmap),
  then a 4-byte big-endian CRC-32 of magic + bitmap (spec, Puffin "deletion-vector-v1").
* equality deletes: a row is deleted when its values in the equality columns equal a delete row's, where
  null equals null (spec, "Equality Delete Files": the delete's values are matched with equality that
  treats nulls as equal, as Java's StructLikeSet does).
Each delete file is read once per task, however many of the task's data files it applies to.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from contextlib import closing
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from iceberg_io import StorageConfig, read_range
from spark_client.formats import DataFile, open_data_file
from spark_client.projection import find_by_id, with_ids

DV_MAGIC = bytes.fromhex("D1D33964")
FILE_PATH_ID = 2147483546  # reserved field ids of a position delete file's columns (spec, "Reserved Field IDs")
POS_ID = 2147483545


class CorruptDeleteFile(ValueError):
    """A delete file that does not decode as the spec says (names the file)."""


@dataclass(frozen=True)
class EqualityDeletes:
    """One equality delete file: its equality field ids and their rows (columns named by id)."""

    field_ids: tuple[int, ...]
    rows: pa.Table


def decode_deletion_vector(blob: bytes, location: str = "<blob>") -> np.ndarray:
    """The deleted positions of a deletion-vector-v1 blob, sorted, as int64."""
    if len(blob) < 12:
        raise CorruptDeleteFile(f"Deletion vector in {location} is {len(blob)} bytes, too short")
    (length,) = struct.unpack(">I", blob[:4])
    if length + 8 != len(blob) or blob[4:8] != DV_MAGIC:
        raise CorruptDeleteFile(f"Deletion vector in {location} has a bad length or magic")
    (crc,) = struct.unpack(">I", blob[4 + length : 8 + length])
    if zlib.crc32(blob[4 : 4 + length]) != crc:
        raise CorruptDeleteFile(f"Deletion vector in {location} fails its CRC-32 check")
    return _portable_roaring64(blob[8 : 4 + length], location)


def _portable_roaring64(data: bytes, location: str) -> np.ndarray:
    from pyroaring import BitMap64  # CRoaring's roaring64 portable format is the spec's

    try:
        bitmap = BitMap64.deserialize(data)
    except (ValueError, OverflowError) as exc:
        raise CorruptDeleteFile(f"Deletion vector in {location}: {exc}") from exc
    return np.frombuffer(bitmap.to_array(), dtype=np.uint64).astype(np.int64)


class TaskDeletes:
    """The plan's delete files, read on first use and kept for the task (through their presigned URLs when
    `urls`, the plan's `file-urls`, has them)."""

    def __init__(
        self, delete_files: list[dict[str, Any]], storage: StorageConfig, urls: Mapping[str, str] | None = None
    ) -> None:
        self._files = delete_files
        self._storage = storage
        self._urls = urls
        self._position_tables: dict[int, pa.Table] = {}
        self._equality: dict[int, EqualityDeletes] = {}

    def deleted_positions(self, data_path: str, refs: list[int]) -> np.ndarray | None:
        """Sorted positions deleted from `data_path` by the referenced position deletes and DVs (None: none)."""
        parts = []
        for ref in refs:
            f = self._files[ref]
            if f["content"] != "position-deletes":
                continue
            if f["file-format"] == "puffin":
                blob = read_range(
                    f["file-path"], f["content-offset"], f["content-size-in-bytes"], self._storage, self._urls
                )
                parts.append(decode_deletion_vector(blob, f["file-path"]))
            else:
                table = self._position_table(ref)
                mine = pc.equal(table.column("file_path"), pa.scalar(data_path, table.schema.field(0).type))
                parts.append(table.column("pos").filter(mine).to_numpy().astype(np.int64))
        if not parts:
            return None
        return np.unique(np.concatenate(parts))

    def equality_deletes(self, refs: list[int]) -> list[EqualityDeletes]:
        out = []
        for ref in refs:
            f = self._files[ref]
            if f["content"] == "equality-deletes":
                if ref not in self._equality:
                    self._equality[ref] = self._read_equality(f)
                out.append(self._equality[ref])
        return out

    def _open(self, f: dict[str, Any]) -> tuple[DataFile, pa.Schema]:
        """A delete file and its schema with field ids (delete files always carry them)."""
        source = open_data_file(f["file-path"], f["file-format"], self._storage, self._urls)
        return source, with_ids(source.schema, None)

    def _position_table(self, ref: int) -> pa.Table:
        if ref not in self._position_tables:
            f = self._files[ref]
            source, schema = self._open(f)
            with closing(source):
                names = [_column(schema, i, f["file-path"]) for i in (FILE_PATH_ID, POS_ID)]
                table = source.read_all(names).select(names)
            self._position_tables[ref] = table.rename_columns(["file_path", "pos"])
        return self._position_tables[ref]

    def _read_equality(self, f: dict[str, Any]) -> EqualityDeletes:
        ids = tuple(f["equality-ids"])
        source, schema = self._open(f)
        with closing(source):
            top = sorted({_column(schema, i, f["file-path"]) for i in ids})
            table = source.read_all(top)
        fields = [schema.field(name) for name in table.schema.names]
        columns = []
        for i in ids:
            path = find_by_id(fields, i)
            assert path is not None  # _column found it
            column = table.column(path[0]).combine_chunks()
            for step in path[1:]:
                column = column.field(step)
            columns.append(column)
        return EqualityDeletes(ids, pa.table(columns, names=[str(i) for i in ids]))


def _column(schema: pa.Schema, wanted: int, location: str) -> str:
    """The top-level column holding field id `wanted` in a delete file."""
    path = find_by_id(list(schema), wanted)
    if path is None:
        raise CorruptDeleteFile(f"Delete file {location} has no column with field id {wanted}")
    return str(schema.field(path[0]).name)


# --- Applying equality deletes -------------------------------------------------------------------------------


def equality_mask(keys: list[pa.Array], deletes: EqualityDeletes) -> pa.Array:
    """True for the rows whose key (one array per equality field) matches no delete row; nulls match nulls."""
    length = len(keys[0]) if keys else 0
    left: dict[str, pa.Array] = {"__row": pa.array(np.arange(length, dtype=np.int64))}
    right: dict[str, pa.Array] = {}
    for i, (key, name) in enumerate(zip(keys, deletes.rows.column_names, strict=True)):
        deleted = deletes.rows.column(name).combine_chunks()
        if key.type != deleted.type:
            key = _common(key, deleted.type)
        for side, values in ((left, key), (right, deleted)):
            side[f"v{i}"] = pc.is_valid(values)  # a null matches a null: compare (is valid, value or filler)
            side[f"k{i}"] = pc.fill_null(values, _filler(values.type)) if values.null_count else values
    # a semi join keeps each data row at most once, however many delete rows match it
    matched = pa.table(left).join(pa.table(right), list(right), join_type="left semi")
    mask = np.ones(length, dtype=bool)
    mask[matched.column("__row").to_numpy()] = False
    return pa.array(mask)


def _common(key: pa.Array, target: pa.DataType) -> pa.Array:
    """A data key in the delete file's type (the delete was written later, with the wider type)."""
    try:
        return key.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise CorruptDeleteFile(f"Cannot compare a {key.type} column with equality deletes of {target}") from exc


def _filler(typ: pa.DataType) -> pa.Scalar:
    """Any non-null value of the type, to stand in for nulls (the validity column tells them apart)."""
    if pa.types.is_boolean(typ):
        return pa.scalar(False)
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return pa.scalar("", typ)
    if pa.types.is_fixed_size_binary(typ):
        return pa.scalar(b"\0" * typ.byte_width, typ)
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        return pa.scalar(b"", typ)
    if pa.types.is_decimal(typ):
        return pa.scalar(Decimal(0), typ)
    if pa.types.is_date32(typ) or pa.types.is_time32(typ):
        return pa.scalar(0, pa.int32()).cast(typ)
    return pa.scalar(0, pa.int64()).cast(typ)  # integers, floats, timestamps, time64, date64

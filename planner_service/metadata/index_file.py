"""Decoded manifests on disk: segments of FileIndexes as uncompressed Arrow IPC, read back memory-mapped, so that a
process that did not decode the manifests plans from the pages of the file (the system's page cache, shared by
every process that maps it, and reclaimed when cold) instead of its own memory.

A segment holds the indexes of the manifests decoded together (up to a decode chunk's, one schema), one after
another, each a slot; the fixed costs of a file (its mapping, its MAC, the Arrow footer, the conversion to
polars) are paid once per segment, not per manifest. Two kinds, because plans without a filter never read
column statistics:

    core    the indexes' columns but the statistics, each row's partition and directory ids (int32, within its
            slot), and per slot its manifest, rows, interned partitions, directories and null-free proof (JSON)
    stats   the five statistics columns, and per slot its manifest and rows

Beside them, a manifest list decoded (kind `list`: its records as JSON, no columns), so that a restarted process
reads no metadata file of a snapshot it planned before but the table's metadata.

A file is `<Arrow IPC file><JSON><u64 JSON length><32-byte MAC><magic>`. The MAC is a keyed BLAKE3 of
everything before it (four times HMAC-SHA-256's speed here, and without the GIL: a restarted process
checks every byte it maps); it is checked before a byte of the file is parsed, and each slot names the manifest it
holds (the reader's key), checked against the one looked for: a torn, truncated, flipped, planted or renamed
file is refused (InvalidIndexFile), never trusted. Partition values are written with their type (int, float
by its bits, bool, str, bytes, Decimal with its scale, UUID), so a value read back is the value decoded.
"""

from __future__ import annotations

import hmac
import itertools
import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import blake3
import numpy as np
import orjson
import polars as pl
import pyarrow as pa

from planner_service.metadata.file_index import STATS_COLUMNS, FileIndex, Int32Array, Partition
from planner_service.metadata.manifest_list import FieldSummary, ManifestFile

FORMAT = 4  # in the tier's file names and each file's JSON: a new layout never reads an old file
MAGIC = b"SPIDX\x00\x00\x04"
_TRAILER = struct.Struct("<Q32s8s")  # JSON length, MAC, magic
_PARTITION_ID, _DIRECTORY_ID = "__partition_id", "__directory_id"
CORE, STATS, LIST = "core", "stats", "list"
MAC_THREADS_BYTES = 64 * 1024**2  # a bigger file's MAC is computed on every core (an assembly, a field's file)


class InvalidIndexFile(ValueError):
    """A file that is not an index file this service wrote (its MAC, its layout, or the manifest of a slot does
    not match): decode the manifest again."""


# -- writing ------------------------------------------------------------------------------------------------


def core_segments(parts: Sequence[tuple[str, FileIndex]], key: bytes) -> list[tuple[bytes, list[str]]]:
    """The core segments of single manifests' indexes (by the reader's key): one per schema of their columns,
    each with its manifests in slot order."""
    tables, slots = [], []
    for manifest, index in parts:
        if index.part_starts is not None:
            raise ValueError("only single manifests' indexes are written to disk")
        used, directory_id = np.unique(index.directory_id, return_inverse=True)
        columns = [c for c in index.frame.columns if c not in STATS_COLUMNS]
        table = index.frame.select(columns).to_arrow()
        table = table.append_column(_PARTITION_ID, pa.array(index.partition_id.astype(np.int32, copy=False)))
        tables.append(table.append_column(_DIRECTORY_ID, pa.array(directory_id.reshape(-1).astype(np.int32))))
        slots.append(
            {
                "manifest": manifest,
                "rows": len(index),
                "columns": list(index.frame.columns),
                # (JSON in JSON: parsed when the slot's index is made, not when the segment is opened, which
                # an assembly of the segment does without them)
                "details": orjson.dumps(
                    {
                        "partitions": [[s, [tagged(v) for v in values]] for s, values in index.partitions],
                        "directories": [index.directories[i] for i in used.tolist()],
                        "null-free": None if index.null_free is None else sorted(index.null_free),
                    }
                ).decode(),
            }
        )
    return _sealed_by_schema(CORE, tables, slots, key)


def stats_segments(parts: Sequence[tuple[str, pl.DataFrame]], key: bytes) -> list[tuple[bytes, list[str]]]:
    """The statistics segments of single manifests' STATS_COLUMNS (by the reader's key), as core_segments."""
    tables = [stats.select(STATS_COLUMNS).to_arrow() for _, stats in parts]
    slots = [{"manifest": manifest, "rows": stats.height} for manifest, stats in parts]
    return _sealed_by_schema(STATS, tables, slots, key)


def _sealed_by_schema(
    kind: str, tables: list[pa.Table], slots: list[dict[str, Any]], key: bytes
) -> list[tuple[bytes, list[str]]]:
    return [
        (
            _sealed(kind, [tables[i] for i in group], [slots[i] for i in group], key),
            [slots[i]["manifest"] for i in group],
        )
        for group in _by_schema(tables)
    ]


def _sealed(kind: str, tables: list[pa.Table], slots: list[dict[str, Any]], key: bytes) -> bytes:
    return sealed(kind, pa.concat_tables(tables), {"slots": slots}, key)


def sealed(kind: str, table: pa.Table, meta: dict[str, Any], key: bytes) -> bytes:
    """An index file of `kind`: `table` as one record batch (read back, one chunk a column), `meta` as its JSON,
    under a MAC with `key`."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table.combine_chunks())
    ipc = sink.getvalue()
    text = orjson.dumps({"format": FORMAT, "kind": kind, **meta})
    length = struct.pack("<Q", len(text))
    digest = _mac(key)
    for part in (ipc, text, length):
        digest.update(part)
    return b"".join((ipc.to_pybytes(), text, length, digest.digest(), MAGIC))


_LIST_INTS = (
    ("manifest_length", pa.int64()),
    ("partition_spec_id", pa.int32()),
    ("content", pa.int32()),
    ("sequence_number", pa.int64()),
    ("min_sequence_number", pa.int64()),
    ("added_snapshot_id", pa.int64()),
    ("added_files_count", pa.int32()),
    ("existing_files_count", pa.int32()),
    ("deleted_files_count", pa.int32()),
    ("added_rows_count", pa.int64()),
    ("existing_rows_count", pa.int64()),
    ("deleted_rows_count", pa.int64()),
)
_SUMMARY = pa.struct(
    [
        ("contains_null", pa.bool_()),
        ("contains_nan", pa.bool_()),
        ("lower_bound", pa.binary()),
        ("upper_bound", pa.binary()),
    ]
)


def list_file(location: str, manifests: Sequence[ManifestFile], key: bytes) -> bytes:
    """The manifest list at `location`, decoded into `manifests`, as an index file: a column a field."""
    columns: dict[str, pa.Array] = {"manifest_path": pa.array([m.manifest_path for m in manifests], pa.string())}
    for name, typ in _LIST_INTS:
        columns[name] = pa.array([getattr(m, name) for m in manifests], typ)
    summaries = [
        None
        if m.partitions is None
        else [(p.contains_null, p.contains_nan, p.lower_bound, p.upper_bound) for p in m.partitions]
        for m in manifests
    ]
    columns["partitions"] = pa.array(
        [None if s is None else [dict(zip(_SUMMARY.names, p, strict=True)) for p in s] for s in summaries],
        pa.list_(_SUMMARY),
    )
    columns["key_metadata"] = pa.array([m.key_metadata for m in manifests], pa.binary())
    columns["first_row_id"] = pa.array([m.first_row_id for m in manifests], pa.int64())
    return sealed(LIST, pa.table(columns), {"location": location}, key)


def open_list(data: pa.Buffer, location: str, key: bytes) -> list[ManifestFile]:
    """The manifests of the list at `location` from its index file; InvalidIndexFile unless it is one written with
    `key` for that list."""
    table, meta = unsealed(data, LIST, key)
    if meta.get("location") != location:
        raise InvalidIndexFile("a manifest list's file for another list")
    try:
        fields = [table.column("manifest_path").to_pylist()]
        fields += [table.column(name).to_pylist() for name, _ in _LIST_INTS]
        lists = table.column("partitions").combine_chunks()
        flat = lists.values
        every = [
            FieldSummary(*summary)
            for summary in zip(*(flat.field(name).to_pylist() for name in _SUMMARY.names), strict=True)
        ]
        offsets, present = lists.offsets.to_pylist(), lists.is_valid().to_pylist()
        partitions = [tuple(every[offsets[i] : offsets[i + 1]]) if present[i] else None for i in range(len(present))]
        keys, first_row_ids = table.column("key_metadata").to_pylist(), table.column("first_row_id").to_pylist()
        # (positional, in ManifestFile's field order)
        return list(itertools.starmap(ManifestFile, zip(*fields, partitions, keys, first_row_ids, strict=True)))
    except (KeyError, TypeError, ValueError, IndexError, pa.ArrowException) as exc:
        raise InvalidIndexFile(f"a manifest list's file that does not read: {exc}") from None


# -- reading ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """A segment opened and checked: its columns as one polars frame over the file's pages, and its slots."""

    kind: str
    frame: pl.DataFrame  # a core segment's: in its slots' column order
    slots: list[dict[str, Any]]
    starts: list[int]  # each slot's first row
    partition_ids: Int32Array | None = None  # a core segment's (within each slot), over the file's pages
    directory_ids: Int32Array | None = None

    def slot(self, number: int, manifest: str) -> tuple[dict[str, Any], int, int]:
        """(slot `number`, its first row, its rows) once it is found to hold `manifest`."""
        if not 0 <= number < len(self.slots) or self.slots[number].get("manifest") != manifest:
            raise InvalidIndexFile("a segment whose slot holds another manifest")
        return self.slots[number], self.starts[number], self.slots[number]["rows"]

    def index(self, number: int, manifest: str) -> FileIndex:
        """The index of `manifest`, in slot `number` of a core segment."""
        slot, start, rows = self.slot(number, manifest)
        assert self.partition_ids is not None and self.directory_ids is not None
        partition_id = self.partition_ids[start : start + rows]
        directory_id = self.directory_ids[start : start + rows]
        frame = self.frame.slice(start, rows)
        try:
            if slot["columns"] != self.frame.columns:
                raise InvalidIndexFile("a segment whose slots' columns differ")
            details = orjson.loads(slot["details"])
            partitions = untagged_partitions(details["partitions"])
            directories = tuple(details["directories"])
        except (pl.exceptions.ColumnNotFoundError, KeyError, TypeError, ValueError) as exc:
            raise InvalidIndexFile(f"a segment whose slot does not read: {exc}") from None
        null_free = details.get("null-free")
        return FileIndex(
            frame,
            partitions,
            partition_id,
            directories,
            directory_id,
            has_stats=False,
            null_free=None if null_free is None else frozenset(null_free),
            mapped=True,
        )

    def stats(self, number: int, manifest: str, rows: int) -> pl.DataFrame:
        """The statistics of `manifest` (an index of `rows` rows), in slot `number` of a stats segment."""
        _, start, held = self.slot(number, manifest)
        if held != rows:
            raise InvalidIndexFile(f"statistics of {held} rows for an index of {rows}")
        return self.frame.slice(start, rows)


def open_segment(data: pa.Buffer, kind: str, key: bytes) -> Segment:
    """A segment's contents over `data` (nothing copied); InvalidIndexFile unless it is a segment of `kind`
    written with `key`."""
    table, meta = unsealed(data, kind, key)
    try:
        slots = meta["slots"]
        rows = [int(slot["rows"]) for slot in slots]
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidIndexFile(f"a segment whose slots do not read: {exc}") from None
    if table.num_rows != sum(rows):
        raise InvalidIndexFile(f"an index file of {table.num_rows} rows whose slots say {sum(rows)}")
    ids: list[Int32Array | None] = [None, None]
    if kind == CORE:
        try:
            ids = [int32s(table.column(_PARTITION_ID)), int32s(table.column(_DIRECTORY_ID))]
            table = table.drop_columns([_PARTITION_ID, _DIRECTORY_ID])
            for name in STATS_COLUMNS:  # (not decoded: all null, of the Null type, which holds no memory)
                table = table.append_column(name, pa.nulls(table.num_rows))
            table = table.select(slots[0]["columns"]) if slots else table
        except (KeyError, TypeError, pa.ArrowException) as exc:
            raise InvalidIndexFile(f"a segment without its columns: {exc}") from None
    frame = pl.from_arrow(table, rechunk=False)
    assert isinstance(frame, pl.DataFrame)
    return Segment(kind, frame, slots, np.cumsum([0, *rows[:-1]]).tolist(), *ids)


def unsealed(data: pa.Buffer, kind: str, key: bytes) -> tuple[pa.Table, dict[str, Any]]:
    """(the table, the JSON) of an index file of `kind` over `data` (nothing copied), once its MAC under `key` is
    found right: InvalidIndexFile otherwise, before a byte of it is parsed."""
    size = data.size
    if size < _TRAILER.size:
        raise InvalidIndexFile(f"an index file of {size} bytes: cut short")
    view = memoryview(data)
    text_size, mac, magic = _TRAILER.unpack_from(view, size - _TRAILER.size)
    if magic != MAGIC:
        raise InvalidIndexFile("not an index file of this format (its last bytes)")
    digest = _mac(key, size)
    digest.update(view[: size - _TRAILER.size + 8])  # everything but the MAC and the magic
    if not hmac.compare_digest(digest.digest(), mac):
        raise InvalidIndexFile("an index file whose MAC does not match: torn, changed or not written here")
    ipc_size = size - _TRAILER.size - text_size
    if ipc_size < 0:
        raise InvalidIndexFile("an index file whose JSON length points before its start")
    try:  # (a file this service sealed: what fails below is a bug, never an attack)
        meta = orjson.loads(view[ipc_size : ipc_size + text_size])
        if meta.get("format") != FORMAT or meta.get("kind") != kind:
            raise InvalidIndexFile(f"an index file of format {meta.get('format')}, {meta.get('kind')}")
        table = pa.ipc.open_file(data.slice(0, ipc_size)).read_all()
    except (ValueError, KeyError, TypeError, pa.ArrowException) as exc:
        raise InvalidIndexFile(f"an index file that does not read: {exc}") from None
    return table, meta


def _by_schema(tables: Sequence[pa.Table]) -> list[list[int]]:
    """The positions of the tables grouped by schema (a few groups: Schema.equals, no hash of each)."""
    groups: list[tuple[pa.Schema, list[int]]] = []
    for i, table in enumerate(tables):
        group = next((members for schema, members in groups if schema.equals(table.schema)), None)
        if group is None:
            groups.append((table.schema, [i]))
        else:
            group.append(i)
    return [members for _, members in groups]


def _mac(key: bytes, size: int = 0) -> Any:
    """BLAKE3 keyed with `key` (32 bytes: the tier's, derived from the signing key), in the context of these
    files; hashed without the GIL, on every core for a file of `size` over MAC_THREADS_BYTES."""
    digest = blake3.blake3(key=key, max_threads=blake3.blake3.AUTO if size > MAC_THREADS_BYTES else 1)
    digest.update(b"scan-planner index file")
    return digest


def int32s(column: pa.ChunkedArray) -> Int32Array:
    """An int32 column without nulls as numpy: over the file's pages when it is one chunk (as written: one record
    batch)."""
    if column.type != pa.int32() or column.null_count:
        raise InvalidIndexFile("a segment whose partition or directory ids are not int32s")
    values: Int32Array = numbers(column, np.int32)
    return values


def numbers(column: pa.ChunkedArray, dtype: Any) -> Any:
    """A fixed-width column without nulls as a numpy array of `dtype` (its width) over the file's pages when it
    is one chunk (as written: one record batch); without pyarrow's conversions (which import pandas)."""
    if column.num_chunks != 1:
        column = pa.chunked_array([column.combine_chunks()], column.type)
    chunk = column.chunk(0)
    width = np.dtype(dtype).itemsize
    if chunk.null_count or chunk.type.bit_width != 8 * width:
        raise InvalidIndexFile(f"a column of {chunk.type} where {np.dtype(dtype)} was written")
    if not len(chunk):
        return np.zeros(0, dtype)
    return np.frombuffer(chunk.buffers()[1], dtype, len(chunk), chunk.offset * width)


# -- partition values with their types ---------------------------------------------------------------


def tagged(value: Any) -> Any:
    """A partition value as JSON that says its type: null, bool, int, str as themselves, others [tag, text]."""
    if value is None or isinstance(value, int | str):  # (bool is an int)
        return value
    if isinstance(value, float):
        return ["float", struct.pack("<d", value).hex()]  # by its bits: -0.0 and NaN as they are
    if isinstance(value, bytes | bytearray | memoryview):
        return ["bytes", bytes(value).hex()]
    if isinstance(value, Decimal):
        return ["decimal", str(value)]  # (its scale too: 1.50 stays 1.50)
    if isinstance(value, uuid.UUID):
        return ["uuid", str(value)]
    raise TypeError(f"a partition value of type {type(value).__name__} has no form on disk")


def untagged_partitions(written: Any) -> tuple[Partition, ...]:
    """Interned partitions from their JSON ([spec id, values] each, values `tagged`): as they are when no value
    is tagged (the common case, checked over all of them at once), else value by value."""
    if not isinstance(written, list):
        raise InvalidIndexFile(f"an index file with partitions {written!r:.40}")
    kinds = {type(v) for _, values in written for v in values}  # (ValueError, TypeError: not pairs of lists)
    if kinds <= {type(None), bool, int, str}:
        return tuple((int(spec_id), tuple(values)) for spec_id, values in written)
    return tuple((int(spec_id), tuple(untagged(v) for v in values)) for spec_id, values in written)


def untagged_column(column: Any) -> list[Any]:
    """A column of `tagged` values as they were: as it is when none is tagged."""
    if not isinstance(column, list):
        raise InvalidIndexFile(f"an index file with a column of values {column!r:.40}")
    if {type(v) for v in column} <= {type(None), bool, int, str}:
        return column
    return [untagged(v) for v in column]


def untagged(value: Any) -> Any:
    if value is None or isinstance(value, int | str):
        return value
    if not (isinstance(value, list) and len(value) == 2):
        raise InvalidIndexFile(f"an index file with a partition value {value!r:.40}")
    tag, text = value
    if tag == "bool" and isinstance(text, bool):
        return text
    if tag == "float":
        return struct.unpack("<d", bytes.fromhex(text))[0]
    if tag == "str":
        return str(text)
    if tag == "bytes":
        return bytes.fromhex(text)
    if tag == "decimal":
        return Decimal(text)
    if tag == "uuid":
        return uuid.UUID(text)
    raise InvalidIndexFile(f"an index file with a partition value tagged {tag!r:.40}")

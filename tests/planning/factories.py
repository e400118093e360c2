"""Small Iceberg tables held in memory, for planner tests that look at what planning reads.

`MemoryIO` is a FileIO over a dict of files that counts the reads of each location. `TableWriter` writes
v2 manifests and manifest lists with fastavro (Avro schemas with the spec's field ids) into it, and
gives the table's metadata: one schema (id long, data string), one snapshot per `snapshot()` call;
unpartitioned and unsorted unless asked for an identity partition on a column (`partition_by`) or a sort
order on `id` (`sort_order`). Data files are never read by planning, so none exist.
"""

from __future__ import annotations

import io
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

import fastavro

from planner_service.catalog.base import LoadedTable
from planner_service.io.fileio import FileIO, FileNotFound
from planner_service.metadata.table_metadata import table_metadata_from_json

DATA_MANIFEST, DELETE_MANIFEST = 0, 1  # the spec's manifest content codes
DATA_FILE, POSITION_DELETES = 0, 1  # the spec's data_file content codes
ADDED = 1


class MemoryIO(FileIO):
    """Files by location, in memory; `reads[location]` counts the reads of each."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, bytes] = {}
        self.reads: Counter[str] = Counter()
        self._lock = threading.Lock()

    def read_once(self, location: str, length: int | None = None) -> bytes:
        with self._lock:
            self.reads[location] += 1
        if location not in self.files:
            raise FileNotFound(f"File not found: {location}")
        return self.files[location]

    def reads_of(self, locations: list[str]) -> list[int]:
        return [self.reads[location] for location in locations]


def map_type(name: str, key_id: int, value_id: int, value: Any) -> list[Any]:
    """An optional Iceberg map of int keys as Avro writes it: an array of key/value records."""
    item = {
        "type": "record",
        "name": name,
        "fields": [
            {"name": "key", "type": "int", "field-id": key_id},
            {"name": "value", "type": value, "field-id": value_id},
        ],
    }
    return ["null", {"type": "array", "items": item, "logicalType": "map"}]


def _data_file_schema(partition: list[dict[str, Any]], split_offsets: bool) -> dict[str, Any]:
    """data_file with the partition record's fields `partition` and, when asked, split offsets."""
    fields: list[dict[str, Any]] = [
        {"name": "content", "type": "int", "field-id": 134},
        {"name": "file_path", "type": "string", "field-id": 100},
        {"name": "file_format", "type": "string", "field-id": 101},
        {"name": "partition", "type": {"type": "record", "name": "r102", "fields": partition}, "field-id": 102},
        {"name": "record_count", "type": "long", "field-id": 103},
        {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
        {"name": "value_counts", "type": map_type("k117_v118", 119, 120, "long"), "default": None, "field-id": 109},
        {
            "name": "null_value_counts",
            "type": map_type("k121_v122", 121, 122, "long"),
            "default": None,
            "field-id": 110,
        },
        {"name": "lower_bounds", "type": map_type("k126_v127", 126, 127, "bytes"), "default": None, "field-id": 125},
        {"name": "upper_bounds", "type": map_type("k129_v130", 129, 130, "bytes"), "default": None, "field-id": 128},
    ]
    if split_offsets:
        offsets = {"type": "array", "items": "long", "element-id": 133}
        fields.append({"name": "split_offsets", "type": ["null", offsets], "default": None, "field-id": 132})
    return {"type": "record", "name": "r2", "fields": fields}


def _manifest_entry_schema(data_file: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            {"name": "status", "type": "int", "field-id": 0},
            {"name": "snapshot_id", "type": ["null", "long"], "default": None, "field-id": 1},
            {"name": "sequence_number", "type": ["null", "long"], "default": None, "field-id": 3},
            {"name": "file_sequence_number", "type": ["null", "long"], "default": None, "field-id": 4},
            {"name": "data_file", "type": data_file, "field-id": 2},
        ],
    }


DATA_FILE_SCHEMA = _data_file_schema([], split_offsets=False)
MANIFEST_ENTRY_SCHEMA = _manifest_entry_schema(DATA_FILE_SCHEMA)
MANIFEST_FILE_SCHEMA = {
    "type": "record",
    "name": "manifest_file",
    "fields": [
        {"name": "manifest_path", "type": "string", "field-id": 500},
        {"name": "manifest_length", "type": "long", "field-id": 501},
        {"name": "partition_spec_id", "type": "int", "field-id": 502},
        {"name": "content", "type": "int", "field-id": 517},
        {"name": "sequence_number", "type": "long", "field-id": 515},
        {"name": "min_sequence_number", "type": "long", "field-id": 516},
        {"name": "added_snapshot_id", "type": "long", "field-id": 503},
        {"name": "added_files_count", "type": "int", "field-id": 504},
        {"name": "existing_files_count", "type": "int", "field-id": 505},
        {"name": "deleted_files_count", "type": "int", "field-id": 506},
        {"name": "added_rows_count", "type": "long", "field-id": 512},
        {"name": "existing_rows_count", "type": "long", "field-id": 513},
        {"name": "deleted_rows_count", "type": "long", "field-id": 514},
    ],
}


def _schema_json(id_required: bool) -> dict[str, Any]:
    return {
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "required": id_required, "type": "long"},
            {"id": 2, "name": "data", "required": False, "type": "string"},
        ],
    }


SCHEMA_JSON = _schema_json(id_required=True)
COLUMN_IDS = {"id": 1, "data": 2}
AVRO_TYPES = {"id": "long", "data": "string"}  # of each column's values in a partition record
PARTITION_FIELD_ID = 1000
SORT_ORDER_ID = 1
Direction = Literal["asc", "desc"]
NullOrder = Literal["nulls-first", "nulls-last"]


def _avro(schema: dict[str, Any], records: list[dict[str, Any]]) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records)
    return out.getvalue()


@dataclass(frozen=True)
class FileEntry:
    """A live entry of a manifest: a data file or a position delete file, with stats for column `id`."""

    path: str
    content: int = DATA_FILE
    record_count: int = 10
    id_range: tuple[int, int] | None = None  # lower and upper bound of column id (field 1)
    id_nulls: int | None = 0  # the null count of column id (None: not recorded)
    partition: tuple[Any, ...] = ()  # the values of the table's partition fields (`TableWriter.partition_by`)
    file_size: int = 1000
    split_offsets: tuple[int, ...] | None = None


@dataclass
class TableWriter:
    io: MemoryIO
    location: str = "s3://bucket/wh/db/events"
    partition_by: str | None = None  # a column (id or data) that spec 0 partitions by identity; None: unpartitioned
    sort_order: tuple[Direction, NullOrder] | None = None  # the default sort order, on id; None: unsorted
    id_required: bool = True
    _manifests: dict[str, dict[str, Any]] = field(default_factory=dict)
    _snapshots: list[dict[str, Any]] = field(default_factory=list)

    def manifest(
        self, path: str, entries: list[FileEntry], content: int = DATA_MANIFEST, seq: int = 1, snapshot_id: int = 1
    ) -> str:
        """Write a manifest of ADDED entries (their sequence numbers inherited from the manifest's)."""
        records = [
            {
                "status": ADDED,
                "snapshot_id": None,
                "sequence_number": None,
                "file_sequence_number": None,
                "data_file": _data_file(e, [f["name"] for f in self._partition_fields()]),
            }
            for e in entries
        ]
        partition = [
            {"name": f["name"], "type": ["null", AVRO_TYPES[f["name"]]], "default": None, "field-id": f["field-id"]}
            for f in self._partition_fields()
        ]
        split_offsets = any(e.split_offsets is not None for e in entries)
        schema = _manifest_entry_schema(_data_file_schema(partition, split_offsets))
        data = _avro(schema, records)
        self.io.files[path] = data
        self._manifests[path] = {
            "manifest_path": path,
            "manifest_length": len(data),
            "partition_spec_id": 0,
            "content": content,
            "sequence_number": seq,
            "min_sequence_number": seq,
            "added_snapshot_id": snapshot_id,
            "added_files_count": len(entries),
            "existing_files_count": 0,
            "deleted_files_count": 0,
            "added_rows_count": sum(e.record_count for e in entries),
            "existing_rows_count": 0,
            "deleted_rows_count": 0,
        }
        return path

    def empty_manifest(self, path: str, seq: int = 1, snapshot_id: int = 1) -> str:
        """A manifest whose entries are all deleted: no added or existing files (Java skips it unread)."""
        self.manifest(path, [], seq=seq, snapshot_id=snapshot_id)
        self._manifests[path]["deleted_files_count"] = 1
        return path

    def snapshot(self, snapshot_id: int, manifests: list[str], seq: int | None = None) -> str:
        """A snapshot listing `manifests` (in that order); returns its manifest list's location."""
        seq = seq if seq is not None else len(self._snapshots) + 1
        location = f"{self.location}/metadata/snap-{snapshot_id}.avro"
        self.io.files[location] = _avro(MANIFEST_FILE_SCHEMA, [self._manifests[m] for m in manifests])
        self._snapshots.append(
            {
                "snapshot-id": snapshot_id,
                "sequence-number": seq,
                "timestamp-ms": 1_700_000_000_000 + seq,
                "manifest-list": location,
                "summary": {"operation": "append"},
                "schema-id": 0,
            }
        )
        return location

    def _partition_fields(self) -> list[dict[str, Any]]:
        if self.partition_by is None:
            return []
        column = self.partition_by
        identity = {"source-id": COLUMN_IDS[column], "field-id": PARTITION_FIELD_ID, "name": column}
        return [{**identity, "transform": "identity"}]

    def _sort_orders(self) -> list[dict[str, Any]]:
        unsorted: dict[str, Any] = {"order-id": 0, "fields": []}
        if self.sort_order is None:
            return [unsorted]
        direction, null_order = self.sort_order
        on_id = {"transform": "identity", "source-id": 1, "direction": direction, "null-order": null_order}
        return [unsorted, {"order-id": SORT_ORDER_ID, "fields": [on_id]}]

    def table(self) -> LoadedTable:
        current = self._snapshots[-1]
        metadata = {
            "format-version": 2,
            "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
            "location": self.location,
            "last-sequence-number": max(s["sequence-number"] for s in self._snapshots),
            "last-updated-ms": 0,
            "last-column-id": 2,
            "current-schema-id": 0,
            "schemas": [_schema_json(self.id_required)],
            "default-spec-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": self._partition_fields()}],
            "last-partition-id": PARTITION_FIELD_ID if self.partition_by is not None else 999,
            "default-sort-order-id": 0 if self.sort_order is None else SORT_ORDER_ID,
            "sort-orders": self._sort_orders(),
            "properties": {},
            "current-snapshot-id": current["snapshot-id"],
            "snapshots": self._snapshots,
            "snapshot-log": [],
        }
        location = f"{self.location}/metadata/v{len(self._snapshots)}.metadata.json"
        return LoadedTable(location, location, table_metadata_from_json(metadata, location))


def _data_file(e: FileEntry, partition_names: list[str]) -> dict[str, Any]:
    bounds: tuple[Any, Any] = (None, None)
    if e.id_range is not None:
        lower, upper = (v.to_bytes(8, "little", signed=True) for v in e.id_range)
        bounds = ([{"key": 1, "value": lower}], [{"key": 1, "value": upper}])
    return {
        "content": e.content,
        "file_path": e.path,
        "file_format": "PARQUET",
        "partition": dict(zip(partition_names, e.partition, strict=True)),
        "record_count": e.record_count,
        "file_size_in_bytes": e.file_size,
        "value_counts": [{"key": 1, "value": e.record_count}],
        "null_value_counts": None if e.id_nulls is None else [{"key": 1, "value": e.id_nulls}],
        "lower_bounds": bounds[0],
        "upper_bounds": bounds[1],
        "split_offsets": None if e.split_offsets is None else list(e.split_offsets),
    }

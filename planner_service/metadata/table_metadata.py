"""Table metadata (metadata.json, format v1/v2/v3) parsed into immutable objects (spec: "Table Metadata")."""

from __future__ import annotations

import gzip
import logging
from dataclasses import dataclass, field
from typing import Any

from planner_service.errors import CorruptMetadataError
from planner_service.json_text import parse_json, without_nulls
from planner_service.metadata.json_fields import (
    echo,
    get_array,
    get_int,
    get_int_or_none,
    get_long,
    get_long_or_none,
    get_object,
    get_string,
    get_string_map,
    get_string_or_none,
    quoting_values,
    require_object,
)
from planner_service.metadata.metadata_checks import check_table_metadata
from planner_service.metadata.partitioning import PartitionSpec, parse_partition_spec
from planner_service.metadata.sort_orders import SortOrder, parse_sort_order
from planner_service.metadata.types import Schema, parse_schema

log = logging.getLogger(__name__)

MAIN_BRANCH = "main"
MAX_FORMAT_VERSION = 3


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    parent_snapshot_id: int | None
    sequence_number: int
    timestamp_ms: int
    manifest_list: str | None
    summary: dict[str, str]
    schema_id: int | None
    first_row_id: int | None = None
    v1_manifests: tuple[str, ...] = ()  # v1 snapshots may list manifests instead of a manifest list

    def to_json(self) -> dict[str, Any]:
        return without_nulls(
            {
                "snapshot-id": self.snapshot_id,
                "sequence-number": self.sequence_number,
                "timestamp-ms": self.timestamp_ms,
                "summary": self.summary,
                "parent-snapshot-id": self.parent_snapshot_id,
                "manifest-list": self.manifest_list,
                "schema-id": self.schema_id,
            }
        )


@dataclass(frozen=True)
class SnapshotRef:
    name: str
    snapshot_id: int
    type: str  # "branch" | "tag"
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        return without_nulls(
            {
                "snapshot-id": self.snapshot_id,
                "type": self.type,
                "min-snapshots-to-keep": self.min_snapshots_to_keep,
                "max-snapshot-age-ms": self.max_snapshot_age_ms,
                "max-ref-age-ms": self.max_ref_age_ms,
            }
        )

    def java_string(self) -> str:
        """Java's SnapshotRef.toString, for messages that read like Iceberg's."""

        def text(value: int | None) -> str:
            return "null" if value is None else str(value)

        return (
            f"SnapshotRef{{snapshotId={self.snapshot_id}, type={self.type.upper()}, "
            f"minSnapshotsToKeep={text(self.min_snapshots_to_keep)}, "
            f"maxSnapshotAgeMs={text(self.max_snapshot_age_ms)}, "
            f"maxRefAgeMs={text(self.max_ref_age_ms)}}}"
        )


@dataclass(frozen=True)
class SnapshotLogEntry:
    timestamp_ms: int
    snapshot_id: int


@dataclass(frozen=True)
class TableMetadata:
    format_version: int
    table_uuid: str | None
    location: str
    last_sequence_number: int
    last_updated_ms: int
    current_schema_id: int
    schemas: dict[int, Schema]
    default_spec_id: int
    specs: dict[int, PartitionSpec]
    properties: dict[str, str]
    current_snapshot_id: int | None
    snapshots: dict[int, Snapshot]
    snapshot_log: tuple[SnapshotLogEntry, ...]
    refs: dict[str, SnapshotRef]
    default_sort_order_id: int
    sort_orders: tuple[SortOrder, ...] = ()
    metadata_log: tuple[tuple[int, str], ...] = ()  # (timestamp-ms, metadata-file)
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def schema(self) -> Schema:
        return self.schemas[self.current_schema_id]

    @property
    def current_snapshot(self) -> Snapshot | None:
        return self.snapshots.get(self.current_snapshot_id) if self.current_snapshot_id is not None else None


def parse_table_metadata(data: bytes, location: str = "<memory>") -> TableMetadata:
    """Parse metadata.json bytes (gzip-compressed too, as `.gz.metadata.json` / `.metadata.json.gz`)."""
    try:
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        obj = parse_json(data)
    except (OSError, ValueError) as exc:
        raise CorruptMetadataError(f"Cannot parse table metadata {location}: {exc}") from None
    return table_metadata_from_json(obj, location)


def table_metadata_from_json(obj: Any, location: str = "<memory>") -> TableMetadata:
    """Table metadata from its parsed JSON (a REST catalog's LoadTable gives it so), checked as Iceberg Java's
    TableMetadataParser and TableMetadata check it, with Java's messages after the file's location."""
    try:
        metadata = _from_json(require_object(obj, "Cannot parse metadata from a non-object"))
        check_table_metadata(metadata)
    except CorruptMetadataError as exc:
        raise CorruptMetadataError(f"Invalid table metadata {location}: {exc.message}") from None
    return metadata


def _from_json(obj: dict[str, Any]) -> TableMetadata:
    version = get_int("format-version", obj)
    if not 1 <= version <= MAX_FORMAT_VERSION:
        raise CorruptMetadataError(f"Cannot read unsupported version {version}")
    table_uuid = get_string_or_none("table-uuid", obj)
    location = get_string("location", obj)
    if not location:
        raise CorruptMetadataError("path must not be null or empty")  # Java's message, for the table location
    with quoting_values():  # it is table metadata: messages may quote its values, as Java's do
        return _parse_fields(obj, version, table_uuid, location)


def _parse_fields(obj: dict[str, Any], version: int, table_uuid: str | None, location: str) -> TableMetadata:
    last_sequence_number = get_long("last-sequence-number", obj) if version > 1 else 0
    get_int("last-column-id", obj)

    if "schemas" in obj:
        schema_list = [parse_schema(s) for s in get_array("schemas", obj, "schemas")]
        current_schema_id = get_int("current-schema-id", obj)
        if not any(s.schema_id == current_schema_id for s in schema_list):
            raise CorruptMetadataError(f"Cannot find schema with current-schema-id={current_schema_id} from schemas")
        schemas = {s.schema_id: s for s in schema_list}
    else:
        _v1_only("schemas", version)
        schema_list = [parse_schema(obj.get("schema"))]
        schemas, current_schema_id = {schema_list[0].schema_id: schema_list[0]}, schema_list[0].schema_id

    if "partition-specs" in obj:
        spec_list = [
            parse_partition_spec(require_object(s, "Cannot parse spec from non-object"))
            for s in get_array("partition-specs", obj, "partition specs")
        ]
        specs = {p.spec_id: p for p in spec_list}
        default_spec_id = get_int("default-spec-id", obj)
    else:  # v1 with a single spec, as a list of fields
        _v1_only("partition-specs", version)
        spec_list = [parse_partition_spec(get_array("partition-spec", obj), 0)]
        specs, default_spec_id = {0: spec_list[0]}, 0
    if version > 1 and get_int_or_none("last-partition-id", obj) is None:
        _v1_only("last-partition-id", version)

    if "sort-orders" in obj:
        orders = get_array("sort-orders", obj, "sort orders")
        sort_orders = tuple(parse_sort_order(o) for o in orders)
        default_sort_order_id = get_int("default-sort-order-id", obj)
    else:
        _v1_only("sort-orders", version)
        sort_orders, default_sort_order_id = (), 0

    properties = get_string_map("properties", obj)
    current = get_long_or_none("current-snapshot-id", obj)
    current = None if current == -1 else current
    last_updated_ms = get_long("last-updated-ms", obj)
    refs = {name: _ref(name, r) for name, r in get_object("refs", obj, "refs").items()} if "refs" in obj else {}
    if current is not None and MAIN_BRANCH not in refs:
        refs[MAIN_BRANCH] = SnapshotRef(MAIN_BRANCH, current, "branch")
    snapshot_list = [_snapshot(s) for s in get_array("snapshots", obj, "snapshots")] if "snapshots" in obj else []
    snapshot_log = tuple(
        SnapshotLogEntry(get_long("timestamp-ms", e), get_long("snapshot-id", e))
        for e in _objects("snapshot-log", obj, "snapshot log entry")
    )
    metadata_log = tuple(
        (get_long("timestamp-ms", e), get_string("metadata-file", e))
        for e in _objects("metadata-log", obj, "metadata log entry")
    )
    if version >= 3:
        get_long("next-row-id", obj)
    _check_statistics(obj)
    for what, ids in (
        ("schemas", [s.schema_id for s in schema_list]),
        ("partition specs", [s.spec_id for s in spec_list]),
        ("sort orders", [o.order_id for o in sort_orders]),
        ("snapshots", [s.snapshot_id for s in snapshot_list]),
    ):
        _check_unique(what, ids)

    return TableMetadata(
        format_version=version,
        table_uuid=table_uuid,
        location=location,
        last_sequence_number=last_sequence_number,
        last_updated_ms=last_updated_ms,
        current_schema_id=current_schema_id,
        schemas=schemas,
        default_spec_id=default_spec_id,
        specs=specs,
        properties=properties,
        current_snapshot_id=current,
        snapshots={s.snapshot_id: s for s in snapshot_list},
        snapshot_log=snapshot_log,
        refs=refs,
        default_sort_order_id=default_sort_order_id,
        sort_orders=sort_orders,
        metadata_log=metadata_log,
        raw=obj,
    )


def _check_unique(what: str, ids: list[int]) -> None:
    """Java indexes these by id in an ImmutableMap, which refuses a duplicate key."""
    seen: set[int] = set()
    for i in ids:
        if i in seen:
            raise CorruptMetadataError(f"Multiple entries with same key: {what} with id {i}")
        seen.add(i)


def _check_statistics(obj: dict[str, Any]) -> None:
    """Table and partition statistics files, read as Java's (Partition)StatisticsFileParser reads them,
    although planning does not use them: Java refuses the table without them."""
    for key, what in (("statistics", "statistics files"), ("partition-statistics", "partition statistics files")):
        if key not in obj:
            continue
        if not isinstance(obj[key], list):  # null too: Java reads the key when it is there
            raise CorruptMetadataError(f"Cannot parse {what} from non-array: {echo(obj[key])}")
        for entry in get_array(key, obj, what):
            node = require_object(entry, f"Cannot parse {what[:-1]} from non-object")
            get_long("snapshot-id", node)
            get_string("statistics-path", node)
            get_long("file-size-in-bytes", node)
            if key == "statistics":
                get_long("file-footer-size-in-bytes", node)
                for blob in get_array("blob-metadata", node):
                    blob_node = require_object(blob, "Cannot parse blob metadata from non-object")
                    get_string("type", blob_node)
                    get_long("snapshot-id", blob_node)
                    get_long("sequence-number", blob_node)


def _v1_only(key: str, version: int) -> None:
    if version > 1:
        raise CorruptMetadataError(f"{key} must exist in format v{version}")


def _objects(key: str, obj: dict[str, Any], what: str) -> list[dict[str, Any]]:
    """The objects of an optional array."""
    items = get_array(key, obj) if obj.get(key) is not None else []
    return [require_object(item, f"Cannot parse {what} from non-object") for item in items]


def _ref(name: str, obj: Any) -> SnapshotRef:
    node = require_object(obj, "Cannot parse snapshot ref from non-object")
    snapshot_id = get_long("snapshot-id", node)
    kind = get_string("type", node).lower()
    if kind not in ("branch", "tag"):
        raise CorruptMetadataError(f"Invalid snapshot ref type: {get_string('type', node)[:40]}")
    return SnapshotRef(
        name,
        snapshot_id,
        kind,
        get_int_or_none("min-snapshots-to-keep", node),
        get_long_or_none("max-snapshot-age-ms", node),
        get_long_or_none("max-ref-age-ms", node),
    )


def _snapshot(obj: Any) -> Snapshot:
    node = require_object(obj, "Cannot parse snapshot from non-object")
    snapshot_id = get_long("snapshot-id", node)
    parent = get_long_or_none("parent-snapshot-id", node)
    sequence_number = get_long_or_none("sequence-number", node)
    timestamp_ms = get_long("timestamp-ms", node)
    summary = get_string_map("summary", node)
    if "summary" in node and "operation" not in summary:
        raise CorruptMetadataError("Cannot parse missing string: operation")
    manifest_list = get_string_or_none("manifest-list", node)
    v1_manifests: tuple[str, ...] = ()
    if manifest_list is None:
        manifests = get_array("manifests", node)
        if not all(isinstance(m, str) for m in manifests):
            raise CorruptMetadataError(f"Cannot parse manifests from non-array of strings: {manifests!r:.100}")
        v1_manifests = tuple(manifests)
    return Snapshot(
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent,
        sequence_number=sequence_number or 0,
        timestamp_ms=timestamp_ms,
        manifest_list=manifest_list,
        summary=summary,
        schema_id=get_int_or_none("schema-id", node),
        first_row_id=get_long_or_none("first-row-id", node),
        v1_manifests=v1_manifests,
    )

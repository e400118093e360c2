"""Table metadata (metadata.json, format v1/v2/v3) parsed into immutable objects (spec: "Table Metadata")."""

from __future__ import annotations

import gzip
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from planner_service.errors import CorruptMetadataError
from planner_service.json_text import without_nulls
from planner_service.metadata.partitioning import PartitionSpec, parse_partition_spec
from planner_service.metadata.types import Schema, parse_schema

log = logging.getLogger(__name__)

MAIN_BRANCH = "main"


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
        return without_nulls({
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "timestamp-ms": self.timestamp_ms,
            "summary": self.summary,
            "parent-snapshot-id": self.parent_snapshot_id,
            "manifest-list": self.manifest_list,
            "schema-id": self.schema_id,
        })  # fmt: skip


@dataclass(frozen=True)
class SnapshotRef:
    name: str
    snapshot_id: int
    type: str  # "branch" | "tag"

    def to_json(self) -> dict[str, Any]:
        return {"snapshot-id": self.snapshot_id, "type": self.type}


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
    sort_orders: tuple[dict[str, Any], ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def schema(self) -> Schema:
        return self.schemas[self.current_schema_id]

    @property
    def spec(self) -> PartitionSpec:
        return self.specs[self.default_spec_id]

    @property
    def current_snapshot(self) -> Snapshot | None:
        return self.snapshots.get(self.current_snapshot_id) if self.current_snapshot_id is not None else None


def parse_table_metadata(data: bytes, location: str = "<memory>") -> TableMetadata:
    """Parse metadata.json bytes (gzip-compressed too, as `.gz.metadata.json` / `.metadata.json.gz`)."""
    try:
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        obj = json.loads(data)
    except (OSError, ValueError) as exc:
        raise CorruptMetadataError(f"Cannot parse table metadata {location}: {exc}") from None
    return table_metadata_from_json(obj, location)


def table_metadata_from_json(obj: Any, location: str = "<memory>") -> TableMetadata:
    """Table metadata from its parsed JSON (a REST catalog's LoadTable gives it so)."""
    if not isinstance(obj, dict):
        raise CorruptMetadataError(f"Table metadata {location} is not a JSON object")
    try:
        return _from_json(obj)
    except CorruptMetadataError as exc:
        raise CorruptMetadataError(f"Invalid table metadata {location}: {exc.message}") from None
    except KeyError as exc:
        raise CorruptMetadataError(f"Invalid table metadata {location}: missing field {exc}") from None
    except (TypeError, ValueError) as exc:  # the message would quote the file: it goes to the log only
        log.warning("invalid table metadata", extra={"location": location, "error": f"{type(exc).__name__}: {exc}"})
        problem = "a field holds a value of the wrong type"
        raise CorruptMetadataError(f"Invalid table metadata {location}: {problem}") from None


def _from_json(obj: dict[str, Any]) -> TableMetadata:
    version = int(obj["format-version"])
    if version not in (1, 2, 3):
        raise CorruptMetadataError(f"Unsupported format version {version}")

    if "schemas" in obj:
        schemas = {s.schema_id: s for s in (parse_schema(s) for s in obj["schemas"])}
        current_schema_id = int(obj["current-schema-id"])
    else:  # v1 with a single schema
        single = parse_schema(obj["schema"])
        schemas, current_schema_id = {single.schema_id: single}, single.schema_id

    if "partition-specs" in obj:
        specs = {p.spec_id: p for p in (parse_partition_spec(s) for s in obj["partition-specs"])}
        default_spec_id = int(obj["default-spec-id"])
    else:  # v1 with a single spec, as a list of fields
        single_spec = parse_partition_spec(obj["partition-spec"], 0)
        specs, default_spec_id = {0: single_spec}, 0

    snapshots = {s.snapshot_id: s for s in (_snapshot(s) for s in obj.get("snapshots") or [])}
    current = obj.get("current-snapshot-id")
    current = None if current is None or int(current) == -1 else int(current)

    refs = {
        name: SnapshotRef(name, int(r["snapshot-id"]), str(r.get("type", "branch")).lower())
        for name, r in (obj.get("refs") or {}).items()
    }
    if current is not None and MAIN_BRANCH not in refs:
        refs[MAIN_BRANCH] = SnapshotRef(MAIN_BRANCH, current, "branch")

    return TableMetadata(
        format_version=version,
        table_uuid=obj.get("table-uuid"),
        location=str(obj["location"]),
        last_sequence_number=int(obj.get("last-sequence-number", 0)),
        last_updated_ms=int(obj.get("last-updated-ms", 0)),
        current_schema_id=current_schema_id,
        schemas=schemas,
        default_spec_id=default_spec_id,
        specs=specs,
        properties={str(k): str(v) for k, v in (obj.get("properties") or {}).items()},
        current_snapshot_id=current,
        snapshots=snapshots,
        snapshot_log=tuple(
            SnapshotLogEntry(int(e["timestamp-ms"]), int(e["snapshot-id"])) for e in obj.get("snapshot-log") or []
        ),
        refs=refs,
        default_sort_order_id=int(obj.get("default-sort-order-id", 0)),
        sort_orders=tuple(obj.get("sort-orders") or ()),
        raw=obj,
    )


def _snapshot(obj: dict[str, Any]) -> Snapshot:
    parent = obj.get("parent-snapshot-id")
    schema_id = obj.get("schema-id")
    return Snapshot(
        snapshot_id=int(obj["snapshot-id"]),
        parent_snapshot_id=None if parent is None else int(parent),
        sequence_number=int(obj.get("sequence-number", 0)),
        timestamp_ms=int(obj["timestamp-ms"]),
        manifest_list=obj.get("manifest-list"),
        summary={str(k): str(v) for k, v in (obj.get("summary") or {}).items()},
        schema_id=None if schema_id is None else int(schema_id),
        first_row_id=obj.get("first-row-id"),
        v1_manifests=tuple(obj.get("manifests") or ()),
    )

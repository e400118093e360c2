"""What Iceberg Java's TableMetadata checks of a parsed table before it plans from it, with Java's messages:
refs name existing snapshots and main is the current snapshot, no snapshot is ahead of the table's sequence
number, the snapshot and metadata logs are in order, the default spec and sort order take columns the
current schema has, with transforms those columns' types allow.

Like Java, older specs may name columns dropped since (a table keeps its history), and a default spec or
sort order id that names none is no error as long as nothing plans with it.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from planner_service.errors import CorruptMetadataError
from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.sort_orders import SortOrder
from planner_service.metadata.types import PrimitiveType, Schema, StructType, java_type_string

if TYPE_CHECKING:
    from planner_service.metadata.table_metadata import TableMetadata

ONE_MINUTE_MS = 60_000  # Java tolerates this much clock skew between log entries
_TIME = frozenset({"date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"})
_HOURS = _TIME - {"date"}
_BUCKET = frozenset({"int", "long", "decimal", "date", "time", "string", "uuid", "fixed", "binary"} | _HOURS)
_TRUNCATE = frozenset({"int", "long", "decimal", "string", "binary"})
# A transform's source types, and Java's message for another type
_SOURCES = {
    "bucket": (_BUCKET, "Cannot bucket by type"),
    "truncate": (_TRUNCATE, "Cannot truncate type"),
    "year": (_TIME, "Unsupported type"),
    "month": (_TIME, "Unsupported type"),
    "day": (_TIME, "Unsupported type"),
    "hour": (_HOURS, "Unsupported type"),
}


def check_table_metadata(meta: TableMetadata) -> None:
    if meta.format_version > 1 and meta.table_uuid is None:
        raise CorruptMetadataError(f"UUID is required in format v{meta.format_version}")
    for snapshot in meta.snapshots.values():
        if snapshot.sequence_number > meta.last_sequence_number:  # v1: the last is 0, and so must they be
            raise CorruptMetadataError(
                f"Invalid snapshot with sequence number {snapshot.sequence_number} greater than last sequence "
                f"number {meta.last_sequence_number}"
            )
    _check_log([e.timestamp_ms for e in meta.snapshot_log], "snapshot log entries")
    if meta.snapshot_log and meta.last_updated_ms - meta.snapshot_log[-1].timestamp_ms < -ONE_MINUTE_MS:
        raise CorruptMetadataError(
            f"Invalid update timestamp {meta.last_updated_ms}: before last snapshot log entry at "
            f"{meta.snapshot_log[-1].timestamp_ms}"
        )
    _check_log([ts for ts, _ in meta.metadata_log], "previous metadata log entries")
    if meta.metadata_log and meta.last_updated_ms - meta.metadata_log[-1][0] < -ONE_MINUTE_MS:
        raise CorruptMetadataError(
            f"Invalid update timestamp {meta.last_updated_ms}: before the latest metadata log entry timestamp "
            f"{meta.metadata_log[-1][0]}"
        )
    for ref in meta.refs.values():
        if ref.snapshot_id not in meta.snapshots:
            raise CorruptMetadataError(
                f"Snapshot for reference {ref.java_string()} does not exist in the existing snapshots list"
            )
    main = meta.refs.get("main")
    current = -1 if meta.current_snapshot_id is None else meta.current_snapshot_id
    if main is not None and main.snapshot_id != current:
        raise CorruptMetadataError(f"Current snapshot ID does not match main branch ({current} != {main.snapshot_id})")
    schema = meta.schemas[meta.current_schema_id]
    for spec in meta.specs.values():
        check_spec(spec, schema, is_default=spec.spec_id == meta.default_spec_id)
    for order in meta.sort_orders:
        if order.order_id == meta.default_sort_order_id:
            _check_sort_order(order, schema)


def _check_log(timestamps: list[int], what: str) -> None:
    for before, after in itertools.pairwise(timestamps):
        if after - before < -ONE_MINUTE_MS:
            raise CorruptMetadataError(f"[BUG] Expected sorted {what}.")


def check_spec(spec: PartitionSpec, schema: Schema, is_default: bool) -> None:
    """Each field's source column exists (in the default spec; older ones may name dropped columns), is a
    primitive inside structs only, of a type its transform takes."""
    for f in spec.fields:
        source = schema.find_field(f.source_id)
        if source is None:
            if is_default and f.transform.name != "void":
                raise CorruptMetadataError(
                    f"Cannot find source column for partition field: {f.field_id}: {f.name}: "
                    f"{f.transform}({f.source_id})"
                )
            continue
        type_text = java_type_string(source.type)
        if f.transform.name == "void":
            if is_default and not isinstance(source.type, PrimitiveType):
                raise CorruptMetadataError(f"Partitions cannot contain nested types: {type_text}")
            continue
        allowed = _SOURCES.get(f.transform.name)
        if allowed is not None and source_kind(source.type) not in allowed[0]:
            raise CorruptMetadataError(f"{allowed[1]}: {type_text}")
        if not isinstance(source.type, PrimitiveType) and f.transform.name == "identity":
            raise CorruptMetadataError(f"Cannot partition by non-primitive source field: {type_text}")
        for parent in schema.ancestors(f.source_id):
            if not isinstance(parent.type, StructType):
                raise CorruptMetadataError(f"Invalid partition field parent: {java_type_string(parent.type)}")


def source_kind(typ: Any) -> str:
    return typ.kind if isinstance(typ, PrimitiveType) else "nested"


def _check_sort_order(order: SortOrder, schema: Schema) -> None:
    for f in order.fields:
        if f.transform.name != "void" and schema.find_field(f.source_id) is None:
            raise CorruptMetadataError(f"Cannot find source column for sort field: {f}")

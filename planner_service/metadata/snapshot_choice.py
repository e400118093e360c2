"""Choosing the snapshot a scan reads, with Iceberg Java's rules (SnapshotScan, SnapshotUtil)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from planner_service.errors import BadRequestError, NoSuchRefError, NoSuchSnapshotError
from planner_service.metadata.table_metadata import MAIN_BRANCH, Snapshot, TableMetadata
from planner_service.metadata.types import Schema


@dataclass(frozen=True)
class SnapshotChoice:
    """At most one of: a snapshot id, a time (epoch ms), a branch or tag name. None of them: current."""

    snapshot_id: int | None = None
    as_of_timestamp_ms: int | None = None
    ref: str | None = None

    def __post_init__(self) -> None:
        given = [n for n, v in (("snapshot-id", self.snapshot_id), ("as-of-timestamp-ms",
                 self.as_of_timestamp_ms), ("ref", self.ref)) if v is not None]  # fmt: skip
        if len(given) > 1:
            raise BadRequestError(f"Choose at most one of snapshot-id, as-of-timestamp-ms and ref; got {given}")


@dataclass(frozen=True)
class ChosenSnapshot:
    snapshot: Snapshot | None  # None: the table has no snapshot to read, the plan is empty
    schema: Schema  # the scan's schema: the snapshot's for time travel and tags, else the current one


def choose_snapshot(meta: TableMetadata, choice: SnapshotChoice) -> ChosenSnapshot:
    if choice.snapshot_id is not None:
        return _by_id(meta, choice.snapshot_id)
    if choice.as_of_timestamp_ms is not None:
        return _by_id(meta, snapshot_id_as_of(meta, choice.as_of_timestamp_ms))
    if choice.ref is not None and choice.ref != MAIN_BRANCH:  # Java: useRef("main") changes nothing
        ref = meta.refs.get(choice.ref)
        if ref is None or ref.snapshot_id not in meta.snapshots:
            raise NoSuchRefError(f"Cannot find ref {choice.ref}")
        snapshot = meta.snapshots[ref.snapshot_id]
        schema = _schema_for(meta, snapshot) if ref.type == "tag" else meta.schema
        return ChosenSnapshot(snapshot, schema)
    return ChosenSnapshot(meta.current_snapshot, meta.schema)


def snapshot_id_as_of(meta: TableMetadata, timestamp_ms: int) -> int:
    """The last snapshot-log entry at or before the time, in log order (SnapshotUtil.snapshotIdAsOfTime)."""
    found = None
    for entry in meta.snapshot_log:
        if entry.timestamp_ms <= timestamp_ms:
            found = entry.snapshot_id
    if found is None:
        raise NoSuchSnapshotError(f"Cannot find a snapshot older than {format_timestamp_ms(timestamp_ms)}")
    return found


def format_timestamp_ms(timestamp_ms: int) -> str:
    """Java's DateTimeUtil.formatTimestampMillis: ISO-8601 with a +00:00 offset."""
    text = datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
    return text.replace(".000+", "+")


def _by_id(meta: TableMetadata, snapshot_id: int) -> ChosenSnapshot:
    snapshot = meta.snapshots.get(snapshot_id)
    if snapshot is None:
        raise NoSuchSnapshotError(f"Cannot find snapshot with ID {snapshot_id}")
    return ChosenSnapshot(snapshot, _schema_for(meta, snapshot))


def _schema_for(meta: TableMetadata, snapshot: Snapshot) -> Schema:
    if snapshot.schema_id is not None and snapshot.schema_id in meta.schemas:
        return meta.schemas[snapshot.schema_id]
    return meta.schema

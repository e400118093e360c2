"""Choosing the snapshot a scan reads, with Iceberg Java's rules (SnapshotScan, SnapshotUtil)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from planner_service.errors import BadRequestError, NoSuchRefError, NoSuchSnapshotError
from planner_service.metadata.table_metadata import MAIN_BRANCH, Snapshot, TableMetadata
from planner_service.metadata.types import Schema

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SnapshotChoice:
    """At most one of: a snapshot id, a time (epoch ms), a branch or tag name. None of them: current."""

    snapshot_id: int | None = None
    as_of_timestamp_ms: int | None = None
    ref: str | None = None

    def __post_init__(self) -> None:
        given = [
            n
            for n, v in (
                ("snapshot-id", self.snapshot_id),
                ("as-of-timestamp-ms", self.as_of_timestamp_ms),
                ("ref", self.ref),
            )
            if v is not None
        ]
        if len(given) > 1:
            raise BadRequestError(f"Choose at most one of snapshot-id, as-of-timestamp-ms and ref; got {given}")


@dataclass(frozen=True)
class ChosenSnapshot:
    snapshot: Snapshot | None  # None: the table has no snapshot to read, the plan is empty
    schema: Schema  # the scan's schema: the snapshot's for time travel and tags, else the current one
    appends: tuple[Snapshot, ...] | None = None  # an incremental scan's append snapshots, newest first


@dataclass(frozen=True)
class AppendRange:
    """An incremental append scan (Java's newIncrementalAppendScan().fromSnapshotExclusive(start)
    .toSnapshot(end); Spark's start-snapshot-id and end-snapshot-id): the files appended after `start`, up
    to and including `end` (None: the current snapshot)."""

    start_snapshot_id: int
    end_snapshot_id: int | None = None


def append_range(start: int | None, end: int | None, choice: SnapshotChoice) -> AppendRange | None:
    """The incremental scan asked for by start/end snapshot ids, with Spark's rules for its read options
    (start-snapshot-id, end-snapshot-id): none without a start, none beside another snapshot choice."""
    if start is None and end is None:
        return None
    if start is None:
        raise BadRequestError("Cannot set only end-snapshot-id for incremental scans: set start-snapshot-id too")
    chosen = [
        name
        for name, value in (
            ("snapshot-id", choice.snapshot_id),
            ("as-of-timestamp-ms", choice.as_of_timestamp_ms),
            ("ref", choice.ref),
        )
        if value is not None
    ]
    if chosen:
        raise BadRequestError(
            f"Cannot set start-snapshot-id and end-snapshot-id for incremental scans when {chosen[0]} is set"
        )
    return AppendRange(start, end)


def choose_appends(meta: TableMetadata, appends: AppendRange) -> ChosenSnapshot:
    """The end snapshot and the append snapshots between (BaseIncrementalAppendScan): `start` must be the
    parent of one of the end's ancestors (so start == end is refused, and start itself may be expired);
    only `append` operations count. The scan reads the table's current schema."""
    end_id = appends.end_snapshot_id
    if end_id is not None and end_id not in meta.snapshots:
        raise BadRequestError(f"Cannot find the end snapshot: {end_id}")
    if end_id is None:
        if meta.current_snapshot is None:
            raise BadRequestError("Invalid config: end snapshot is not set and table has no current snapshot")
        end_id = meta.current_snapshot.snapshot_id
    lineage = list(_ancestors(meta, end_id))
    start = appends.start_snapshot_id
    after_start = next((i for i, s in enumerate(lineage) if s.parent_snapshot_id == start), None)
    if after_start is None:
        raise BadRequestError(
            f"Starting snapshot (exclusive) {start} is not a parent ancestor of end snapshot {end_id}"
        )
    between = lineage[: after_start + 1]
    chosen = tuple(s for s in between if s.summary.get("operation") == "append")
    return ChosenSnapshot(meta.snapshots[end_id], meta.schema, chosen)


def _ancestors(meta: TableMetadata, snapshot_id: int | None) -> Iterator[Snapshot]:
    """The snapshot and its ancestors, newest first, as far as they are in the metadata."""
    seen: set[int] = set()
    while snapshot_id is not None and snapshot_id in meta.snapshots and snapshot_id not in seen:
        seen.add(snapshot_id)
        snapshot = meta.snapshots[snapshot_id]
        yield snapshot
        snapshot_id = snapshot.parent_snapshot_id


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
    """Java's DateTimeUtil.formatTimestampMillis: ISO-8601 with a +00:00 offset. A time Python's datetime
    cannot hold (before year 1, after 9999) is written as its number of milliseconds."""
    try:
        moment = EPOCH + timedelta(milliseconds=timestamp_ms)
    except OverflowError:
        return f"{timestamp_ms} ms from the epoch"
    return moment.isoformat(timespec="milliseconds").replace(".000+", "+")


def _by_id(meta: TableMetadata, snapshot_id: int) -> ChosenSnapshot:
    snapshot = meta.snapshots.get(snapshot_id)
    if snapshot is None:
        raise NoSuchSnapshotError(f"Cannot find snapshot with ID {snapshot_id}")
    return ChosenSnapshot(snapshot, _schema_for(meta, snapshot))


def _schema_for(meta: TableMetadata, snapshot: Snapshot) -> Schema:
    if snapshot.schema_id is not None and snapshot.schema_id in meta.schemas:
        return meta.schemas[snapshot.schema_id]
    return meta.schema

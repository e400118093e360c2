"""Scan: what a read asks the planner for, in one object that plan_and_read, aggregate and the data source
take or build, and that becomes the body of POST /plan or POST /aggregate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import Any, Literal, TypedDict, Unpack, get_args

__all__ = ["GROUPINGS", "Grouping", "Scan", "ScanArgs", "epoch_millis", "plan_request"]

# How the service groups a scan's tasks (Scan.grouping): the one list of the values this package takes
Grouping = Literal["none", "partition", "sort-order"]
GROUPINGS: tuple[Grouping, ...] = get_args(Grouping)

Filter = str | Mapping[str, Any] | bool


@dataclass(frozen=True, eq=False)
class Scan:
    """A scan of `table` (namespace.name).

    filter: a filter string ("region = 'eu' AND id < 100") or a REST JSON expression; the rows read are
      exactly those matching it (the executors apply each file's residual).
    columns: the columns to read (top-level or nested names), in this order; all by default.
    snapshot_id / as_of (epoch ms or a datetime; naive is UTC) / ref (branch or tag): at most one.
    start_snapshot_id / end_snapshot_id: an incremental append scan instead (Spark's start-snapshot-id,
      exclusive, and end-snapshot-id, inclusive, default the current snapshot): the rows the appends after
      the start added (delete files are not applied, as in Spark + Iceberg's incremental reads).
    options: split-size, lookback, file-open-cost (Iceberg's read-option names).
    limit: at most this many rows; the service plans only the first files that surely hold them when it can
      tell (files without residual or deletes). 0 reads nothing.
    case_sensitive: how the service resolves column names.
    grouping: "partition" makes each task hold the splits of one partition tuple, tasks in key order (as
      Spark + Iceberg's preserve-data-grouping); "sort-order" also orders each partition's files by the
      table's sort order, no two files of a task overlapping on it, each task's files in key order and tasks
      by their first key; "none" (the default) packs by size alone.
    """

    table: str
    filter: Filter | None = None
    columns: Sequence[str] | None = None
    snapshot_id: int | None = None
    as_of: int | datetime | None = None
    ref: str | None = None
    start_snapshot_id: int | None = None
    end_snapshot_id: int | None = None
    options: Mapping[str, int | str] = field(default_factory=dict)
    limit: int | None = None
    case_sensitive: bool = True
    grouping: Grouping = "none"

    def __post_init__(self) -> None:
        if self.grouping not in GROUPINGS:
            raise ValueError(f"grouping must be one of {', '.join(GROUPINGS)}, not {self.grouping!r}")
        if isinstance(self.columns, str):
            raise TypeError("columns is a list of column names, not a string")
        chosen = [name for name in ("snapshot_id", "as_of", "ref") if getattr(self, name) is not None]
        if len(chosen) > 1:
            raise ValueError(f"choose at most one snapshot: {', '.join(chosen)} were all given")
        if self.as_of is not None:
            epoch_millis(self.as_of)  # (a TypeError now, not when the body is made)
        if self.limit is not None and self.limit < 0:
            raise ValueError(f"limit must be >= 0, not {self.limit}")

    @classmethod
    def of(cls, table: str | Scan, **scan: Unpack[ScanArgs]) -> Scan:
        """`table` as a Scan with `scan`'s fields (ScanArgs) set over it."""
        if isinstance(table, Scan):
            return replace(table, **_scan_args(scan)) if scan else table
        return cls(table, **_scan_args(scan))

    def request(
        self,
        *,
        inline_task_limit: int | None = None,
        parallelism: int | None = None,
        task_estimates: bool | None = None,
    ) -> dict[str, Any]:
        """The POST /plan body. `inline_task_limit`: plans with more tasks come back as a plan id (default:
        the service's setting). `parallelism`: Spark's (max of the default parallelism and the shuffle
        partitions), for the split size Spark + Iceberg adapts to it. `task_estimates` False: a plan answered
        by id lists no per-task sizes (a Spark driver needs only the count)."""
        body = self._selection()
        if self.columns is not None:
            body["select"] = list(self.columns)
        if self.options:
            body["options"] = dict(self.options)
        if self.grouping != "none":
            body["grouping"] = self.grouping
        if self.limit:  # (0 plans the whole scan: the reader reads nothing of it)
            body["limit"] = int(self.limit)
        if inline_task_limit is not None:
            body["inline-task-limit"] = int(inline_task_limit)
        if parallelism is not None:
            body["parallelism"] = int(parallelism)
        if task_estimates is not None:
            body["task-estimates"] = bool(task_estimates)
        return body

    def aggregate_request(self, aggregates: Sequence[str]) -> dict[str, Any]:
        """The POST /aggregate body: `aggregates` over this scan's rows (its snapshot and filter)."""
        if isinstance(aggregates, str):
            raise TypeError('aggregates is a list such as ["count(*)", "max(ts)"], not a string')
        return {**self._selection(), "aggregates": list(aggregates)}

    def _selection(self) -> dict[str, Any]:
        """The table, snapshot choice, filter and case sensitivity, as the wire names them."""
        body: dict[str, Any] = {"table": self.table}
        if self.snapshot_id is not None:
            body["snapshot-id"] = int(self.snapshot_id)
        if self.as_of is not None:
            body["as-of-timestamp-ms"] = epoch_millis(self.as_of)
        if self.ref is not None:
            body["ref"] = self.ref
        if self.start_snapshot_id is not None:
            body["start-snapshot-id"] = int(self.start_snapshot_id)
        if self.end_snapshot_id is not None:
            body["end-snapshot-id"] = int(self.end_snapshot_id)
        if self.filter is not None:
            body["filter"] = self.filter if isinstance(self.filter, str | bool) else dict(self.filter)
        if not self.case_sensitive:
            body["case-sensitive"] = False
        return body


class ScanArgs(TypedDict, total=False):
    """Scan's fields as keyword arguments (plan_and_read's and aggregate's **scan)."""

    filter: Filter | None
    columns: Sequence[str] | None
    snapshot_id: int | None
    as_of: int | datetime | None
    ref: str | None
    start_snapshot_id: int | None
    end_snapshot_id: int | None
    options: Mapping[str, int | str] | None
    limit: int | None
    case_sensitive: bool
    grouping: Grouping


SCAN_FIELDS = frozenset(f.name for f in fields(Scan)) - {"table"}


def plan_request(
    table: str,
    *,
    inline_task_limit: int | None = None,
    parallelism: int | None = None,
    **scan: Unpack[ScanArgs],
) -> dict[str, Any]:
    """A POST /plan body: Scan(table, **scan).request(...)."""
    return Scan.of(table, **scan).request(inline_task_limit=inline_task_limit, parallelism=parallelism)


def _scan_args(scan: Mapping[str, Any]) -> dict[str, Any]:
    """ScanArgs as Scan takes them (options None: none)."""
    unknown = set(scan) - SCAN_FIELDS
    if unknown:
        raise TypeError(f"unknown scan arguments {sorted(unknown)}: a scan takes {sorted(SCAN_FIELDS)}")
    return {k: ({} if k == "options" and v is None else v) for k, v in scan.items()}


def epoch_millis(value: int | datetime) -> int:
    """Milliseconds since the epoch; a naive datetime is taken as UTC."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        delta = value - datetime(1970, 1, 1, tzinfo=UTC)
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"as_of is epoch milliseconds (int) or a datetime, not {type(value).__name__}")
    return value

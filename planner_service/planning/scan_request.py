"""What a scan asks for, whichever door it came in by (POST /plan, a plan id, the REST plan endpoint,
/aggregate, the CLI): one ScanRequest, made by one function from the request's fields and checked there,
so that a bad filter or snapshot choice is refused before any I/O. The Iceberg REST plan endpoint's own
rules (rest_scan_request) and the checks of a request against its table before it is planned
(check_on_table) are here too.

A ScanRequest also has a canonical JSON form (what decides the plan and nothing else), which plan ids pack
and unpack: a plan id names the same request on any replica, or after a restart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from planner_service.errors import BadRequestError
from planner_service.expressions.binding import bind
from planner_service.expressions.expression import TRUE, Expression
from planner_service.expressions.expression_json import expression_from_json, expression_to_json
from planner_service.expressions.visitor import bound_predicates
from planner_service.json_text import without_nulls
from planner_service.metadata.snapshot_choice import (
    AppendRange,
    ChosenSnapshot,
    SnapshotChoice,
    append_range,
    choose_appends,
    choose_snapshot,
)
from planner_service.metadata.table_metadata import TableMetadata
from planner_service.metadata.types import Schema, unknown_column
from planner_service.planning.grouping import Grouping, grouping_of
from planner_service.planning.read_restriction import ScanRestriction

__all__ = [
    "SNAPSHOT_FIELDS",
    "ScanRequest",
    "check_on_table",
    "rest_scan_request",
    "row_filter_of",
    "scan_request",
    "snapshot_fields",
    "stats_field_ids",
]

# the fields that choose what a scan reads, by their names in scan_request(), on every door's request
SNAPSHOT_FIELDS = ("snapshot_id", "as_of_timestamp_ms", "ref", "start_snapshot_id", "end_snapshot_id")


@dataclass(frozen=True)
class ScanRequest:
    snapshot: SnapshotChoice = field(default_factory=SnapshotChoice)
    options: Mapping[str, object] | None = None  # read options: split-size, lookback, file-open-cost
    row_filter: Expression = TRUE  # unbound; bound against the table's current schema, as Java does
    case_sensitive: bool = True
    explain: bool = False  # record why each manifest and data file was kept or skipped
    combine: bool = True  # split and bin-pack into CombinedScanTasks (planTasks); False: planFiles only
    appends: AppendRange | None = None  # an incremental append scan instead of a snapshot's (then no `snapshot`)
    limit: int | None = None  # a limit: planning may stop once the files known to match hold this many rows
    parallelism: int | None = None  # Spark's, for the adaptive split size (read.split.adaptive-size.enabled)
    keep_stats: bool = False  # decode the files' column stats even when planning does not read them
    select: tuple[str, ...] | None = None  # the columns read: the plan's schema is projected to them
    grouping: Grouping = "none"  # "partition" or "sort-order": planning/grouping.py, planning/sort_grouping.py
    restriction: ScanRestriction | None = None  # the principal's read restrictions (set at the entrance)

    def canonical(self) -> dict[str, Any]:
        """What decides the plan, as JSON with normalized values (the filter re-encoded as REST JSON)."""
        appends, options = self.appends, self.options or {}
        snapshot = {
            "snapshot-id": self.snapshot.snapshot_id,
            "as-of-timestamp-ms": self.snapshot.as_of_timestamp_ms,
            "ref": self.snapshot.ref,
            "start-snapshot-id": appends.start_snapshot_id if appends is not None else None,
            "end-snapshot-id": appends.end_snapshot_id if appends is not None else None,
        }
        out = {
            "snapshot": without_nulls(snapshot),
            "select": None if self.select is None else list(self.select),
            "filter": expression_to_json(self.row_filter),
            "case-sensitive": self.case_sensitive,
            "options": {key: options[key] for key in sorted(options)},
        }
        out |= without_nulls({"limit": self.limit, "parallelism": self.parallelism})
        if self.grouping != "none":  # (what every plan of POST /plan asks is left out: shorter ids)
            out["grouping"] = self.grouping
        if not self.combine:  # planFiles() only: a REST scan plan
            out["combine"] = False
        if self.keep_stats:
            out["keep-stats"] = True
        if self.restriction is not None:
            out["read-restrictions"] = self.restriction.to_json()
        return out

    @classmethod
    def from_canonical(cls, data: Mapping[str, Any]) -> ScanRequest:
        """The request of a canonical form (KeyError, ValueError or a BadRequestError when it is not one)."""
        snapshot = dict(data["snapshot"])
        select = data["select"]
        restricted = data.get("read-restrictions")
        scan = scan_request(
            snapshot_id=snapshot.get("snapshot-id"),
            as_of_timestamp_ms=snapshot.get("as-of-timestamp-ms"),
            ref=snapshot.get("ref"),
            start_snapshot_id=snapshot.get("start-snapshot-id"),
            end_snapshot_id=snapshot.get("end-snapshot-id"),
            filter=data["filter"],
            select=None if select is None else [str(c) for c in select],
            case_sensitive=bool(data["case-sensitive"]),
            options=dict(data["options"]),
            limit=None if data.get("limit") is None else int(data["limit"]),
            parallelism=None if data.get("parallelism") is None else int(data["parallelism"]),
            grouping=grouping_of(data.get("grouping", "none")),
            combine=bool(data.get("combine", True)),
            keep_stats=bool(data.get("keep-stats", False)),
        )
        return scan if restricted is None else replace(scan, restriction=ScanRestriction.from_json(restricted))


def scan_request(
    *,
    snapshot_id: int | None = None,
    as_of_timestamp_ms: int | None = None,
    ref: str | None = None,
    start_snapshot_id: int | None = None,
    end_snapshot_id: int | None = None,
    filter: Any = None,
    select: Sequence[str] | None = None,
    case_sensitive: bool = True,
    options: Mapping[str, object] | None = None,
    limit: int | None = None,
    parallelism: int | None = None,
    explain: bool = False,
    combine: bool = True,
    keep_stats: bool = False,
    grouping: str = "none",
) -> ScanRequest:
    """The scan a request's fields describe, checked: at most one snapshot choice, or an incremental range
    by Spark's rules; the filter (a filter string or a REST JSON expression) parsed; the numbers in range."""
    choice = SnapshotChoice(snapshot_id, as_of_timestamp_ms, ref)
    appends = append_range(start_snapshot_id, end_snapshot_id, choice)
    if limit is not None and limit < 0:
        raise BadRequestError(f"limit must be 0 or more, got {limit}")
    if parallelism is not None and parallelism < 1:
        raise BadRequestError(f"parallelism must be 1 or more, got {parallelism}")
    checked_grouping = grouping_of(grouping)
    return ScanRequest(
        snapshot=choice,
        options=dict(options) if options else None,
        row_filter=row_filter_of(filter),
        case_sensitive=case_sensitive,
        explain=explain,
        combine=combine,
        appends=appends,
        limit=limit,
        parallelism=parallelism,
        keep_stats=keep_stats,
        select=None if select is None else tuple(select),
        grouping=checked_grouping,
    )


def snapshot_fields(source: object) -> dict[str, Any]:
    """The snapshot choice of a request object that names its fields as scan_request() does (a wire model,
    the CLI's arguments), for `scan_request(**snapshot_fields(body), ...)`."""
    return {name: getattr(source, name) for name in SNAPSHOT_FIELDS}


def row_filter_of(value: Any) -> Expression:
    """A filter string or a REST JSON expression (None: no filter)."""
    if value is None:
        return TRUE
    if isinstance(value, str):
        from planner_service.expressions.filter_string import parse_filter  # sqlglot loads on the first one

        return parse_filter(value)
    return expression_from_json(value)


# --- The Iceberg REST plan endpoint ----------------------------------------------------------------------


def rest_scan_request(
    *,
    snapshot_id: int | None = None,
    start_snapshot_id: int | None = None,
    end_snapshot_id: int | None = None,
    filter: Any = None,
    case_sensitive: bool = True,
    limit: int | None = None,
    stats_fields: Sequence[str] | None = None,
) -> ScanRequest:
    """The scan of a REST PlanTableScanRequest (spec 1.11), checked by the spec's rules: a point-in-time
    scan (snapshot-id) or an incremental one (start-snapshot-id exclusive, end-snapshot-id inclusive, both
    given), never both; the filter a JSON expression, not a filter string. REST answers are Java's
    planFiles() tasks (unsplit); with stats-fields, the files keep their column stats."""
    _check_incremental(snapshot_id, start_snapshot_id, end_snapshot_id)
    if isinstance(filter, str):
        expression_from_json(filter)  # a REST filter is a JSON expression: this names the string refused
    return scan_request(
        snapshot_id=snapshot_id,
        start_snapshot_id=start_snapshot_id,
        end_snapshot_id=end_snapshot_id,
        filter=filter,
        case_sensitive=case_sensitive,
        limit=limit,
        combine=False,
        keep_stats=stats_fields is not None,
    )


def check_on_table(
    meta: TableMetadata,
    request: ScanRequest,
    select: Sequence[str] | None = None,
    stats_fields: Sequence[str] | None = None,
) -> tuple[ChosenSnapshot, frozenset[int] | None]:
    """Check a request against its table before it is planned, so that a bad one is refused now, not a
    failed plan later: the snapshot choice, the filter (bound to the current schema, as Java binds it and
    planning will), the selected columns (only checked: REST answers are file scan tasks, which carry no
    schema). Returns the chosen snapshot, and stats-fields as field ids (None: no stats-fields)."""
    appends = request.appends
    chosen = choose_snapshot(meta, request.snapshot) if appends is None else choose_appends(meta, appends)
    bind(meta.schema, request.row_filter, request.case_sensitive)
    _check_select(select, meta.schema, chosen.schema, request.case_sensitive)
    return chosen, stats_field_ids(stats_fields, meta.schema, request.case_sensitive)


def filter_field_ids(scan_schema: Schema, request: ScanRequest) -> set[int] | None:
    """With a select, the field ids the filter reads, bound as given (NOT not yet pushed down) to the scan's
    schema, the snapshot's when time-travelling: Java's BaseScan.lazyColumnProjection does so before anything
    else is bound, so its errors are the first (a column the snapshot does not have yet: "Cannot find field
    'c' in struct: ..."). None without a select (Java binds only to the current schema then)."""
    if request.select is None:
        return None
    bound = bind(scan_schema, request.row_filter, request.case_sensitive)
    return {p.term.field_id for p in bound_predicates(bound)}


def _check_incremental(snapshot_id: int | None, start: int | None, end: int | None) -> None:
    """A point-in-time scan or an incremental append scan with both ends, as Java plans one."""
    if start is None and end is None:
        return
    if snapshot_id is not None:
        raise BadRequestError("Invalid scan: give snapshot-id or start-snapshot-id/end-snapshot-id, not both")
    if start is None or end is None:
        raise BadRequestError("Invalid scan: an incremental scan needs both start-snapshot-id and end-snapshot-id")


def _check_select(select: Sequence[str] | None, current: Schema, scanned: Schema, case_sensitive: bool) -> None:
    """Each name must exist in the scan's schema or the current one (PyIceberg selects by the snapshot's
    schema without setting use-snapshot-schema); an unknown one is refused naming the current columns."""
    for name in select or ():
        if name != "*" and all(s.find_field_by_name(name, case_sensitive) is None for s in (scanned, current)):
            raise BadRequestError(f"Cannot select unknown column '{name}'{unknown_column(current, name)}")


def stats_field_ids(names: Sequence[str] | None, schema: Schema, case_sensitive: bool) -> frozenset[int] | None:
    """stats-fields as field ids of the current schema (Java's includeColumnStats); unknown names refused."""
    if names is None:
        return None
    ids = set()
    for name in names:
        found = schema.find_field_by_name(name, case_sensitive)
        if found is None:
            raise BadRequestError(f"Cannot find field '{name}' for stats-fields{unknown_column(schema, name)}")
        ids.add(found.field_id)
    return frozenset(ids)

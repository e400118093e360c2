"""What a scan asks for, whichever door it came in by (POST /plan, a plan id, the REST plan endpoint,
/aggregate, the CLI): one ScanRequest, made by one function from the request's fields and checked there,
so that a bad filter or snapshot choice is a 400 before any I/O.

A ScanRequest also has a canonical JSON form (what decides the plan and nothing else), which plan ids pack
and unpack: a plan id names the same request on any replica, or after a restart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from planner_service.errors import BadRequestError
from planner_service.expressions.expression import TRUE, Expression
from planner_service.expressions.expression_json import expression_from_json, expression_to_json
from planner_service.json_text import without_nulls
from planner_service.metadata.snapshot_choice import AppendRange, SnapshotChoice, append_range

__all__ = ["SNAPSHOT_FIELDS", "ScanRequest", "row_filter_of", "scan_request", "snapshot_fields"]

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
    min_rows: int | None = None  # a limit: planning may stop once the files known to match hold this many rows
    parallelism: int | None = None  # Spark's, for the adaptive split size (read.split.adaptive-size.enabled)
    keep_stats: bool = False  # decode the files' column stats even when planning does not read them
    select: tuple[str, ...] | None = None  # the columns read: the plan's schema is projected to them

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
        return out | without_nulls({"limit": self.min_rows, "parallelism": self.parallelism})

    @classmethod
    def from_canonical(cls, data: Mapping[str, Any]) -> ScanRequest:
        """The request of a canonical form (KeyError, ValueError or a BadRequestError when it is not one)."""
        snapshot = dict(data["snapshot"])
        select = data["select"]
        return scan_request(
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
        )


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
) -> ScanRequest:
    """The scan a request's fields describe, checked: at most one snapshot choice, or an incremental range
    by Spark's rules; the filter (a filter string or a REST JSON expression) parsed; the numbers in range."""
    choice = SnapshotChoice(snapshot_id, as_of_timestamp_ms, ref)
    appends = append_range(start_snapshot_id, end_snapshot_id, choice)
    if limit is not None and limit < 0:
        raise BadRequestError(f"limit must be 0 or more, got {limit}")
    if parallelism is not None and parallelism < 1:
        raise BadRequestError(f"parallelism must be 1 or more, got {parallelism}")
    return ScanRequest(
        snapshot=choice,
        options=dict(options) if options else None,
        row_filter=row_filter_of(filter),
        case_sensitive=case_sensitive,
        explain=explain,
        combine=combine,
        appends=appends,
        min_rows=limit,
        parallelism=parallelism,
        keep_stats=keep_stats,
        select=None if select is None else tuple(select),
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

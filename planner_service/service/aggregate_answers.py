"""Aggregates of a scan from its data files' metadata, planned as a plan is (admitted, cancellable)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planner_service.access.policy import Privilege
from planner_service.metadata.snapshot_choice import choose_snapshot
from planner_service.planning.admission import Cancellation
from planner_service.planning.metadata_aggregates import evaluate_aggregates, parse_aggregates
from planner_service.planning.scan_request import ScanRequest
from planner_service.service.runtime import Runtime
from planner_service.service.table_access import TableAccess
from planner_service.wire.aggregates_json import encode_aggregates


def aggregate_scan(
    runtime: Runtime,
    table_name: str | None,
    metadata_location: str | None,
    scan: ScanRequest,
    aggregates: Sequence[str],
    access: TableAccess,
    cancel: Cancellation | None = None,
) -> dict[str, Any]:
    """The /aggregate answer: the scan's files planned with their stats (admitted as a plan), aggregated.
    `scan` plans files only (combine=False) and keeps their stats (keep_stats=True)."""
    cancel = cancel or Cancellation()
    parsed = parse_aggregates(list(aggregates))
    table = runtime.load_table(table_name, metadata_location, access, Privilege.READ_METADATA)
    snapshot = choose_snapshot(table.metadata, scan.snapshot).snapshot
    files = runtime.planner.estimated_files(snapshot)
    with runtime.plans.admission.admitted(files, cancel):  # (files only, not split: no ranges)
        plan = runtime.planner.plan(table, scan, cancel)
        values = evaluate_aggregates(plan.files, plan.schema, table.metadata.properties, parsed, scan.case_sensitive)
    return encode_aggregates(plan, values)

"""Aggregates of a scan from its data files' metadata, planned at the planning entrance as every plan is
(admitted, made once for identical requests, kept, audited)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from planner_service.access.policy import Privilege
from planner_service.access.table_access import TableAccess
from planner_service.planning.admission import Cancellation
from planner_service.planning.metadata_aggregates import evaluate_aggregates, parse_aggregates
from planner_service.planning.scan_request import ScanRequest
from planner_service.service import planning_entrance as entrance
from planner_service.service.plan_ids import CanonicalRequest
from planner_service.service.runtime import Runtime
from planner_service.wire.aggregates_json import encode_aggregates

RESTRICTED = "read restrictions apply to the caller: computed from the rows it may read, not from metadata"


def aggregate_scan(
    runtime: Runtime,
    table_name: str | None,
    metadata_location: str | None,
    scan: ScanRequest,
    aggregates: Sequence[str],
    access: TableAccess,
    cancel: Cancellation | None = None,
) -> dict[str, Any]:
    """The /aggregate answer: the scan's files planned with their stats, aggregated. `scan` plans files only
    (combine=False) and keeps their stats (keep_stats=True). Under read restrictions nothing is taken from
    the statistics (they count hidden rows and raw values): every aggregate is answered as not exact, so the
    client computes it from the rows it reads under them."""
    parsed = parse_aggregates(list(aggregates))
    table = entrance.open_table(runtime, access, table_name, metadata_location, Privilege.READ_METADATA)
    request = CanonicalRequest(table.name, table.metadata_location, entrance.restricted(access, table, scan))
    plan = entrance.plan(runtime, access, table, request, cancel=cancel)[0].plan
    values = evaluate_aggregates(plan.files, plan.schema, table.metadata.properties, parsed, scan.case_sensitive)
    if request.scan.restriction is not None:
        values = [replace(v, value=None, exact=False, reason=RESTRICTED) for v in values]
    return encode_aggregates(plan, values)

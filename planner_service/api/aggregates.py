"""POST /aggregate: COUNT(*), COUNT(col), MIN(col), MAX(col) of a scan from its data files' metadata, where
that is exact (planning/aggregates.py), each aggregate saying whether it is and, if not, why."""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from planner_service.api.dependencies import PrettyDep, RuntimeDep
from planner_service.api.disconnect import until_disconnected
from planner_service.api.response_models import AggregateResponse, json_route
from planner_service.api.responses import json_response
from planner_service.api.wire import AggregateRequest, parse_body
from planner_service.metadata.json_values import to_json_value
from planner_service.metadata.snapshot_choice import choose_snapshot
from planner_service.planning.admission import Cancellation
from planner_service.planning.aggregates import AggregateValue, evaluate_aggregates, parse_aggregates
from planner_service.planning.scan_plan import ScanPlan
from planner_service.service.runtime import Runtime

router = APIRouter()


@router.post(
    "/aggregate",
    tags=["planning"],
    summary="count(*), count(col), min(col), max(col) from metadata, where exact",
    **json_route(
        AggregateRequest, AggregateResponse, "Each aggregate's value, or why metadata cannot answer it exactly"
    ),
)
async def aggregate(request: Request, runtime: RuntimeDep, pretty: PrettyDep) -> Response:
    body = await parse_body(request, AggregateRequest)
    result = await until_disconnected(request, lambda cancel: aggregate_scan(runtime, body, cancel))
    return json_response(result, pretty=pretty)


def aggregate_scan(runtime: Runtime, body: AggregateRequest, cancel: Cancellation | None = None) -> dict[str, Any]:
    """Plan the scan's files with their stats (admitted as a plan) and aggregate them (a worker thread)."""
    cancel = cancel or Cancellation()
    aggregates = parse_aggregates(body.aggregates)
    table = runtime.load_table(body.table, body.metadata_location)
    scan = body.to_scan(combine=False, keep_stats=True)
    files = runtime.planner.estimated_files(choose_snapshot(table.metadata, scan.snapshot).snapshot)
    with runtime.plans.admission.admitted(files, cancel):
        plan = runtime.planner.plan(table, scan, cancel)
        values = evaluate_aggregates(
            plan.files, plan.schema, table.metadata.properties, aggregates, body.case_sensitive
        )
    return encode_aggregates(plan, values)


def encode_aggregates(plan: ScanPlan, values: list[AggregateValue]) -> dict[str, Any]:
    """The /aggregate response: each aggregate's name, Iceberg type, JSON single value (null when null or
    not exact), whether it is exact and why not."""
    out = []
    for v in values:
        entry: dict[str, Any] = {
            "name": v.aggregate.name,
            "type": v.type.to_json(),
            "value": _json_value(v),
            "exact": v.exact,
        }
        if v.reason is not None:
            entry["reason"] = v.reason
        out.append(entry)
    return {
        "table": plan.table.name,
        "snapshot-id": plan.snapshot.snapshot_id if plan.snapshot is not None else None,
        "exact": all(v.exact for v in values),
        "data-files": len(plan.files) if plan.files is not None else 0,
        "aggregates": out,
        "planning-time-ms": round(plan.metrics.total_planning_ms, 3),
    }


def _json_value(v: AggregateValue) -> Any:
    value = to_json_value(v.type, v.value)
    if isinstance(value, float) and not math.isfinite(value):  # as Jackson writes them: "NaN", "Infinity"
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value

"""The native endpoints: POST /plan (bin-packed CombinedScanTasks), health, metrics, and the debugging
views of a table (snapshots, refs, history) for curl."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import PlainTextResponse, Response

from planner_service.api.plan_json import plan_to_json
from planner_service.api.responses import json_response
from planner_service.api.wire import PlanRequest, json_body_schema, parse_body
from planner_service.catalog.base import LoadedTable
from planner_service.errors import BadRequestError
from planner_service.expressions.expression import TRUE, Expression
from planner_service.expressions.expression_json import expression_from_json
from planner_service.expressions.filter_string import parse_filter
from planner_service.metadata.snapshot_choice import SnapshotChoice
from planner_service.planning.planner import ScanPlan, ScanRequest
from planner_service.planning.projection import project_schema, referenced_field_ids
from planner_service.runtime import Runtime

router = APIRouter()


def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def is_pretty(pretty: Annotated[str | None, Query(description="indent the JSON (any value but false)")] = None) -> bool:
    return pretty is not None and pretty.lower() not in ("false", "0", "no")


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
PrettyDep = Annotated[bool, Depends(is_pretty)]


def row_filter_of(value: Any) -> Expression:
    """A filter string or a REST JSON expression (None: no filter)."""
    if value is None:
        return TRUE
    if isinstance(value, str):
        return parse_filter(value)
    return expression_from_json(value)


def plan_response(runtime: Runtime, body: PlanRequest) -> dict[str, Any]:
    """Resolve, plan and encode (CPU-bound: runs in a worker thread)."""
    if body.start_snapshot_id is not None or body.end_snapshot_id is not None:
        raise BadRequestError("Incremental scans (start-snapshot-id, end-snapshot-id) are not supported yet")
    table = runtime.load_table(body.table, body.metadata_location)
    row_filter = row_filter_of(body.filter)
    request = ScanRequest(
        SnapshotChoice(body.snapshot_id, body.as_of_timestamp_ms, body.ref),
        body.options,
        row_filter,
        body.case_sensitive,
        explain=body.explain,
    )
    plan = runtime.planner.plan(table, request)
    record_plan_metrics(runtime, plan)
    out = plan_to_json(plan)
    if body.select is not None:
        filter_ids = referenced_field_ids(table.metadata.schema, row_filter, body.case_sensitive)
        out["schema"] = project_schema(plan.schema, body.select, filter_ids, body.case_sensitive).to_json()
    return out


def record_plan_metrics(runtime: Runtime, plan: ScanPlan) -> None:
    m, registry = plan.metrics, runtime.metrics
    for stage, ms in m.stage_ms.items():
        registry.observe("scan_planner_stage_seconds", "Planning time per stage", ms / 1000, stage=stage)
    registry.inc("scan_planner_data_files_total", "Data files planned", m.scanned_data_files, outcome="planned")
    registry.inc("scan_planner_data_files_total", "Data files planned", m.skipped_data_files, outcome="skipped")
    registry.inc("scan_planner_manifests_total", "Data manifests", m.total_data_manifests - m.skipped_data_manifests,
                 outcome="read")  # fmt: skip
    registry.inc("scan_planner_manifests_total", "Data manifests", m.skipped_data_manifests, outcome="skipped")


@router.post(
    "/plan",
    tags=["planning"],
    summary="Plan a scan: bin-packed CombinedScanTasks",
    openapi_extra=json_body_schema(PlanRequest),
)
async def plan(request: Request, runtime: RuntimeDep, pretty: PrettyDep) -> Response:
    body = await parse_body(request, PlanRequest)
    return json_response(await run_in_threadpool(plan_response, runtime, body), pretty=pretty)


@router.get("/health", tags=["operations"])
async def health(runtime: RuntimeDep) -> Response:
    return json_response({"status": "ok", "catalog-sources": len(runtime.catalog.sources)})


@router.get("/metrics", tags=["operations"], response_class=PlainTextResponse)
async def metrics(runtime: RuntimeDep) -> Response:
    gauges = []
    for name, cache in runtime.planner.caches().items():
        stats = cache.stats
        for field, help_text in (("hits", "Cache hits"), ("misses", "Cache misses"), ("entries", "Cached entries"),
                                 ("bytes", "Estimated cached bytes"), ("evictions", "Evictions")):  # fmt: skip
            gauges.append((f"scan_planner_cache_{field}", help_text, float(getattr(stats, field)), {"cache": name}))
    text = runtime.metrics.render(gauges)
    return Response(text, media_type="text/plain; version=0.0.4")


# --- Debugging views -----------------------------------------------------------------------------------


def _table(runtime: Runtime, name: str) -> LoadedTable:
    return runtime.load_table(name)


@router.get("/tables/{name}/snapshots", tags=["debugging"], summary="A table's snapshots, oldest first")
async def snapshots(name: str, runtime: RuntimeDep, pretty: PrettyDep) -> Response:
    table = await run_in_threadpool(_table, runtime, name)
    meta = table.metadata
    body = {
        "table": table.name,
        "metadata-location": table.metadata_location,
        "current-snapshot-id": meta.current_snapshot_id,
        "snapshots": [s.to_json() for s in sorted(meta.snapshots.values(), key=lambda s: s.sequence_number)],
    }
    return json_response(body, pretty=pretty)


@router.get("/tables/{name}/refs", tags=["debugging"], summary="A table's branches and tags")
async def refs(name: str, runtime: RuntimeDep, pretty: PrettyDep) -> Response:
    table = await run_in_threadpool(_table, runtime, name)
    body = {"table": table.name, "refs": {n: r.to_json() for n, r in sorted(table.metadata.refs.items())}}
    return json_response(body, pretty=pretty)


@router.get("/tables/{name}/history", tags=["debugging"], summary="The main branch's snapshot log")
async def history(name: str, runtime: RuntimeDep, pretty: PrettyDep) -> Response:
    table = await run_in_threadpool(_table, runtime, name)
    meta = table.metadata
    entries = []
    for e in meta.snapshot_log:
        snap = meta.snapshots.get(e.snapshot_id)
        entries.append({
            "timestamp-ms": e.timestamp_ms,
            "snapshot-id": e.snapshot_id,
            "operation": snap.summary.get("operation") if snap else None,
            "parent-snapshot-id": snap.parent_snapshot_id if snap else None,
        })  # fmt: skip
    return json_response({"table": table.name, "history": entries}, pretty=pretty)

"""The native endpoints: POST /plan (bin-packed CombinedScanTasks), health, metrics, and the debugging
views of a table (snapshots, refs, history) for curl."""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import asdict
from functools import partial
from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from planner_service.access.policy import Privilege
from planner_service.access.table_access import TableAccess
from planner_service.api.auth import access_of
from planner_service.api.dependencies import PlanIdPath, PrettyDep, RuntimeDep, TableNamePath, TaskIndexPath
from planner_service.api.disconnect import until_disconnected
from planner_service.api.documented import PLAN_ID, PLAN_TASK, PLANNING, TABLE, answers, link
from planner_service.api.encoding import compressed, negotiate, rendered_ahead
from planner_service.api.held_responses import HeldStreamingResponse
from planner_service.api.request_models import PlanRequest, json_body_schema, parse_body
from planner_service.api.response_models import DeferredPlan, HealthStatus, PlanResponse, described
from planner_service.api.responses import json_response
from planner_service.catalog.base import LoadedTable
from planner_service.errors import ForbiddenError
from planner_service.metrics import (
    ACCESS_RELOADS,
    CACHE_BYTES,
    CACHE_ENTRIES,
    CACHE_EVICTIONS,
    CACHE_HITS,
    CACHE_MISSES,
    GC_COLLECTIONS,
    GC_FROZEN,
    INDEX_TIER,
    PLAN_MEMORY,
    PLANS_MADE,
    PLANS_RUNNING,
    PLANS_WAITING,
    SPILL_BYTES,
    SPILL_EVICTIONS,
    SPILL_FAILURES,
    SPILL_PLANS,
    Gauge,
)
from planner_service.planning.admission import Cancellation
from planner_service.planning.scan_plan import ScanPlan
from planner_service.service import planning_entrance as entrance
from planner_service.service.cached_plan import CachedPlan
from planner_service.service.runtime import Runtime
from planner_service.wire.data_file_rows import CHUNK_ROWS
from planner_service.wire.json_indent import indented
from planner_service.wire.native_tasks_json import TaskRange, encode_tasks
from planner_service.wire.plan_json import ESTIMATES_PER_CHUNK, encode_deferred, encode_plan

router = APIRouter()
MAX_KEPT_BODY = 64 * 1024 * 1024  # larger bodies are re-encoded from the cached plan
AHEAD = 2  # chunks of a streamed answer rendered ahead of the socket
BYTES_PER_ROW = 512  # a data file's or task's JSON, most of them (410 B measured)
BYTES_PER_ESTIMATE = 40  # a task's estimates in a deferred answer: its size and rows (and key), in JSON


def plan_response(
    runtime: Runtime,
    body: PlanRequest,
    pretty: bool,
    coding: str | None,
    if_none_match: str | None,
    access: TableAccess,
    cancel: Cancellation | None = None,
) -> Response:
    """Resolve, plan (or find the plan in the plan-result cache) and answer (CPU-bound: a worker thread)."""
    decided = entrance.decide(runtime, access, body.table, body.metadata_location, body.to_scan())
    plan_id, credentials = decided.plan_id, decided.credentials
    limit = body.inline_task_limit if body.inline_task_limit is not None else runtime.settings.inline_task_limit
    tag = hashlib.sha256(plan_id.encode()).hexdigest()[:32]
    etag = f'W/"{tag}-{limit}{"" if body.task_estimates else "-counted"}{"-pretty" if pretty else ""}"'
    # made anew for each answer, never kept nor answered 304: one with credentials, and a restricted plan's,
    # which carries presigned URLs made for it (io/presigning.py) that a kept body would outlive
    reusable = not body.explain and not credentials and decided.request.scan.restriction is None
    if reusable and if_none_match is not None and etag in _etags(if_none_match):
        entrance.not_modified(access, decided)
        return Response(status_code=304, headers={"ETag": etag})
    result, _ = entrance.plan(
        runtime, access, decided.table, decided.request, explain=body.explain, cancel=cancel, inline_limit=limit
    )
    tasks = result.plan.combined
    if tasks is not None and len(tasks) > limit:
        deferred = encode_deferred(result.plan, plan_id, credentials, body.task_estimates)
        return deferred_response(runtime, result, deferred, pretty, coding, etag)
    key = f"{plan_id}|{limit}|{pretty}|{coding}"
    bodies = runtime.plans.bodies
    stored = bodies.get(key) if reusable else None
    if stored is not None:  # (held by the body cache, which counts it)
        return _encoded_response(stored, coding, etag)
    chunks = encode_plan(result.plan, plan_id, credentials, entrance.file_urls(runtime, access, result.plan))
    if pretty:
        chunks = indented(chunks)
    kept = min(MAX_KEPT_BODY, bodies.max_bytes) if reusable else 0  # (a copy for the body cache, while it fits)
    return streamed_response(
        runtime,
        result,
        _teed(compressed(rendered_ahead(chunks, AHEAD), coding), partial(bodies.put, key) if kept else None, kept),
        _headers(coding, etag),
        streamed_bytes(result.plan) + kept,
    )


def streamed_bytes(plan: ScanPlan) -> int:
    """What a streamed answer holds besides its plan: the chunks rendered ahead, the one being compressed."""
    rows = (len(plan.files) if plan.files is not None else 0) + (len(plan.combined) if plan.combined is not None else 0)
    return 4096 + min(rows, (AHEAD + 2) * CHUNK_ROWS) * BYTES_PER_ROW


def streamed_response(
    runtime: Runtime, result: CachedPlan, body: Iterator[bytes], headers: dict[str, str], rendering_bytes: int
) -> Response:
    """A streamed answer of `result`, holding in the plan memory budget until sent what it renders ahead
    (`rendering_bytes`) and the plan itself when nothing else accounts for it (no cache keeps it)."""
    plan_bytes = 0 if runtime.plans.accounts_for(result.request.cache_id) else result.weight
    release = runtime.plans.admission.hold(plan_bytes + rendering_bytes)
    return HeldStreamingResponse(body, headers=headers, media_type="application/json", release=release)


def deferred_response(
    runtime: Runtime, result: CachedPlan, chunks: Iterator[bytes], pretty: bool, coding: str | None, etag: str | None
) -> Response:
    """A plan answered by id (encode_deferred): whole when its estimates fit a chunk, else streamed."""
    tasks = len(result.plan.combined) if result.plan.combined is not None else 0
    rendering = 4096 + (AHEAD + 2) * ESTIMATES_PER_CHUNK * BYTES_PER_ESTIMATE
    return _chunked(runtime, result, chunks, pretty, coding, etag, tasks <= ESTIMATES_PER_CHUNK, rendering)


def tasks_response(
    runtime: Runtime,
    access: TableAccess,
    result: CachedPlan,
    plan_id: str,
    tasks: TaskRange,
    pretty: bool,
    coding: str | None,
) -> Response:
    """Tasks of a plan by id: a chunk's pieces in one body, as they come (uncompressed: an executor's own task
    is small and wanted at once); more (a task of every file, say) streamed and compressed as the client
    accepts. A restricted plan's carry presigned URLs of their files, made for this answer."""
    urls = entrance.file_urls(runtime, access, result.plan, tasks.files(result.plan))
    chunks = encode_tasks(result.plan, plan_id, result.reader_context, tasks, urls)
    small = tasks.last - tasks.first <= CHUNK_ROWS
    rendering = 4096 + (AHEAD + 2) * CHUNK_ROWS * BYTES_PER_ROW
    return _chunked(runtime, result, chunks, pretty, None if small else coding, None, small, rendering)


def _chunked(
    runtime: Runtime,
    result: CachedPlan,
    chunks: Iterator[bytes],
    pretty: bool,
    coding: str | None,
    etag: str | None,
    whole: bool,
    rendering_bytes: int,
) -> Response:
    """An answer of `result` rendered in `chunks` (indented with `pretty`, compressed with `coding`): `whole`,
    one body of known length, else streamed (streamed_response)."""
    if pretty:
        chunks = indented(chunks)
    headers = _headers(coding, etag)
    if whole:
        return Response(b"".join(compressed(chunks, coding)), headers=headers, media_type="application/json")
    return streamed_response(
        runtime, result, compressed(rendered_ahead(chunks, AHEAD), coding), headers, rendering_bytes
    )


def _etags(header: str) -> set[str]:
    return {tag.strip() for tag in header.split(",")}


def _headers(coding: str | None, etag: str | None = None) -> dict[str, str]:
    headers = {"Vary": "Accept-Encoding"} | ({"ETag": etag} if etag is not None else {})
    if coding is not None:
        headers["Content-Encoding"] = coding
    return headers


def _encoded_response(encoded: bytes, coding: str | None, etag: str) -> Response:
    return Response(encoded, headers=_headers(coding, etag), media_type="application/json")


def _teed(chunks: Iterator[bytes], keep: Callable[[bytes], None] | None, limit: int) -> Iterator[bytes]:
    """`chunks`, and once all have passed, their concatenation to `keep` (the body cache) if at most `limit`."""
    copy: list[bytes] | None = [] if keep is not None else None
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if copy is not None and size > limit:
            copy = None
        if copy is not None:
            copy.append(chunk)
        yield chunk
    if copy is not None and keep is not None:
        keep(b"".join(copy))


_PLAN_ID = "$response.body#/plan-id"
_BY_ID_LINKS = {
    "tasks": link("planTasks", "the plan's first task, by range", plan_id=_PLAN_ID),
    "task": link("planTask", "the plan's first task, by index", plan_id=_PLAN_ID, index=0),
}


@router.post(
    "/plan",
    tags=["planning"],
    summary="Plan a scan: bin-packed CombinedScanTasks",
    operation_id="plan",
    openapi_extra=json_body_schema(PlanRequest),
    responses=answers(
        {
            **described(
                PlanResponse,
                "The plan: its tasks inline, or by id beyond the inline task limit",
                {"ETag": "the plan's tag, for If-None-Match"},
                {"by-id": link("planById", "the plan again, by its id", plan_id=_PLAN_ID), **_BY_ID_LINKS},
            ),
            **described(None, "Not modified: If-None-Match names the plan's ETag", status=304),
        },
        PLANNING,
        body=True,
    ),
)
async def plan(request: Request, runtime: RuntimeDep, pretty: PrettyDep) -> Response:
    body = await parse_body(request, PlanRequest)
    coding = negotiate(request.headers.get("accept-encoding"))
    if_none_match = request.headers.get("if-none-match")
    access = access_of(request)
    return await until_disconnected(
        request, lambda cancel: plan_response(runtime, body, pretty, coding, if_none_match, access, cancel)
    )


@router.get(
    "/plans/{plan_id}",
    tags=["planning"],
    summary="A plan by id: reader context and per-task estimates",
    operation_id="planById",
    responses=answers(
        described(DeferredPlan, "The plan's reader context and per-task estimates", links=_BY_ID_LINKS), PLAN_ID
    ),
)
async def plan_by_id(plan_id: PlanIdPath, request: Request, runtime: RuntimeDep, pretty: PrettyDep) -> Response:
    access = access_of(request)
    coding = negotiate(request.headers.get("accept-encoding"))

    def answer(cancel: Cancellation) -> Response:
        opened = runtime.open_plan_id(plan_id, access)
        result = entrance.plan_by_id(runtime, access, opened, cancel)
        entrance.audit_answer(access, opened.table, result)
        deferred = encode_deferred(result.plan, plan_id, runtime.plan_credentials(opened, access))
        return deferred_response(runtime, result, deferred, pretty, coding, None)

    return await until_disconnected(request, answer)


@router.get(
    "/plans/{plan_id}/tasks",
    tags=["planning"],
    summary="Tasks start..end-1 of a plan, self-contained",
    operation_id="planTasks",
    responses=answers({}, PLAN_TASK),
)
async def plan_tasks(
    plan_id: PlanIdPath,
    request: Request,
    runtime: RuntimeDep,
    pretty: PrettyDep,
    start: Annotated[int, Query(ge=0, description="the first task")] = 0,
    end: Annotated[int | None, Query(ge=1, description="one past the last task (default: start + 1)")] = None,
) -> Response:
    access = access_of(request)
    coding = negotiate(request.headers.get("accept-encoding"))

    def work() -> Response:
        result = entrance.plan_by_id(runtime, access, runtime.open_plan_id(plan_id, access))
        return tasks_response(runtime, access, result, plan_id, TaskRange.of(result.plan, start, end), pretty, coding)

    return await run_in_threadpool(work)


@router.get(
    "/plans/{plan_id}/tasks/{index}",
    tags=["planning"],
    summary="Task `index` of a plan, self-contained",
    operation_id="planTask",
    responses=answers({}, PLAN_TASK),
)
async def plan_task(
    plan_id: PlanIdPath, index: TaskIndexPath, request: Request, runtime: RuntimeDep, pretty: PrettyDep
) -> Response:
    access = access_of(request)
    coding = negotiate(request.headers.get("accept-encoding"))

    def work() -> Response:
        result = entrance.plan_by_id(runtime, access, runtime.open_plan_id(plan_id, access))
        tasks = TaskRange.of(result.plan, index, None)
        return tasks_response(runtime, access, result, plan_id, tasks, pretty, coding)

    return await run_in_threadpool(work)


@router.get(
    "/health",
    tags=["operations"],
    responses={  # (answered before the doors: no token, no cross-site guard)
        **described(HealthStatus, "The service takes work"),
        **described(
            HealthStatus, "draining: the service is stopping", {"Retry-After": "seconds: ask another"}, status=503
        ),
    },
)
async def health(runtime: RuntimeDep) -> Response:
    """(Answered by the outermost middleware, RequestObserver, before routing: this route documents it.)"""
    return health_response(runtime)


@router.head("/health", include_in_schema=False)  # (so a 405 of /health names HEAD, which the middleware answers)
async def health_head(runtime: RuntimeDep) -> Response:
    return health_response(runtime)


def health_response(runtime: Runtime) -> Response:
    """200 `ok` while the service takes work; 503 `draining` once it is stopping (service/lifecycle.py)."""
    draining = runtime.lifecycle.draining
    response = json_response(
        {"status": "draining" if draining else "ok", "catalog-sources": len(runtime.catalog.sources)}
    )
    if draining:
        response.status_code = 503
        response.headers["Retry-After"] = "1"
    return response


_PROMETHEUS = {"description": "Prometheus text", "content": {"text/plain": {"schema": {"type": "string"}}}}


@router.get(
    "/metrics",
    tags=["operations"],
    response_class=Response,  # (no default JSON answer: the errors are JSON, the metrics text)
    responses=answers({200: _PROMETHEUS}, (ForbiddenError,)),
)
async def metrics(request: Request, runtime: RuntimeDep) -> Response:
    """Prometheus metrics; with a grants policy, for principals with the metrics privilege only."""
    access_of(request).require_service(Privilege.METRICS)
    gauges: list[Gauge] = []
    for name, cache in runtime.caches().items():
        stats = cache.stats
        for metric, value in (
            (CACHE_HITS, stats.hits),
            (CACHE_MISSES, stats.misses),
            (CACHE_ENTRIES, stats.entries),
            (CACHE_BYTES, stats.bytes),
            (CACHE_EVICTIONS, stats.evictions),
        ):
            gauges.append((metric, float(value), {"cache": name}))
    plans = runtime.plans
    gauges.append((PLANS_MADE, float(plans.made), {}))
    admitted = plans.admission.state()
    gauges.append((PLANS_RUNNING, float(admitted["running"]), {}))
    gauges.append((PLANS_WAITING, float(admitted["waiting"]), {}))
    gauges.append((PLAN_MEMORY, float(admitted["bytes"] - admitted["held-bytes"]), {"held_by": "plans"}))
    gauges.append((PLAN_MEMORY, float(admitted["held-bytes"]), {"held_by": "answers"}))
    if (spill := plans.spill) is not None:
        for metric, value in (
            (SPILL_PLANS, spill.spilled),
            (SPILL_BYTES, spill.bytes),
            (SPILL_EVICTIONS, spill.evicted),
            (SPILL_FAILURES, spill.failed),
        ):
            gauges.append((metric, float(value), {}))
    if (tier := runtime.planner.manifests.tier) is not None:
        gauges += [(INDEX_TIER, float(value), {"what": what}) for what, value in asdict(tier.stats).items()]
        if tier.store is not None:
            shared = asdict(tier.store.stats).items()
            gauges += [(INDEX_TIER, float(value), {"what": f"store_{what}"}) for what, value in shared]
    for outcome, count in request.app.state.access.reloads.items():
        gauges.append((ACCESS_RELOADS, float(count), {"outcome": outcome}))
    gauges.append((GC_FROZEN, float(gc.get_freeze_count()), {}))
    for generation, collector in enumerate(gc.get_stats()):
        gauges.append((GC_COLLECTIONS, float(collector["collections"]), {"generation": str(generation)}))
    text = runtime.metrics.render(gauges)
    return Response(text, media_type="text/plain; version=0.0.4")


# --- Debugging views -----------------------------------------------------------------------------------


def _table(runtime: Runtime, name: str, request: Request) -> LoadedTable:
    return runtime.load_table(name, None, access_of(request), Privilege.READ_METADATA)


@router.get(
    "/tables/{name}/snapshots",
    tags=["debugging"],
    summary="A table's snapshots, oldest first",
    responses=answers({}, TABLE),
)
async def snapshots(name: TableNamePath, request: Request, runtime: RuntimeDep, pretty: PrettyDep) -> Response:
    table = await run_in_threadpool(_table, runtime, name, request)
    meta = table.metadata
    body = {
        "table": table.name,
        "metadata-location": table.metadata_location,
        "current-snapshot-id": meta.current_snapshot_id,
        "snapshots": [s.to_json() for s in sorted(meta.snapshots.values(), key=lambda s: s.sequence_number)],
    }
    return json_response(body, pretty=pretty)


@router.get(
    "/tables/{name}/refs",
    tags=["debugging"],
    summary="A table's branches and tags",
    responses=answers({}, TABLE),
)
async def refs(name: TableNamePath, request: Request, runtime: RuntimeDep, pretty: PrettyDep) -> Response:
    table = await run_in_threadpool(_table, runtime, name, request)
    body = {"table": table.name, "refs": {n: r.to_json() for n, r in sorted(table.metadata.refs.items())}}
    return json_response(body, pretty=pretty)


@router.get(
    "/tables/{name}/history",
    tags=["debugging"],
    summary="The main branch's snapshot log",
    responses=answers({}, TABLE),
)
async def history(name: TableNamePath, request: Request, runtime: RuntimeDep, pretty: PrettyDep) -> Response:
    table = await run_in_threadpool(_table, runtime, name, request)
    meta = table.metadata
    entries = []
    for e in meta.snapshot_log:
        snap = meta.snapshots.get(e.snapshot_id)
        entries.append(
            {
                "timestamp-ms": e.timestamp_ms,
                "snapshot-id": e.snapshot_id,
                "operation": snap.summary.get("operation") if snap else None,
                "parent-snapshot-id": snap.parent_snapshot_id if snap else None,
            }
        )
    return json_response({"table": table.name, "history": entries}, pretty=pretty)

"""Iceberg REST scan planning (spec 1.11 forms): plan, poll, cancel, fetch plan tasks.

POST .../plan answers with Java's planFiles() tasks (unsplit: REST has no CombinedScanTask):
- `completed` with the first `plan_task_page_size` file scan tasks inline, and one opaque plan-task token
  per further page, all listed at once so a client may fetch them in parallel (POST .../tasks);
- `submitted` when the snapshot has more than `async_plan_min_files` data files: the plan runs in the
  background and GET .../plan/{plan-id} answers `submitted`, `completed` (as above), `failed` or
  `cancelled`; DELETE cancels it.
Every response lists each delete file its tasks use once, in its own `delete-files`, and tasks refer to
them by index (so no response carries delete files without the tasks that use them, which clients reject).
Plans and their pages live in a PlanStore (service/plan_store.py) for `plan_ttl_seconds`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request
from pydantic import ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from planner_service.api.auth import client_of
from planner_service.api.dependencies import PrettyDep, RuntimeDep
from planner_service.api.disconnect import until_disconnected
from planner_service.api.errors import error_body
from planner_service.api.response_models import RestPlanningResult, described, json_route
from planner_service.api.responses import json_response
from planner_service.api.rest_routes import V1Routes, table_identifier
from planner_service.api.wire import WireModel, json_body_schema, parse_body
from planner_service.catalog.base import LoadedTable, TableIdentifier
from planner_service.errors import BadRequestError, PlannerError
from planner_service.expressions.binding import bind
from planner_service.expressions.expression_json import expression_from_json, expression_to_json
from planner_service.metadata.snapshot_choice import choose_appends, choose_snapshot
from planner_service.metadata.types import Schema
from planner_service.planning.admission import Cancellation
from planner_service.planning.scan_request import ScanRequest, scan_request
from planner_service.service.plan_store import PlannedTasks, PlanRecord, PlanStatus, PlanStore
from planner_service.service.runtime import Runtime
from planner_service.wire.content_file_json import ContentFileEncoder, DeleteFileTable

log = logging.getLogger(__name__)

BACKGROUND_PLANS = 2  # submitted plans planned at once (each also reads manifests in parallel)
# With min-rows-requested, whether the plan stopped at the first files that hold the rows: a header, since the
# spec's results have no such field and clients may reject fields they do not know (headers they ignore)
CUT_SHORT_HEADER = "Scan-Planner-Cut-Short"
_CUT_SHORT_DOC = {
    CUT_SHORT_HEADER: "completed plans with min-rows-requested: true when the file scan tasks are only the first "
    "files (Java's planFiles() order) that surely hold the rows, false when they are all the files"
}

# --- Wire models ------------------------------------------------------------------------------------------


class RestWireModel(WireModel):
    """Strict types (a string is no snapshot id), but unknown fields are ignored: the spec adds optional
    hints over time, and Iceberg's own parsers ignore what they do not know."""

    model_config = ConfigDict(extra="ignore", strict=True)


class PlanTableScanRequest(RestWireModel):
    snapshot_id: int | None = Field(None, description="the snapshot to scan; default: the current one")
    select: list[str] | None = Field(None, description="column names; checked, they do not change the files")
    filter: Any = Field(None, description="a REST JSON expression")
    case_sensitive: bool = True
    use_snapshot_schema: bool = Field(False, description="accepted; the filter binds to the current schema")
    start_snapshot_id: int | None = Field(None, description="an incremental append scan: after this snapshot")
    end_snapshot_id: int | None = Field(None, description="an incremental append scan: up to this snapshot")
    stats_fields: list[str] | None = Field(
        None, description="columns whose value/null/NaN counts and lower/upper bounds the data files carry"
    )
    min_rows_requested: int | None = Field(
        None, ge=0, description="planning may stop once the files that surely match hold this many rows"
    )


class FetchScanTasksRequest(RestWireModel):
    plan_task: str = Field(description="a token from `plan-tasks`")


# --- Planning (worker threads) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scan:
    """A checked request: what planning needs, and the size estimate that decides sync or async."""

    table: LoadedTable
    request: ScanRequest
    estimated_files: int
    stats_ids: frozenset[int] | None = None  # stats-fields, as field ids


def prepare_scan(runtime: Runtime, identifier: TableIdentifier, body: PlanTableScanRequest) -> _Scan:
    """Load the table and check the request, so that a bad one is a 4xx now, not a failed plan later."""
    _check_incremental(body)
    if isinstance(body.filter, str):
        expression_from_json(body.filter)  # a REST filter is a JSON expression: this names the string refused
    stats = body.stats_fields is not None
    request = scan_request(
        snapshot_id=body.snapshot_id,
        start_snapshot_id=body.start_snapshot_id,
        end_snapshot_id=body.end_snapshot_id,
        filter=body.filter,
        case_sensitive=body.case_sensitive,
        limit=body.min_rows_requested,
        combine=False,
        keep_stats=stats,
    )
    # select is only checked: REST answers are file scan tasks, which carry no schema
    table = runtime.catalog.load_table(identifier)
    meta = table.metadata
    appends = request.appends
    chosen = choose_snapshot(meta, request.snapshot) if appends is None else choose_appends(meta, appends)
    bind(meta.schema, request.row_filter, body.case_sensitive)  # Java binds to the current schema, as planning will
    _check_select(body.select, (chosen.schema, meta.schema), body.case_sensitive)
    stats_ids = _stats_ids(body.stats_fields, meta.schema, body.case_sensitive)
    return _Scan(table, request, runtime.planner.estimated_files(chosen.snapshot), stats_ids)  # (planFiles)


def _stats_ids(names: list[str] | None, schema: Schema, case_sensitive: bool) -> frozenset[int] | None:
    """stats-fields as field ids of the current schema (Java's includeColumnStats); unknown names are a 400."""
    if names is None:
        return None
    ids = set()
    for name in names:
        found = schema.find_field_by_name(name, case_sensitive)
        if found is None:
            raise BadRequestError(f"Cannot find field '{name}' for stats-fields")
        ids.add(found.field_id)
    return frozenset(ids)


def _check_incremental(body: PlanTableScanRequest) -> None:
    """The spec: a point-in-time scan (snapshot-id) or an incremental one (start-snapshot-id exclusive,
    end-snapshot-id inclusive, both given), never both: an incremental append scan, as Java plans one."""
    start, end = body.start_snapshot_id, body.end_snapshot_id
    if start is None and end is None:
        return
    if body.snapshot_id is not None:
        raise BadRequestError("Invalid scan: give snapshot-id or start-snapshot-id/end-snapshot-id, not both")
    if start is None or end is None:
        raise BadRequestError("Invalid scan: an incremental scan needs both start-snapshot-id and end-snapshot-id")


def _check_select(select: list[str] | None, schemas: Sequence[Schema], case_sensitive: bool) -> None:
    """Each name must exist in the scan's schema or the current one (PyIceberg selects by the snapshot's
    schema without setting use-snapshot-schema)."""
    for name in select or ():
        if name != "*" and all(s.find_field_by_name(name, case_sensitive) is None for s in schemas):
            raise BadRequestError(f"Cannot select unknown column '{name}'")


def plan_scan(runtime: Runtime, scan: _Scan, cancel: Cancellation, background: bool = False) -> PlannedTasks:
    """Plan when admitted (the native API's admission: slots, memory budget, bounded queue); a plan made in
    the background (submitted, already accepted) waits for its turn without a deadline."""
    with runtime.plans.admission.admitted(scan.estimated_files, cancel, patient=background):
        plan = runtime.planner.plan(scan.table, scan.request, cancel)
    runtime.record_plan(plan)
    meta = scan.table.metadata
    files = plan.files
    tasks = files.to_objects(with_stats=True) if scan.stats_ids is not None and files is not None else plan.file_tasks
    return PlannedTasks(
        tasks,
        meta.specs,
        meta.schema,
        runtime.settings.plan_task_page_size,
        scan.stats_ids,
        runtime.storage_credentials(scan.table),
        plan.metrics.cut_short,
    )


def plan_now(
    runtime: Runtime, store: PlanStore, identifier: TableIdentifier, scan: _Scan, owner: str, cancel: Cancellation
) -> tuple[PlanRecord, dict[str, Any]]:
    """Plan, keep the pages, and answer `completed` with the first one."""
    record = store.add_completed(identifier, plan_scan(runtime, scan, cancel), owner)
    return record, completed_body(record)


# --- JSON -------------------------------------------------------------------------------------------------


def encode_page(result: PlannedTasks, number: int) -> dict[str, Any]:
    """One page as the spec's ScanTasks: `delete-files` and `file-scan-tasks` that index into them."""
    encoder = ContentFileEncoder(result.specs, result.schema, result.stats_ids)
    deletes = DeleteFileTable(encoder)

    tasks = []
    for task in result.page(number):
        out: dict[str, Any] = {"data-file": encoder.encode(task.file)}
        if task.deletes:  # Java's RESTFileScanTaskParser leaves out an empty list
            out["delete-file-references"] = [deletes.ref(d) for d in task.deletes]
        out["residual-filter"] = expression_to_json(task.residual)
        tasks.append(out)
    return {"delete-files": deletes.files, "file-scan-tasks": tasks}


def completed_body(record: PlanRecord) -> dict[str, Any]:
    assert record.result is not None
    body: dict[str, Any] = {"status": PlanStatus.COMPLETED.value, "plan-id": record.plan_id}
    body.update(encode_page(record.result, 0))
    body["plan-tasks"] = record.task_tokens()
    if record.result.storage_credentials:  # (the 1.11 spec's CompletedPlanningResult field)
        body["storage-credentials"] = record.result.storage_credentials
    return body


def completed_response(record: PlanRecord, body: dict[str, Any], pretty: bool) -> Response:
    """A completed plan's answer; with min-rows-requested, whether it was cut short (CUT_SHORT_HEADER)."""
    response = json_response(body, pretty=pretty)
    cut_short = record.result.cut_short if record.result is not None else None
    if cut_short is not None:
        response.headers[CUT_SHORT_HEADER] = "true" if cut_short else "false"
    return response


def _failed_body(error: PlannerError | None) -> dict[str, Any]:
    error = error or PlannerError("Planning failed")
    return {"status": PlanStatus.FAILED.value, **error_body(error.error_type, error.message, error.status_code)}


# --- Background planning ----------------------------------------------------------------------------------


class BackgroundPlans:
    """Plans submitted scans in worker threads, `limit` at a time, and records the outcome in the store.
    A plan cancelled (DELETE) stops at its next step, its result dropped."""

    def __init__(self, store: PlanStore, limit: int) -> None:
        self._store = store
        self._slots = asyncio.Semaphore(limit)
        self._tasks: set[asyncio.Task[None]] = set()
        self._cancels: dict[str, Cancellation] = {}

    def start(self, plan_id: str, work: Callable[[Cancellation], PlannedTasks]) -> None:
        self._cancels[plan_id] = Cancellation()
        task = asyncio.get_running_loop().create_task(self._run(plan_id, work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def cancel(self, plan_id: str) -> None:
        cancel = self._cancels.get(plan_id)
        if cancel is not None:
            cancel.cancel()

    async def _run(self, plan_id: str, work: Callable[[Cancellation], PlannedTasks]) -> None:
        cancel = self._cancels[plan_id]
        try:
            await self._plan(plan_id, work, cancel)
        finally:
            self._cancels.pop(plan_id, None)

    async def _plan(self, plan_id: str, work: Callable[[Cancellation], PlannedTasks], cancel: Cancellation) -> None:
        async with self._slots:
            if not self._store.is_submitted(plan_id):  # cancelled or dropped while it waited
                return
            try:
                result = await run_in_threadpool(work, cancel)
            except PlannerError as exc:
                self._store.fail(plan_id, exc)
            except Exception as exc:
                log.exception("background planning failed", extra={"plan-id": plan_id})
                message = f"Internal error ({type(exc).__name__}); the service log has the details"
                self._store.fail(plan_id, PlannerError(message))
            else:
                self._store.complete(plan_id, result)

    async def close(self) -> None:
        for cancel in self._cancels.values():  # the threads stop at their plans' next step
            cancel.cancel()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@dataclass(frozen=True)
class ScanPlanning:
    store: PlanStore
    background: BackgroundPlans


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    runtime: Runtime = app.state.runtime  # made by the application's lifespan, which runs first
    store = PlanStore(runtime.settings.plan_ttl_seconds)
    state = ScanPlanning(store, BackgroundPlans(store, BACKGROUND_PLANS))
    app.state.scan_planning = state
    try:
        yield
    finally:
        await state.background.close()


async def get_scan_planning(request: Request) -> ScanPlanning:  # a coroutine: never waits for the thread pool
    state: ScanPlanning = request.app.state.scan_planning
    return state


PlanningDep = Annotated[ScanPlanning, Depends(get_scan_planning)]

router = APIRouter(tags=["iceberg-rest-scan-planning"], lifespan=_lifespan)
routes = V1Routes(router)
_TABLE = "/namespaces/{namespace}/tables/{table}"


# --- Routes -----------------------------------------------------------------------------------------------


@routes.route(
    "POST",
    f"{_TABLE}/plan",
    summary="Plan a table scan",
    **json_route(
        PlanTableScanRequest,
        RestPlanningResult,
        "completed (with its first page of tasks) or submitted",
        _CUT_SHORT_DOC,
    ),
)
async def plan_table_scan(
    namespace: str, table: str, request: Request, runtime: RuntimeDep, planning: PlanningDep, pretty: PrettyDep
) -> Response:
    identifier = table_identifier(namespace, table)
    body = await parse_body(request, PlanTableScanRequest)
    owner = client_of(request)
    scan = await run_in_threadpool(prepare_scan, runtime, identifier, body)
    if scan.estimated_files > runtime.settings.async_plan_min_files:
        record = planning.store.submit(identifier, owner)
        planning.background.start(record.plan_id, partial(plan_scan, runtime, scan, background=True))
        return json_response({"status": PlanStatus.SUBMITTED.value, "plan-id": record.plan_id}, pretty=pretty)
    record, answer = await until_disconnected(
        request, lambda cancel: plan_now(runtime, planning.store, identifier, scan, owner, cancel)
    )
    return completed_response(record, answer, pretty)


@routes.route(
    "GET",
    f"{_TABLE}/plan/{{plan_id}}",
    summary="Poll a plan: submitted, completed, failed, cancelled",
    responses=described(
        RestPlanningResult, "The plan's status; completed: the first page of file scan tasks", _CUT_SHORT_DOC
    ),
)
async def fetch_planning_result(
    namespace: str, table: str, plan_id: str, request: Request, planning: PlanningDep, pretty: PrettyDep
) -> Response:
    record = planning.store.get(plan_id, table_identifier(namespace, table), client_of(request))
    if record.status is PlanStatus.COMPLETED:
        return completed_response(record, await run_in_threadpool(completed_body, record), pretty)
    body = _failed_body(record.error) if record.status is PlanStatus.FAILED else {"status": record.status.value}
    return json_response(body, pretty=pretty)


@routes.route("DELETE", f"{_TABLE}/plan/{{plan_id}}", summary="Cancel a plan and drop its tasks", status_code=204)
async def cancel_planning(
    namespace: str, table: str, plan_id: str, request: Request, planning: PlanningDep
) -> Response:
    planning.store.cancel(plan_id, table_identifier(namespace, table), client_of(request))
    planning.background.cancel(plan_id)
    return Response(status_code=204)


@routes.route(
    "POST",
    f"{_TABLE}/tasks",
    summary="Fetch a plan task's file scan tasks",
    openapi_extra=json_body_schema(FetchScanTasksRequest),
)
async def fetch_scan_tasks(
    namespace: str, table: str, request: Request, planning: PlanningDep, pretty: PrettyDep
) -> Response:
    identifier = table_identifier(namespace, table)
    body = await parse_body(request, FetchScanTasksRequest)
    result, number = planning.store.page(body.plan_task, identifier, client_of(request))
    return json_response(await run_in_threadpool(encode_page, result, number), pretty=pretty)

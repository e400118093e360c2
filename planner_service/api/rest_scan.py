"""Iceberg REST scan planning (spec 1.11 forms): plan, poll, cancel, fetch plan tasks.

POST .../plan answers with Java's planFiles() tasks (unsplit: REST has no CombinedScanTask):
- `completed` with the first `plan_task_page_size` file scan tasks inline, and one opaque plan-task token
  per further page, all listed at once so a client may fetch them in parallel (POST .../tasks); or, with a
  `plan_task_fanout`, nested: each answer lists the tokens of at most that many pages below it;
- `submitted` when planning takes longer than `rest_plan_wait_seconds` (or at once when the snapshot has
  more than `async_plan_min_files` data files): the plan goes on in the background and GET
  .../plan/{plan-id} answers `submitted`, `completed` (as above), `failed` or `cancelled`; DELETE cancels it.
Every response lists each delete file its tasks use once, in its own `delete-files`, and tasks refer to
them by index (so no response carries delete files without the tasks that use them, which clients reject).
Plans and their pages live in a PlanStore (service/plan_store.py) for `plan_ttl_seconds`. The planning
itself, now or in the background, is service/rest_plans.py; the request's checks, planning/scan_request.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from planner_service.access.policy import Privilege
from planner_service.api.auth import access_of, client_of
from planner_service.api.dependencies import PlanIdPath, PrettyDep, RestTablePath, RuntimeDep, TableNamespacePath
from planner_service.api.disconnect import cancelled_on_disconnect
from planner_service.api.documented import PLANNING, answers, json_route, link
from planner_service.api.errors import planner_error_body
from planner_service.api.request_models import FetchScanTasksRequest, PlanTableScanRequest, json_body_schema, parse_body
from planner_service.api.response_models import RestPlanningResult, described
from planner_service.api.responses import json_response
from planner_service.api.rest_routes import V1Routes, table_identifier
from planner_service.errors import (
    BadRequestError,
    NoSuchPlanIdError,
    NoSuchPlanTaskError,
    NoSuchTableError,
    PlannerError,
)
from planner_service.metrics import REST_PLAN_FIELDS
from planner_service.planning.planned_files import FileTaskColumns
from planner_service.service.plan_store import PlanStatus, RestPlanState, TaskPages
from planner_service.service.rest_plans import RestPlans, prepare_scan, rest_plans
from planner_service.service.runtime import Runtime
from planner_service.wire.rest_scan_tasks_json import encode_scan_task_rows, encode_scan_tasks

# With min-rows-requested, whether the plan stopped at the first files that hold the rows: a header, since the
# spec's results have no such field and clients may reject fields they do not know (headers they ignore)
CUT_SHORT_HEADER = "Scan-Planner-Cut-Short"
_CUT_SHORT_DOC = {
    CUT_SHORT_HEADER: "completed plans with min-rows-requested: true when the file scan tasks are only the first "
    "files (Java's planFiles() order) that surely hold the rows, false when they are all the files"
}

# --- JSON -------------------------------------------------------------------------------------------------


def encode_page(result: TaskPages, number: int) -> dict[str, Any]:
    """One page as the spec's ScanTasks (a worker thread): rendered from the plan's columns, or from task
    objects where the data files carry stats-fields."""
    begin, end = result.bounds(number)
    if isinstance(result.tasks, FileTaskColumns):
        return encode_scan_task_rows(result.tasks, begin, end, result.specs, result.schema, result.residuals_json)
    return encode_scan_tasks(result.tasks[begin:end], result.specs, result.schema, result.stats_ids)


def completed_body(record: RestPlanState) -> dict[str, Any]:
    assert record.result is not None
    body: dict[str, Any] = {"status": PlanStatus.COMPLETED.value, "plan-id": record.plan_id}
    body.update(encode_page(record.result, 0))
    body["plan-tasks"] = record.task_tokens()
    if record.result.storage_credentials:  # (the 1.11 spec's CompletedPlanningResult field)
        body["storage-credentials"] = record.result.storage_credentials
    return body


def completed_response(record: RestPlanState, body: dict[str, Any], pretty: bool) -> Response:
    """A completed plan's answer; with min-rows-requested, whether it was cut short (CUT_SHORT_HEADER)."""
    response = json_response(body, pretty=pretty)
    cut_short = record.result.cut_short if record.result is not None else None
    if cut_short is not None:
        response.headers[CUT_SHORT_HEADER] = "true" if cut_short else "false"
    return response


def _failed_body(error: PlannerError | None) -> dict[str, Any]:
    return {"status": PlanStatus.FAILED.value, **planner_error_body(error or PlannerError("Planning failed"))}


def _count_fields(runtime: Runtime, body: PlanTableScanRequest) -> None:
    """Count the request's fields by their wire names: what clients push (a LIMIT as min-rows-requested)."""
    for name in sorted(body.model_fields_set):
        wire_name = PlanTableScanRequest.model_fields[name].alias or name
        runtime.metrics.inc(REST_PLAN_FIELDS, field=wire_name)


# --- FastAPI glue -----------------------------------------------------------------------------------------


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    runtime: Runtime = app.state.runtime  # made by the application's lifespan, which runs first
    async with rest_plans(runtime) as plans:
        app.state.rest_plans = plans
        yield


async def get_rest_plans(request: Request) -> RestPlans:  # a coroutine: never waits for the thread pool
    plans: RestPlans = request.app.state.rest_plans
    return plans


PlansDep = Annotated[RestPlans, Depends(get_rest_plans)]

router = APIRouter(tags=["iceberg-rest-scan-planning"], lifespan=_lifespan)
routes = V1Routes(router)
_TABLE = "/namespaces/{namespace}/tables/{table}"

# What a client calls next with a plan's answer (the spec's operation ids): poll it, cancel it, fetch a page
_SAME_TABLE = {"namespace": "$request.path.namespace", "table": "$request.path.table"}
_PLAN_ID = "$response.body#/plan-id"
_FETCH_TASKS = link(
    "fetchScanTasks",
    "the plan's first further page of tasks",
    **_SAME_TABLE,
    request_body={"plan-task": "$response.body#/plan-tasks/0"},
)
_PLAN_LINKS = {
    "fetch-planning-result": link("fetchPlanningResult", "poll the plan", **_SAME_TABLE, plan_id=_PLAN_ID),
    "cancel-planning": link("cancelPlanning", "cancel the plan", **_SAME_TABLE, plan_id=_PLAN_ID),
    "fetch-scan-tasks": _FETCH_TASKS,
}
_A_PLAN = (BadRequestError, NoSuchTableError, NoSuchPlanIdError)  # a plan of the store, for its own table


# --- Routes -----------------------------------------------------------------------------------------------


@routes.route(
    "POST",
    f"{_TABLE}/plan",
    summary="Plan a table scan",
    operation_id="planTableScan",
    **json_route(
        PlanTableScanRequest,
        RestPlanningResult,
        "completed (with its first page of tasks) or submitted",
        PLANNING,
        _CUT_SHORT_DOC,
        _PLAN_LINKS,
    ),
)
async def plan_table_scan(
    namespace: TableNamespacePath,
    table: RestTablePath,
    request: Request,
    runtime: RuntimeDep,
    plans: PlansDep,
    pretty: PrettyDep,
) -> Response:
    identifier = table_identifier(namespace, table)
    body = await parse_body(request, PlanTableScanRequest)
    _count_fields(runtime, body)
    owner, access = client_of(request), access_of(request)
    scan = await run_in_threadpool(
        lambda: prepare_scan(runtime, identifier, body.to_scan(), access, body.select, body.stats_fields)
    )
    if scan.in_background:
        record = plans.submit(runtime, identifier, scan, owner)
    else:
        async with cancelled_on_disconnect(request) as cancel:  # (a client gone before the answer stops it)
            record = await plans.plan_within(runtime, identifier, scan, owner, cancel)
    if record.status is PlanStatus.SUBMITTED:  # (planning on past the wait)
        return json_response({"status": PlanStatus.SUBMITTED.value, "plan-id": record.plan_id}, pretty=pretty)
    return completed_response(record, await run_in_threadpool(completed_body, record), pretty)


@routes.route(
    "GET",
    f"{_TABLE}/plan/{{plan_id}}",
    summary="Poll a plan: submitted, completed, failed, cancelled",
    operation_id="fetchPlanningResult",
    responses=answers(
        described(
            RestPlanningResult,
            "The plan's status; completed: the first page of file scan tasks",
            _CUT_SHORT_DOC,
            {"cancel-planning": _PLAN_LINKS["cancel-planning"], "fetch-scan-tasks": _FETCH_TASKS},
        ),
        _A_PLAN,
    ),
)
async def fetch_planning_result(
    namespace: TableNamespacePath,
    table: RestTablePath,
    plan_id: PlanIdPath,
    request: Request,
    plans: PlansDep,
    pretty: PrettyDep,
) -> Response:
    identifier = table_identifier(namespace, table)
    access_of(request).require(identifier, Privilege.PLAN)  # (a grant revoked since ends the plan)
    record = plans.store.get(plan_id, identifier, client_of(request))
    if record.status is PlanStatus.COMPLETED:
        return completed_response(record, await run_in_threadpool(completed_body, record), pretty)
    body = _failed_body(record.error) if record.status is PlanStatus.FAILED else {"status": record.status.value}
    return json_response(body, pretty=pretty)


@routes.route(
    "DELETE",
    f"{_TABLE}/plan/{{plan_id}}",
    summary="Cancel a plan and drop its tasks",
    operation_id="cancelPlanning",
    status_code=204,
    responses=answers(described(None, "Cancelled, its tasks dropped", status=204), _A_PLAN),
)
async def cancel_planning(
    namespace: TableNamespacePath, table: RestTablePath, plan_id: PlanIdPath, request: Request, plans: PlansDep
) -> Response:
    identifier = table_identifier(namespace, table)
    access_of(request).require(identifier, Privilege.PLAN)
    plans.cancel(plan_id, identifier, client_of(request))
    return Response(status_code=204)


@routes.route(
    "POST",
    f"{_TABLE}/tasks",
    summary="Fetch a plan task's file scan tasks",
    operation_id="fetchScanTasks",
    openapi_extra=json_body_schema(FetchScanTasksRequest),
    responses=answers({}, (*_A_PLAN, NoSuchPlanTaskError), body=True),
)
async def fetch_scan_tasks(
    namespace: TableNamespacePath, table: RestTablePath, request: Request, plans: PlansDep, pretty: PrettyDep
) -> Response:
    identifier = table_identifier(namespace, table)
    access_of(request).require(identifier, Privilege.PLAN)
    body = await parse_body(request, FetchScanTasksRequest)
    record, number = plans.store.page(body.plan_task, identifier, client_of(request))
    assert record.result is not None
    answer = await run_in_threadpool(encode_page, record.result, number)
    nested = record.task_tokens(number)
    if nested:  # (plan_task_fanout: the pages below this one)
        answer["plan-tasks"] = nested
    return json_response(answer, pretty=pretty)

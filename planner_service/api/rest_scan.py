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
Plan ids and plan-task tokens are signed and carry the request (service/plan_ids.py): any replica or
worker sharing the signing key serves any poll, page and cancel, for `plan_ttl_seconds`. The planning itself,
now or in the background, is service/rest_plans.py; the request's checks, planning/scan_request.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from planner_service.api.auth import access_of
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
from planner_service.service import planning_entrance as entrance
from planner_service.service.cached_plan import CachedPlan
from planner_service.service.rest_plans import (
    Outcome,
    PlanStatus,
    RestPlans,
    RestScan,
    encode_page,
    held_page,
    opened_plan,
    page_answer,
    prepare_scan,
    reopen_scan,
    rest_plans,
    split_token,
    task_tokens,
)
from planner_service.service.runtime import Runtime

# With min-rows-requested, whether the plan stopped at the first files that hold the rows: a header, since the
# spec's results have no such field and clients may reject fields they do not know (headers they ignore)
CUT_SHORT_HEADER = "Scan-Planner-Cut-Short"
_CUT_SHORT_DOC = {
    CUT_SHORT_HEADER: "completed plans with min-rows-requested: true when the file scan tasks are only the first "
    "files (Java's planFiles() order) that surely hold the rows, false when they are all the files"
}

# --- JSON -------------------------------------------------------------------------------------------------


def completed_body(runtime: Runtime, scan: RestScan, plan: CachedPlan) -> dict[str, Any]:
    """A completed plan's answer (a worker thread): its first page, the tokens of the others, and storage
    credentials vended for this caller now (never those of another answer: a grant revoked since is heard)."""
    body: dict[str, Any] = {"status": PlanStatus.COMPLETED.value, "plan-id": scan.plan_id}
    body.update(encode_page(runtime, scan, plan, 0))
    body["plan-tasks"] = task_tokens(runtime, scan.plan_id, plan)
    if scan.credentials:  # (the 1.11 spec's CompletedPlanningResult field)
        body["storage-credentials"] = scan.credentials
    entrance.audit_answer(scan.access, scan.table.name, plan)
    return body


async def outcome_response(runtime: Runtime, scan: RestScan, outcome: Outcome, pretty: bool) -> Response:
    """The answer of a plan's outcome; a completed one with min-rows-requested says whether it was cut short
    (CUT_SHORT_HEADER)."""
    if outcome.status is PlanStatus.COMPLETED:
        assert outcome.plan is not None
        response = json_response(await run_in_threadpool(completed_body, runtime, scan, outcome.plan), pretty=pretty)
        cut_short = outcome.plan.plan.metrics.cut_short
        if cut_short is not None:
            response.headers[CUT_SHORT_HEADER] = "true" if cut_short else "false"
        return response
    body: dict[str, Any] = {"status": outcome.status.value}
    if outcome.status is PlanStatus.SUBMITTED:
        body["plan-id"] = scan.plan_id
    elif outcome.status is PlanStatus.FAILED:
        body.update(planner_error_body(outcome.error or PlannerError("Planning failed")))
    return json_response(body, pretty=pretty)


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
    access = access_of(request)
    scan = await run_in_threadpool(
        lambda: prepare_scan(runtime, identifier, body.to_scan(), access, body.select, body.stats_fields)
    )
    outcome = await plans.outcome(scan, wait=not scan.in_background)
    if outcome.status is PlanStatus.FAILED and outcome.error is not None:
        raise outcome.error  # (the request's own error answer: its status and message)
    return await outcome_response(runtime, scan, outcome, pretty)


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
    runtime: RuntimeDep,
    plans: PlansDep,
    pretty: PrettyDep,
) -> Response:
    identifier = table_identifier(namespace, table)
    access = access_of(request)  # (a grant revoked since ends the plan)
    scan = await run_in_threadpool(reopen_scan, runtime, identifier, plan_id, access, True)
    return await outcome_response(runtime, scan, await plans.outcome(scan, wait=True), pretty)


@routes.route(
    "DELETE",
    f"{_TABLE}/plan/{{plan_id}}",
    summary="Cancel a plan and drop its tasks",
    operation_id="cancelPlanning",
    status_code=204,
    responses=answers(described(None, "Cancelled, its tasks dropped", status=204), _A_PLAN),
)
async def cancel_planning(
    namespace: TableNamespacePath,
    table: RestTablePath,
    plan_id: PlanIdPath,
    request: Request,
    runtime: RuntimeDep,
    plans: PlansDep,
) -> Response:
    identifier = table_identifier(namespace, table)
    await run_in_threadpool(opened_plan, runtime, identifier, plan_id, access_of(request))
    plans.cancel(plan_id)
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
    namespace: TableNamespacePath,
    table: RestTablePath,
    request: Request,
    runtime: RuntimeDep,
    plans: PlansDep,
    pretty: PrettyDep,
) -> Response:
    identifier = table_identifier(namespace, table)
    access = access_of(request)
    body = await parse_body(request, FetchScanTasksRequest)
    plan_id, number = split_token(body.plan_task)
    plans.require_pages(plan_id)
    try:
        scan, answer = await run_in_threadpool(held_page, runtime, identifier, plan_id, number, access)
    except NoSuchPlanIdError as exc:
        raise NoSuchPlanTaskError(f"No such plan task for table {identifier}: {exc.message}") from None
    if answer is None:  # (a page of a plan this replica must make again)
        async with cancelled_on_disconnect(request) as cancel:
            plan = await plans.completed(scan, cancel)
        answer = await run_in_threadpool(page_answer, runtime, scan, plan, number)
    return json_response(answer, pretty=pretty)

"""POST /explore: why a scan reads what it reads, summarized for people (the plan explorer, /ui): manifests
and data files by the rule that kept or skipped them, residuals, delete files, the tasks as packed bins,
stage timings and cache hits; the details a page at a time."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from planner_service.api.auth import access_of
from planner_service.api.dependencies import PrettyDep, RuntimeDep
from planner_service.api.disconnect import until_disconnected
from planner_service.api.documented import PLANNING, answers
from planner_service.api.request_models import ExploreRequest, json_body_schema, parse_body
from planner_service.api.responses import json_response
from planner_service.planning.admission import Cancellation
from planner_service.service import planning_entrance as entrance
from planner_service.service.plan_explorer import explore

router = APIRouter()


@router.post(
    "/explore",
    tags=["debugging"],
    summary="A plan explained: summaries first, details a page at a time",
    openapi_extra=json_body_schema(ExploreRequest),
    responses=answers({}, PLANNING, body=True),
)
async def explore_plan(request: Request, runtime: RuntimeDep, pretty: PrettyDep) -> Response:
    body = await parse_body(request, ExploreRequest)

    access = access_of(request)

    def answer(cancel: Cancellation) -> dict[str, Any]:
        decided = entrance.decide(runtime, access, body.table, body.metadata_location, body.to_scan(), vend=False)
        return explore(runtime, decided.table, decided.request, body.page(), decided.plan_id, access, cancel)

    return json_response(await until_disconnected(request, answer), pretty=pretty)

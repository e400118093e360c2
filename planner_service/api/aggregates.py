"""POST /aggregate: COUNT(*), COUNT(col), MIN(col), MAX(col) of a scan from its data files' metadata, where
that is exact (planning/metadata_aggregates.py), each aggregate saying whether it is and, if not, why (the JSON:
wire/aggregates_json.py, which the CLI's `aggregate` prints too)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from planner_service.api.auth import access_of
from planner_service.api.dependencies import PrettyDep, RuntimeDep
from planner_service.api.disconnect import until_disconnected
from planner_service.api.documented import PLANNING, json_route
from planner_service.api.request_models import AggregateRequest, parse_body
from planner_service.api.response_models import AggregateResponse
from planner_service.api.responses import json_response
from planner_service.planning.admission import Cancellation
from planner_service.service.aggregate_answers import aggregate_scan

router = APIRouter()


@router.post(
    "/aggregate",
    tags=["planning"],
    summary="count(*), count(col), min(col), max(col) from metadata, where exact",
    **json_route(
        AggregateRequest,
        AggregateResponse,
        "Each aggregate's value, or why metadata cannot answer it exactly",
        PLANNING,
    ),
)
async def aggregate(request: Request, runtime: RuntimeDep, pretty: PrettyDep) -> Response:
    body = await parse_body(request, AggregateRequest)
    access = access_of(request)
    scan = body.to_scan(combine=False, keep_stats=True)

    def answer(cancel: Cancellation) -> dict[str, Any]:
        return aggregate_scan(runtime, body.table, body.metadata_location, scan, body.aggregates, access, cancel)

    result = await until_disconnected(request, answer)
    return json_response(result, pretty=pretty)

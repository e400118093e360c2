"""The OpenAPI document says what each route really answers (api/documented.py): every error status it can give,
derived from the error kinds it raises through the one table (api/error_kinds.py) and from the doors' refusals,
each as the Iceberg REST error model, never FastAPI's 422 that no route answers; every 405 names the route's
methods in `Allow` (RFC 9110); and the request models' schema holds what the later checks refuse."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import Route

from planner_service.api.documented import answers
from planner_service.api.error_kinds import ERROR_KINDS
from planner_service.api.request_models import (
    AggregateRequest,
    PlanRequest,
    PlanTableScanRequest,
    validated,
)
from planner_service.api.rest_routes import table_identifier
from planner_service.app import create_app
from planner_service.errors import BadRequestError, NoSuchTableError, StorageError
from planner_service.settings import load_settings
from reference_docs import http_page

OPEN = {"/health", "/v1/oauth/tokens"}  # no bearer token asked
ERROR_MODEL = "#/components/schemas/IcebergErrorResponse"


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return http_page.openapi_document()


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    return create_app(load_settings(demo=True, demo_dir=str(tmp_path_factory.mktemp("demo"))))


def _schema_ref(response: dict[str, Any]) -> str | None:
    ref = response.get("content", {}).get("application/json", {}).get("schema", {}).get("$ref")
    return str(ref) if ref is not None else None


def test_every_error_status_is_documented_as_the_error_model(openapi: dict[str, Any]) -> None:
    for method, path, operation in http_page.operations(openapi):
        responses = operation["responses"]
        errors = {int(status): r for status, r in responses.items() if int(status) >= 400}
        assert "422" not in responses or _schema_ref(responses["422"]) == ERROR_MODEL, f"{method} {path}"
        if path == "/health":
            continue  # (answered before the doors: 200 ok, 503 draining)
        assert 403 in errors, f"{method} {path}: the cross-site guard's 403"
        if path not in OPEN:  # (the token endpoint's own 401 is RFC 6749's invalid_client)
            assert 401 in errors and "WWW-Authenticate" in errors[401]["headers"], f"{method} {path}"
        if "requestBody" in operation:
            assert {400, 408, 413} <= set(errors), f"{method} {path}: the body's checks and limits"
        for status, response in errors.items():
            if path == "/v1/oauth/tokens" and status in (400, 401):
                assert _schema_ref(response) == "#/components/schemas/OAuthError"
                continue
            if method == "HEAD" and status == 404:
                continue  # (a bare 404: HEAD has no body)
            assert _schema_ref(response) == ERROR_MODEL, f"{method} {path} {status}"
            if status == 503:
                assert "Retry-After" in response["headers"], f"{method} {path}"
    assert "HTTPValidationError" not in openapi["components"]["schemas"]


def test_a_routes_errors_come_from_the_kind_table() -> None:
    documented = answers({200: {"description": "ok"}}, (NoSuchTableError, StorageError), body=True)
    assert documented[200] == {"description": "ok"}
    for kind in (NoSuchTableError, StorageError, BadRequestError):
        row = ERROR_KINDS[kind]
        assert row.type in documented[row.status]["description"]
    assert {400, 401, 403, 404, 408, 413, 503} == {s for s in documented if s != 200}
    open_route = answers({}, (), token=False)
    assert set(open_route) == {403}


def test_rest_routes_carry_the_specs_operation_ids_and_links(openapi: dict[str, Any]) -> None:
    table = "/v1/namespaces/{namespace}/tables/{table}"
    plan = openapi["paths"][f"{table}/plan"]["post"]
    assert plan["operationId"] == "planTableScan"
    links = plan["responses"]["200"]["links"]
    assert {link["operationId"] for link in links.values()} == {
        "fetchPlanningResult",
        "cancelPlanning",
        "fetchScanTasks",
    }
    assert links["fetch-scan-tasks"]["requestBody"] == {"plan-task": "$response.body#/plan-tasks/0"}
    native = openapi["paths"]["/plan"]["post"]["responses"]["200"]["links"]
    assert native["by-id"] == {
        "operationId": "planById",
        "description": "the plan again, by its id",
        "parameters": {"plan_id": "$response.body#/plan-id"},
    }


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", lambda m: "0" if m.group(0) == "{index}" else "db", path)


def test_every_405_names_the_paths_methods_in_allow(app: FastAPI) -> None:
    by_path: dict[str, set[str]] = {}
    for route in app.routes:
        if isinstance(route, (APIRoute, Route)):
            by_path.setdefault(_concrete(route.path), set()).update(route.methods or ())

    async def refused() -> dict[str, httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return {path: await client.request("TRACE", path) for path in by_path}

    for path, response in asyncio.run(refused()).items():
        assert response.status_code == 405, path
        allowed = {m.strip() for m in response.headers["allow"].split(",")}
        assert by_path[path] <= allowed, path  # (a path may match more routes: /v1/{prefix}/...)
        assert response.json()["error"]["type"] == "MethodNotAllowedException"


def test_405_names_every_route_of_a_path(app: FastAPI) -> None:
    async def refused(path: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.request("PUT", path)

    namespace = asyncio.run(refused("/v1/namespaces/db"))
    assert namespace.headers["allow"] == "GET, HEAD"  # two routes: load and exists
    plan = asyncio.run(refused("/v1/namespaces/db/tables/t/plan/p1"))
    assert plan.headers["allow"] == "GET, DELETE"  # poll and cancel
    health = asyncio.run(refused("/health"))
    assert health.headers["allow"] == "GET, HEAD"  # (HEAD: answered before routing, by RequestObserver)


def test_schema_valid_numbers_are_accepted() -> None:
    # to JSON Schema, 5.0 is the integer 5: the strict models take it as 5 (never a bool or a string)
    body = validated(PlanRequest, {"table": "db.t", "limit": 5.0, "options": {"split-size": 1024.0}})
    assert body.limit == 5 and body.options == {"split-size": 1024}
    assert validated(PlanTableScanRequest, {"snapshot-id": 3.0}).snapshot_id == 3
    for wrong in ({"table": "db.t", "limit": True}, {"table": "db.t", "snapshot-id": 2**63}):
        with pytest.raises(BadRequestError):
            validated(PlanRequest, wrong)


def test_the_schema_holds_the_later_checks() -> None:
    plan = PlanRequest.model_json_schema()
    assert re.fullmatch(plan["properties"]["table"]["pattern"], "db.events")
    assert not re.fullmatch(plan["properties"]["table"]["pattern"], "unqualified")
    assert not re.fullmatch(plan["properties"]["table"]["pattern"], "db..t")
    assert plan["properties"]["options"]["additionalProperties"] is False
    assert "allOf" in plan  # one of table / metadata-location; at most one snapshot choice
    aggregates = AggregateRequest.model_json_schema()["properties"]["aggregates"]
    assert aggregates["minItems"] == 1
    for text, ok in (("count(*)", True), (" MAX( id ) ", True), ("min(*)", False), ("sum(id)", False)):
        assert bool(re.fullmatch(aggregates["items"]["pattern"], text)) is ok, text


def test_a_rest_table_name_with_a_dot_is_refused() -> None:
    # the service names a table namespace.name: ("a", "b.c") would be the table c of namespace a.b
    assert str(table_identifier("a", "b")) == "a.b"
    for namespace, table in (("a", "b.c"), ("a.b", "c")):
        with pytest.raises(BadRequestError, match="holds a dot"):
            table_identifier(namespace, table)

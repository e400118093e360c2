"""The service's /openapi.json documents what the planning endpoints answer: the /plan body and its metrics
(`cut-short` among them), the /aggregate values with `exact` and `reason`, and vended `storage-credentials`;
and every field a real answer carries is one the docs name (the bodies are encoded without the models)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest


@pytest.fixture(scope="module")
def client(conformance_service: str) -> httpx.Client:
    return httpx.Client(base_url=conformance_service, timeout=60)


@pytest.fixture(scope="module")
def openapi(client: httpx.Client) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    return dict(response.json())


def _resolved(openapi: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A schema with its $ref followed, and a nullable one (anyOf [X, null]) as X."""
    if "$ref" in schema:
        return _resolved(openapi, openapi["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]])
    if "anyOf" in schema:
        (inner,) = [s for s in schema["anyOf"] if s.get("type") != "null"]
        return _resolved(openapi, inner)
    if schema.get("type") == "array":
        return _resolved(openapi, schema["items"])
    return schema


def _response(openapi: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    content = openapi["paths"][path][method]["responses"]["200"]["content"]["application/json"]
    return _resolved(openapi, content["schema"])


def _field(openapi: dict[str, Any], schema: dict[str, Any], name: str) -> dict[str, Any]:
    return _resolved(openapi, schema["properties"][name])


def _documents(openapi: dict[str, Any], schema: dict[str, Any], body: dict[str, Any]) -> None:
    """Every field of `body` is documented, and every required one is there."""
    assert set(body) <= set(schema["properties"]), set(body) - set(schema["properties"])
    assert set(schema.get("required", ())) <= set(body), set(schema.get("required", ())) - set(body)


def test_plan_metrics_document_cut_short(openapi: dict[str, Any], client: httpx.Client) -> None:
    plan = _response(openapi, "/plan", "post")
    metrics = _field(openapi, plan, "metrics")
    assert "limit" in metrics["properties"]["cut-short"]["description"]
    for limit in (1, None):
        body = client.post("/plan", json={"table": "db.many_manifests", "limit": limit}).json()
        _documents(openapi, plan, body)
        _documents(openapi, metrics, body["metrics"])
        _documents(openapi, _field(openapi, plan, "files"), body["files"][0])
        _documents(openapi, _field(openapi, plan, "tasks"), body["tasks"][0])
        _documents(openapi, _field(openapi, plan, "split-options"), body["split-options"])
        assert ("cut-short" in body["metrics"]) is (limit is not None)

    deferred = client.post("/plan", json={"table": "db.many_manifests", "inline-task-limit": 0}).json()
    _documents(openapi, plan, deferred)
    by_id = client.get(f"/plans/{deferred['plan-id']}").json()
    _documents(openapi, _response(openapi, "/plans/{plan_id}", "get"), by_id)


def test_aggregate_values_exact_and_reason_are_documented(openapi: dict[str, Any], client: httpx.Client) -> None:
    answer = _response(openapi, "/aggregate", "post")
    entry = _field(openapi, answer, "aggregates")
    assert {"name", "type", "value", "exact", "reason"} <= set(entry["properties"])
    assert entry["properties"]["exact"]["type"] == "boolean"
    for table in ("unpartitioned", "mor_position_deletes"):  # exact; not exact (delete files), with a reason
        body = client.post("/aggregate", json={"table": f"db.{table}", "aggregates": ["count(*)", "max(id)"]}).json()
        _documents(openapi, answer, body)
        for aggregate in body["aggregates"]:
            _documents(openapi, entry, aggregate)
            assert ("reason" in aggregate) is (not aggregate["exact"])


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/plan", "post"),
        ("/plans/{plan_id}", "get"),
        ("/v1/namespaces/{namespace}/tables/{table}/plan", "post"),
        ("/v1/namespaces/{namespace}/tables/{table}/plan/{plan_id}", "get"),
        ("/v1/namespaces/{namespace}/tables/{table}", "get"),
    ],
)
def test_storage_credentials_are_documented(openapi: dict[str, Any], path: str, method: str) -> None:
    credential = _field(openapi, _response(openapi, path, method), "storage-credentials")
    assert set(credential["properties"]) == {"prefix", "config"}
    assert credential["properties"]["config"]["additionalProperties"] == {"type": "string"}


def test_rest_plans_are_documented_as_answered(openapi: dict[str, Any], client: httpx.Client) -> None:
    path = "/v1/namespaces/{namespace}/tables/{table}/plan"
    result = _response(openapi, path, "post")
    response = client.post("/v1/namespaces/db/tables/many_manifests/plan", json={"min-rows-requested": 1})
    body = response.json()
    assert body["status"] == "completed"
    _documents(openapi, result, body)
    for documented in (path, f"{path}/{{plan_id}}"):
        method = "post" if documented == path else "get"
        headers = openapi["paths"][documented][method]["responses"]["200"]["headers"]
        assert "min-rows-requested" in headers["Scan-Planner-Cut-Short"]["description"]
    assert response.headers["Scan-Planner-Cut-Short"] == "true"

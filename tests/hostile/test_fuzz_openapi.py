"""Every operation of the service's OpenAPI (/openapi.json), fuzzed by schemathesis against a real uvicorn on
loopback: whatever a client sends (valid and invalid bodies and parameters, unexpected methods), the answer is
never a 5xx (503 with Retry-After, for load, excepted) and is JSON wherever a body is due: an error is the
service's error object whose code is the status (the OAuth2 token endpoint's, RFC 6749's `{"error": code}`).

Bounded and reproducible: a fixed number of examples per operation in the fuzzing phase (the coverage phase
adds its own deterministic cases), derandomized generation with a fixed seed, no example database. Half of the
generated path parameters and bodies are steered towards names that exist (namespace `db`, the conformance
tables, a real plan id and plan-task token), so the fuzzing reaches planning rather than stopping at 404.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import schemathesis
from hypothesis import strategies as st
from schemathesis.core.transport import Response

if TYPE_CHECKING:  # schemathesis names its OpenAPI case type (Case[OpenApiOperation]) for type checkers only
    from schemathesis.specs.openapi.schemas import OpenApiCase

MAX_EXAMPLES = 40  # per operation, in the fuzzing phase
SEED = 20_250_601
REQUEST_TIMEOUT = 60  # seconds: a hang fails its case rather than the whole run

NOT_JSON = {("GET", "/metrics")}  # Prometheus text, by design
NO_BODY_STATUSES = {204, 304}
OAUTH_TOKENS = "/oauth/tokens"  # the token endpoint answers errors as RFC 6749 says: {"error": code, ...}


def _known(base_url: str) -> dict[str, Any]:
    """Names that exist on the service: its tables, a native plan id, REST plan-task tokens."""
    with httpx.Client(base_url=base_url, timeout=60) as client:
        listed = client.get("/v1/namespaces/db/tables")
        assert listed.status_code == 200, listed.text
        tables = sorted(ident["name"] for ident in listed.json()["identifiers"])
        assert tables, "the conformance warehouse has no tables"
        deferred = client.post("/plan", json={"table": "db.many_manifests", "inline-task-limit": 0})
        assert deferred.status_code == 200, deferred.text
        rest = client.post("/v1/namespaces/db/tables/many_manifests/plan", json={})
        assert rest.status_code == 200, rest.text
    return {"tables": tables, "plan-id": deferred.json()["plan-id"], "plan-tasks": rest.json().get("plan-tasks", [])}


def _steer(known: dict[str, Any]) -> Callable[[dict[str, Any]], st.SearchStrategy[dict[str, Any]]]:
    """Generated path parameters, each either as generated or replaced by a value that exists."""
    tables = st.sampled_from(known["tables"])

    def steered(params: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
        out: dict[str, st.SearchStrategy[Any]] = {key: st.just(value) for key, value in params.items()}
        if "namespace" in params:
            out["namespace"] = st.sampled_from(["db", params["namespace"]])
        if "table" in params:
            out["table"] = st.one_of(tables, st.just(params["table"]))
        if "name" in params:  # /tables/{name}/...: a qualified name
            out["name"] = st.one_of(tables.map(lambda t: f"db.{t}"), st.just(params["name"]))
        if "plan_id" in params:
            out["plan_id"] = st.sampled_from([known["plan-id"], params["plan_id"]])
        if "index" in params:
            out["index"] = st.one_of(st.integers(-2, 12), st.just(params["index"]))
        return st.fixed_dictionaries(out)

    return steered


def _with(body: Any, value: Any, key: str) -> Any:
    return {**body, key: value} if isinstance(body, dict) else body


_NOT_WITH_TABLE = {"metadata-location", "start-snapshot-id", "end-snapshot-id"}


def _plannable(body: Any, table: str, plain: bool) -> Any:
    """A generated /plan body naming a real table, and otherwise as generated, less what always fails before
    planning: a metadata location besides the table, an incremental scan, more than one snapshot choice (and,
    if `plain`, the options and columns, which are seldom ones that exist)."""
    if not isinstance(body, dict):
        return body
    dropped = _NOT_WITH_TABLE | ({"options", "select"} if plain else set())
    out = {key: value for key, value in body.items() if key not in dropped}
    choices = [key for key in ("snapshot-id", "as-of-timestamp-ms", "ref") if out.get(key) is not None]
    for key in choices[1:]:
        del out[key]
    return {**out, "table": table}


@pytest.fixture(scope="module")
def api_schema(conformance_service: str) -> Any:
    """The live service's /openapi.json, with generation steered towards real names (see _steer)."""
    config = schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "generation": {
                "mode": "all",
                "max-examples": MAX_EXAMPLES,
                "deterministic": True,
                "database": "none",
                "unique-inputs": True,
            },
            "phases": {"stateful": {"enabled": False}},
            "request-timeout": REQUEST_TIMEOUT,
        }
    )
    loaded = schemathesis.openapi.from_url(f"{conformance_service}/openapi.json", config=config)
    known = _known(conformance_service)
    steered = _steer(known)

    @loaded.hook("before_generate_path_parameters")
    def real_names(context: Any, strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(strategy, strategy.flatmap(lambda p: steered(p) if isinstance(p, dict) else st.just(p)))

    @loaded.hook("before_generate_body")
    def real_bodies(context: Any, strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        path = context.operation.path if context.operation is not None else ""
        if path == "/plan":
            tables = st.sampled_from(known["tables"]).map(lambda t: f"db.{t}")
            plannable = st.tuples(strategy, tables, st.booleans()).map(lambda args: _plannable(*args))
            return st.one_of(strategy, plannable)
        if path.endswith("/tasks") and known["plan-tasks"]:
            tokens = st.sampled_from(known["plan-tasks"])
            return st.one_of(strategy, st.tuples(strategy, tokens).map(lambda pair: _with(*pair, "plan-task")))
        return strategy

    return loaded


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.fixture(autouse=True)
def _schemathesis_node_id(request: pytest.FixtureRequest) -> None:
    """schemathesis 4's lazy schemas (from_fixture) read and rename `node._nodeid`, which pytest 9 no longer has:
    give it one (harmless where it exists)."""
    if not hasattr(request.node, "_nodeid"):
        request.node._nodeid = request.node.nodeid


@schema.parametrize()
def test_no_server_errors(case: OpenApiCase, conformance_service: str) -> None:
    response = case.call(base_url=conformance_service, timeout=REQUEST_TIMEOUT)
    check_response(case, response, conformance_service)


def check_response(case: OpenApiCase, response: Response, base_url: str) -> None:
    """No 5xx but 503 with Retry-After; a JSON body (an error object for 4xx) wherever a body is due."""
    status = response.status_code

    def context() -> str:
        return f"{status} for\n{case.as_curl_command(base_url=base_url)}\n{response.content[:600]!r}"

    if status >= 500:
        assert status == 503 and "retry-after" in response.headers, f"server error: {context()}"
    method = case.method.upper()
    if method == "HEAD" or status in NO_BODY_STATUSES or ((method, case.path) in NOT_JSON and status == 200):
        return
    content_type = response.headers.get("content-type", [""])[0]
    assert content_type.startswith("application/json"), f"not JSON ({content_type}): {context()}"
    try:
        body = json.loads(response.content)
    except (ValueError, RecursionError) as exc:
        raise AssertionError(f"invalid JSON ({exc}): {context()}") from None
    if status >= 400:
        assert is_error_body(body, status, oauth=case.path.endswith(OAUTH_TOKENS)), f"no error object: {context()}"
    elif (method, case.path) == ("POST", "/plan"):
        assert isinstance(body.get("plan-id"), str) and isinstance(body.get("task-count"), int), context()


def is_error_body(body: Any, status: int, oauth: bool) -> bool:
    """The service's `{"error": {"message", "type", "code"}}`, or (from the token endpoint) RFC 6749's
    `{"error": code, "error_description": ...}`."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return isinstance(error.get("message"), str) and bool(error["message"]) and error.get("code") == status
    return oauth and isinstance(error, str) and bool(error)

"""Every operation of the service's OpenAPI (/openapi.json), fuzzed by schemathesis against a real uvicorn on
loopback, native routes and the Iceberg REST /v1 routes alike: whatever a client sends (valid and invalid bodies
and parameters, unexpected methods), the answer is never a 5xx (503 with Retry-After, for load, excepted), is
JSON wherever a body is due (an error is the service's error object whose code is the status; the OAuth2 token
endpoint's, RFC 6749's `{"error": code}`), and is what the document says: a documented status, content type,
body schema and headers (schemathesis's conformance checks), a request valid by the schema is not refused for
its shape nor an invalid one accepted, and a 405 names the allowed methods (Allow).

Then the stateful phase follows the document's links, as a client would: a native plan to its id and its tasks;
a REST plan to its polling, its cancellation and its further plan tasks.

Bounded and reproducible: a fixed number of examples per operation in the fuzzing phase (the coverage phase
adds its own deterministic cases), derandomized generation with a fixed seed, no example database. Half of the
generated path parameters and bodies are steered towards names that exist (namespace `db`, the conformance
tables, a real plan id and plan-task token), so the fuzzing reaches planning rather than stopping at 404. Every
run has the small budget; the long tier (`pytest -m long`, which CI runs) a larger one.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import httpx
import hypothesis
import pytest
import schemathesis
from hypothesis import strategies as st
from schemathesis import checks
from schemathesis.core.transport import Response

from tests.conformance.reference import Conformance
from tests.conftest import running_service

if TYPE_CHECKING:  # schemathesis names its OpenAPI case type (Case[OpenApiOperation]) for type checkers only
    from schemathesis.specs.openapi.schemas import OpenApiCase

MAX_EXAMPLES = 30  # per operation, in the fuzzing phase
LONG_EXAMPLES = 75  # the same, in the long tier (under 2 minutes on two busy cores)
STATEFUL_SCENARIOS, LONG_STATEFUL_SCENARIOS = 25, 100  # linked sequences of calls, of up to STATEFUL_STEPS each
STATEFUL_STEPS = 6
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
            out["index"] = st.one_of(st.integers(0, 12), st.just(params["index"]))
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


# What the schema cannot say (their descriptions say so): the table's columns, a filter's grammar, a location's
# scheme, an incremental range's snapshots (Java's 400), a page token's history. A request carrying one may be
# refused 400 though valid by the schema.
NOT_IN_SCHEMA = {"filter", "select", "stats-fields", "aggregates", "metadata-location", "start-snapshot-id"}
NOT_IN_SCHEMA_QUERY = {"pageToken"}


def positive_data_accepted(ctx: Any, response: Response, case: OpenApiCase) -> bool | None:
    """schemathesis's positive_data_acceptance (a request valid by the schema is not refused for its shape),
    for the requests whose every field the schema can check (not those of NOT_IN_SCHEMA)."""
    body, query = case.body if isinstance(case.body, dict) else {}, case.query or {}
    if any(body.get(name) is not None for name in NOT_IN_SCHEMA) or NOT_IN_SCHEMA_QUERY & set(query):
        return None
    result: bool | None = checks.positive_data_acceptance(ctx, response, case)
    return result


CHECKS = [
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
    checks.negative_data_rejection,
    positive_data_accepted,
    checks.unsupported_method,
]


def _loaded(base_url: str, max_examples: int) -> Any:
    """The live service's /openapi.json, with generation steered towards real names (see _steer)."""
    config = schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "generation": {
                "mode": "all",
                "max-examples": max_examples,
                "deterministic": True,
                "database": "none",
                "unique-inputs": True,
            },
            "request-timeout": REQUEST_TIMEOUT,
        }
    )
    loaded = schemathesis.openapi.from_url(f"{base_url}/openapi.json", config=config)
    known = _known(base_url)
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


@pytest.fixture(scope="module")
def conformance_service(conformance: Conformance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A service of this module's own over the conformance tables (as the suite's shared one is set up): the
    stateful phase's links must not depend on the REST plans and caches other modules left behind."""
    config = tmp_path_factory.mktemp("fuzz-service") / "service.toml"
    config.write_text("plan_task_page_size = 4\n")
    with running_service("--warehouse", str(conformance.dir / "warehouse"), "--config", str(config)) as url:
        yield url


@pytest.fixture(scope="module")
def api_schema(conformance_service: str) -> Any:
    return _loaded(conformance_service, MAX_EXAMPLES)


@pytest.fixture(scope="module")
def long_api_schema(conformance_service: str) -> Any:
    return _loaded(conformance_service, LONG_EXAMPLES)


schema = schemathesis.pytest.from_fixture("api_schema")
long_schema = schemathesis.pytest.from_fixture("long_api_schema")


@pytest.fixture(autouse=True)
def _schemathesis_node_id(request: pytest.FixtureRequest) -> None:
    """schemathesis 4's lazy schemas (from_fixture) read and rename `node._nodeid`, which pytest 9 no longer has:
    give it one (harmless where it exists)."""
    if not hasattr(request.node, "_nodeid"):
        request.node._nodeid = request.node.nodeid


@schema.parametrize()
def test_answers_as_documented(case: OpenApiCase, conformance_service: str) -> None:
    answers_as_documented(case, conformance_service)


@pytest.mark.long
@long_schema.parametrize()
def test_answers_as_documented_long(case: OpenApiCase, conformance_service: str) -> None:
    answers_as_documented(case, conformance_service)


def answers_as_documented(case: OpenApiCase, base_url: str) -> None:
    response = case.call(base_url=base_url, timeout=REQUEST_TIMEOUT)
    check_response(case, response, base_url)
    case.validate_response(response, checks=CHECKS)


# The operations of the plans' links (the document's operation ids): the stateful phase walks among these
PLANNING_OPERATIONS = [
    "plan",
    "planById",
    "planTasks",
    "planTask",
    "planTableScan",
    "fetchPlanningResult",
    "cancelPlanning",
    "fetchScanTasks",
]


@pytest.mark.parametrize(
    "scenarios",
    [
        pytest.param(STATEFUL_SCENARIOS, id=f"{STATEFUL_SCENARIOS}-scenarios"),
        pytest.param(LONG_STATEFUL_SCENARIOS, id=f"{LONG_STATEFUL_SCENARIOS}-scenarios", marks=pytest.mark.long),
    ],
)
def test_links_are_followed_as_documented(api_schema: Any, conformance_service: str, scenarios: int) -> None:
    """The stateful phase: sequences of calls along the document's links (plan -> by id -> tasks; REST plan
    -> poll, cancel, fetch plan tasks), each answer checked as in the fuzzing phase."""
    followed: collections.Counter[str] = collections.Counter()  # links, to a 2xx answer

    planning = api_schema.include(operation_id=PLANNING_OPERATIONS)

    class Linked(planning.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: OpenApiCase) -> dict[str, Any]:
            return {"base_url": conformance_service, "timeout": REQUEST_TIMEOUT}

        def step(self, input: Any) -> Any:
            output = super().step(input)
            if input.transition is not None and 200 <= output.response.status_code < 300:
                followed[input.transition.id] += 1
            return output

        def validate_response(self, response: Response, case: OpenApiCase, *args: Any, **kwargs: Any) -> None:
            check_response(case, response, conformance_service)
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs or None, recorder=self.recorder)

    settings = hypothesis.settings(
        max_examples=scenarios,
        stateful_step_count=STATEFUL_STEPS,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    Linked.run(settings=settings)
    # which links a random walk reaches depends on what it happens to draw (and on the tables the warehouse
    # holds; in some runs of the whole suite the fixed draws reached none): a walk that followed none is
    # walked once more, drawn afresh. That every link leads to an answer is
    # test_every_link_of_a_plans_answer_is_followed_to_an_answer's
    if not followed:
        Linked.run(settings=hypothesis.settings(settings, derandomize=False))
    assert followed, "the stateful phase followed no link to a 2xx answer"


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


@pytest.mark.parametrize(
    ("template", "params", "body"),
    [
        ("/v1/namespaces/{namespace}/tables/{table}/plan", {"namespace": "db", "table": "many_manifests"}, {}),
        ("/plan", {}, {"table": "db.many_manifests", "inline-task-limit": 0}),
    ],
    ids=["rest-plan", "native-plan"],
)
def test_every_link_of_a_plans_answer_is_followed_to_an_answer(
    conformance_service: str, template: str, params: dict[str, str], body: dict[str, Any]
) -> None:
    """Each link the document gives a plan's answer (and, for a native plan, its answer by id), followed as the
    document writes it (runtime expressions resolved against the request and the answer) whatever a fuzzing
    run happens to reach: every one leads to a 2xx. (The stateful phase walks them at random.)"""
    with httpx.Client(base_url=conformance_service, timeout=60) as client:
        doc = client.get("/openapi.json").json()
        operations = {
            op["operationId"]: (path, method) for path, item in doc["paths"].items() for method, op in item.items()
        }
        answer = client.post(template.format(**params), json=body)
        assert answer.status_code == 200, answer.text[:500]
        followed = _follow_links(client, doc, operations, (template, "post"), params, answer.json())
        if template == "/plan":
            by_id = client.get(f"/plans/{answer.json()['plan-id']}")
            assert by_id.status_code == 200, by_id.text[:500]
            followed += _follow_links(client, doc, operations, ("/plans/{plan_id}", "get"), {}, by_id.json())
    assert followed >= 2


def _follow_links(
    client: httpx.Client,
    doc: dict[str, Any],
    operations: dict[str, tuple[str, str]],
    source: tuple[str, str],
    request_params: dict[str, str],
    answer: Any,
) -> int:
    """Call every link of `source`'s 200 answer (a cancelling DELETE last); each must answer 2xx."""

    def resolved(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("$request.path."):
            return request_params[value.removeprefix("$request.path.")]
        if isinstance(value, str) and value.startswith("$response.body#/"):
            found: Any = answer
            for step in value.removeprefix("$response.body#/").split("/"):
                found = found[int(step)] if isinstance(found, list) else found[step]
            return found
        return {key: resolved(item) for key, item in value.items()} if isinstance(value, dict) else value

    links = doc["paths"][source[0]][source[1]]["responses"]["200"].get("links", {})
    assert links, f"{source} documents no link"
    ordered = sorted(links.items(), key=lambda item: operations[item[1]["operationId"]][1] == "delete")
    for name, link in ordered:
        path, method = operations[link["operationId"]]
        values = {key: resolved(value) for key, value in link.get("parameters", {}).items()}
        url = path.format(**{key: value for key, value in values.items() if "{" + key + "}" in path})
        query = {key: value for key, value in values.items() if "{" + key + "}" not in path}
        extra = {"json": resolved(link["requestBody"])} if "requestBody" in link else {}
        reply = client.request(method.upper(), url, params=query, **extra)
        assert 200 <= reply.status_code < 300, (
            f"{name}: {method.upper()} {url} -> {reply.status_code} {reply.text[:300]}"
        )
    return len(links)

"""The route-to-privilege table (access/routes.py) covers every route of the OpenAPI document, and says true:
on a running service with a grants policy, a principal holding exactly a route's privilege on a table is
answered, and one holding the privilege just below it is refused (404 when it may not list the table, else
403); the open routes answer without a token, every other one refuses a request without one (401)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from planner_service.access.policy import Privilege
from planner_service.access.routes import OPEN, ROUTE_PRIVILEGES, TOKEN
from planner_service.app import create_app
from planner_service.settings import Settings
from tests.access.policies import TOKENS
from tests.conformance.reference import Conformance
from tests.conftest import running_service

TABLE = "db.identity_part"
NAMESPACE, NAME = TABLE.split(".")
REST = f"/v1/namespaces/{NAMESPACE}/tables/{NAME}"
# principal -> the privilege it holds on TABLE (and nothing else anywhere)
HOLDERS = {"lister": Privilege.LIST, "reader": Privilege.READ_METADATA, "planner": Privilege.PLAN}
BELOW = {Privilege.LIST: None, Privilege.READ_METADATA: "lister", Privilege.PLAN: "reader"}
HOLDER_OF = {privilege: principal for principal, privilege in HOLDERS.items()}

Ask = Callable[[httpx.Client, dict[str, str]], httpx.Response]


def test_every_route_of_the_openapi_document_has_its_privilege() -> None:
    document = create_app(Settings()).openapi()
    routes = {(method.upper(), path) for path, operations in document["paths"].items() for method in operations}
    assert routes == set(ROUTE_PRIVILEGES), (
        f"missing from access/routes.py: {sorted(routes - set(ROUTE_PRIVILEGES))}; "
        f"not routes: {sorted(set(ROUTE_PRIVILEGES) - routes)}"
    )


@pytest.fixture(scope="module")
def service(conformance: Conformance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory: Path = tmp_path_factory.mktemp("routes")
    tokens = {**TOKENS, **{p: f"{p}-token" for p in HOLDERS}}
    rules = [{"principals": [p], "tables": [TABLE], "privileges": [v.value]} for p, v in HOLDERS.items()]
    rules.append({"principals": ["ops"], "privileges": ["metrics"]})
    config = directory / "service.json"
    config.write_text(
        json.dumps(
            {
                "warehouse": str(conformance.dir / "warehouse"),
                "auth_tokens": tokens,
                "access_rules": rules,
                "plan_task_page_size": 1,  # (a REST plan of pages: a plan-task token to fetch)
            }
        )
    )
    with running_service("--config", str(config), "--log-level", "warning") as url:
        yield url


def _as(principal: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {principal}-token"} if principal in HOLDERS else {}


def _asks(client: httpx.Client) -> dict[tuple[str, str], Ask]:
    """A request of each table route, made by `headers`' principal (plan ids made by the planner)."""
    planner = _as("planner")
    native = client.post("/plan", json={"table": TABLE, "inline-task-limit": 0}, headers=planner).json()["plan-id"]
    rest = client.post(f"{REST}/plan", json={}, headers=planner).json()
    paged = client.post(f"{REST}/plan", json={}, headers=planner).json()  # (another plan: `rest` is cancelled)
    report = {
        "report-type": "scan-report",
        "table-name": TABLE,
        "snapshot-id": 1,
        "filter": True,
        "schema-id": 0,
        "projected-field-ids": [1],
        "projected-field-names": ["id"],
        "metrics": {},
    }
    return {
        ("POST", "/plan"): lambda c, h: c.post("/plan", json={"table": TABLE}, headers=h),
        ("GET", "/plans/{plan_id}"): lambda c, h: c.get(f"/plans/{native}", headers=h),
        ("GET", "/plans/{plan_id}/tasks"): lambda c, h: c.get(f"/plans/{native}/tasks", headers=h),
        ("GET", "/plans/{plan_id}/tasks/{index}"): lambda c, h: c.get(f"/plans/{native}/tasks/0", headers=h),
        ("POST", "/explore"): lambda c, h: c.post("/explore", json={"table": TABLE}, headers=h),
        ("POST", "/aggregate"): lambda c, h: c.post(
            "/aggregate", json={"table": TABLE, "aggregates": ["count(*)"]}, headers=h
        ),
        ("GET", "/tables/{name}/snapshots"): lambda c, h: c.get(f"/tables/{TABLE}/snapshots", headers=h),
        ("GET", "/tables/{name}/refs"): lambda c, h: c.get(f"/tables/{TABLE}/refs", headers=h),
        ("GET", "/tables/{name}/history"): lambda c, h: c.get(f"/tables/{TABLE}/history", headers=h),
        ("HEAD", REST_KEY): lambda c, h: c.head(REST, headers=h),
        ("GET", REST_KEY): lambda c, h: c.get(REST, headers=h),
        ("POST", f"{REST_KEY}/metrics"): lambda c, h: c.post(f"{REST}/metrics", json=report, headers=h),
        ("POST", f"{REST_KEY}/plan"): lambda c, h: c.post(f"{REST}/plan", json={}, headers=h),
        ("GET", f"{REST_KEY}/plan/{{plan_id}}"): lambda c, h: c.get(f"{REST}/plan/{rest['plan-id']}", headers=h),
        ("DELETE", f"{REST_KEY}/plan/{{plan_id}}"): lambda c, h: c.delete(f"{REST}/plan/{rest['plan-id']}", headers=h),
        ("POST", f"{REST_KEY}/tasks"): lambda c, h: c.post(
            f"{REST}/tasks", json={"plan-task": paged["plan-tasks"][0]}, headers=h
        ),
    }


REST_KEY = "/v1/namespaces/{namespace}/tables/{table}"


def test_each_table_route_answers_its_privilege_and_refuses_the_one_below(service: str) -> None:
    with httpx.Client(base_url=service, timeout=60) as client:
        asks = _asks(client)
        table_routes = {r: n for r, n in ROUTE_PRIVILEGES.items() if isinstance(n, Privilege) and r in asks}
        assert len(table_routes) == len(asks)
        wrong: list[tuple[object, ...]] = []
        for route, needs in table_routes.items():
            ask = asks[route]
            allowed = ask(client, _as(HOLDER_OF[needs]))
            if allowed.status_code in (401, 403, 404):
                wrong.append((route, needs.value, "refused its holder", allowed.status_code, allowed.text[:200]))
            below = BELOW[needs]
            refused = ask(client, _as(below) if below else {"Authorization": "Bearer mallory-token"})
            if refused.status_code not in (403, 404):
                wrong.append((route, needs.value, f"answered {below or 'mallory'}", refused.status_code))
        assert wrong == []


def test_open_routes_need_no_token_and_the_others_refuse_none(service: str) -> None:
    with httpx.Client(base_url=service, timeout=60) as client:
        for (method, path), needs in ROUTE_PRIVILEGES.items():
            concrete = path.format(plan_id="p3.x.1.y", index=0, name=TABLE, namespace=NAMESPACE, table=NAME)
            answer = client.request(method, concrete)
            if needs == OPEN:
                assert answer.status_code != 401, (method, path)
            else:
                assert answer.status_code == 401, (method, path, answer.status_code)
        assert ROUTE_PRIVILEGES[("GET", "/v1/config")] == TOKEN
        config = client.get("/v1/config", headers=_as("lister"))
        assert config.status_code == 200
        metrics = client.get("/metrics", headers=_as("planner"))
        assert metrics.status_code == 403  # a privilege of the service, not of a table

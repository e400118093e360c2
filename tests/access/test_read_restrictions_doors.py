"""Read restrictions in the policy, on a real service over the demo warehouse: a rule's `row_filter` and
`column_masks` reach its principal as LoadTable's `read-restrictions` (the REST spec's form: the filter over
the table's columns, each mask by the column's field id as PyIceberg reads the schema), with
`scan-planning-mode: server` and no credentials; a client that does not declare it enforces them
(X-Iceberg-Client-Capabilities: read-restrictions) is refused at every door that plans or aggregates (403
saying why), so nothing is served as if unrestricted; one that declares it is planned under them, never
explained, never given credentials; a plan id ends when its restrictions change; an unrestricted principal is
served as before; a restriction that does not bind is a 403 naming the rule, and one that does not parse
stops the start naming it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from planner_service.demo import DEMO_CATALOG_NAME, demo_catalog_uri, ensure_demo_warehouse
from tests.conftest import running_service

TOKENS = {"alice": "alice-token", "bob": "bob-token", "carol": "carol-token"}
TABLE = "demo.customers"
REST_TABLE = "/v1/namespaces/demo/tables/customers"
ALICE: dict[str, object] = {
    "principals": ["alice"],
    "tables": [TABLE],
    "privileges": ["plan"],
    "row_filter": "region = 'eu'",
    "column_masks": {"email": "mask-alphanum"},
}
RULES: list[dict[str, object]] = [
    {"principals": ["bob"], "privileges": ["plan"]},
    ALICE,
    {"principals": ["carol"], "tables": [TABLE], "privileges": ["plan"], "column_masks": {"mail": "mask-alphanum"}},
    {"principals": ["alice", "carol"], "privileges": ["plan"]},  # (demo.events: unrestricted)
]


def _config(path: Path, rules: list[dict[str, object]]) -> None:
    path.write_text(json.dumps({"auth_tokens": TOKENS, "access_rules": rules, "access_reload_seconds": 0.2}))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("restricted-home")
    ensure_demo_warehouse(home / "demo-warehouse")
    return home


@pytest.fixture
def served(home: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    config = tmp_path / "service.json"
    _config(config, RULES)
    with running_service("--config", str(config), env={"SCAN_PLANNER_HOME": str(home)}) as url:
        yield url, config


def _as(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


def _email_field_id(home: Path) -> int:
    directory = home / "demo-warehouse"
    catalog = SqlCatalog(DEMO_CATALOG_NAME, uri=demo_catalog_uri(directory), warehouse=f"file://{directory}")
    return catalog.load_table(TABLE).schema().find_field("email").field_id


def test_load_table_carries_the_restrictions(served: tuple[str, Path], home: Path) -> None:
    url, _ = served
    headers = {**_as("alice"), "X-Iceberg-Access-Delegation": "vended-credentials"}
    loaded = httpx.get(f"{url}{REST_TABLE}", headers=headers, timeout=30)
    assert loaded.status_code == 200, loaded.text
    body = loaded.json()
    assert body["read-restrictions"] == {
        "required-row-filter": {"type": "eq", "term": "region", "value": "eu"},
        "required-column-projections": [{"action": "mask-alphanum", "field-id": _email_field_id(home)}],
    }
    assert body["config"] == {"scan-planning-mode": "server"} and "storage-credentials" not in body
    unrestricted = httpx.get(f"{url}{REST_TABLE}", headers=_as("bob"), timeout=30).json()
    assert "read-restrictions" not in unrestricted and "scan-planning-mode" not in unrestricted["config"]


ENFORCING = {"X-Iceberg-Client-Capabilities": "vended-credentials, read-restrictions"}
DOORS: list[tuple[str, str, dict[str, object]]] = [
    ("POST", "/plan", {"table": TABLE}),
    ("POST", "/plan", {"table": TABLE, "filter": "region = 'eu'", "inline-task-limit": 0}),
    ("POST", "/aggregate", {"table": TABLE, "aggregates": ["count(*)", "max(email)"]}),
    ("POST", "/explore", {"table": TABLE}),
    ("POST", f"{REST_TABLE}/plan", {}),
]


def test_a_client_that_does_not_enforce_is_refused_at_every_door(served: tuple[str, Path]) -> None:
    url, _ = served
    not_enforcing = {"X-Iceberg-Client-Capabilities": "vended-credentials, remote-signing"}  # (Iceberg 1.11's)
    with httpx.Client(base_url=url, timeout=30) as client:
        for headers in ({}, not_enforcing):
            for method, path, body in DOORS:
                refused = client.request(method, path, json=body, headers={**_as("alice"), **headers})
                assert refused.status_code == 403, (path, refused.text)
                error = refused.json()["error"]
                assert error["type"] == "ForbiddenException"
                message = error["message"]
                assert "restricted for principal 'alice' by access rule 2 (a row filter and column masks)" in message
                assert "did not declare that it enforces read restrictions" in message
                assert "X-Iceberg-Client-Capabilities: read-restrictions" in message
                assert "@example.com" not in refused.text and "Customer" not in refused.text
        for method, path, body in DOORS:  # the same doors, for a principal the policy does not restrict
            assert client.request(method, path, json=body, headers=_as("bob")).status_code == 200, path
        events = client.post("/plan", json={"table": "demo.events"}, headers=_as("alice"))
        assert events.status_code == 200  # her other table, unrestricted


def test_an_enforcing_client_is_planned_under_the_restrictions(served: tuple[str, Path], home: Path) -> None:
    url, _ = served
    headers = {**_as("alice"), **ENFORCING, "X-Iceberg-Access-Delegation": "vended-credentials"}
    with httpx.Client(base_url=url, timeout=30) as client:
        planned = client.post("/plan", json={"table": TABLE}, headers=headers)
        assert planned.status_code == 200, planned.text
        body = planned.json()
        assert body["read-restrictions"] == {
            "required-row-filter": {"type": "eq", "term": "region", "value": "eu"},
            "required-column-projections": [{"action": "mask-alphanum", "field-id": _email_field_id(home)}],
        }
        assert body["filter"] is True  # the caller's own filter: applied by the reader to the masked values
        assert "storage-credentials" not in body and "@example.com" not in planned.text
        aggregated = client.post("/aggregate", json=DOORS[2][2], headers=headers).json()
        assert not aggregated["exact"] and [a["value"] for a in aggregated["aggregates"]] == [None, None]
        assert all("read restrictions apply" in a["reason"] for a in aggregated["aggregates"])
        explored = client.post("/explore", json={"table": TABLE}, headers=headers)
        assert explored.status_code == 403 and "an explained plan" in explored.json()["error"]["message"]
        explained = client.post("/plan", json={"table": TABLE, "explain": True}, headers=headers)
        assert explained.status_code == 403
        rest = client.post(f"{REST_TABLE}/plan", json={"stats-fields": ["email"]}, headers=headers)
        assert rest.status_code == 200, rest.text
        assert "storage-credentials" not in rest.json() and "@example.com" not in rest.text
        assert "lower-bounds" not in rest.text and "value-counts" not in rest.text  # no statistics at all
        unrestricted = client.post(f"{REST_TABLE}/plan", json={"stats-fields": ["email"]}, headers=_as("bob"))
        assert "lower-bounds" in unrestricted.text  # (what the restricted answer leaves out)


def test_a_restriction_that_does_not_bind_refuses_naming_the_rule(served: tuple[str, Path]) -> None:
    url, _ = served
    refused = httpx.get(f"{url}{REST_TABLE}", headers=_as("carol"), timeout=30)
    assert refused.status_code == 403
    message = refused.json()["error"]["message"]
    assert "Access rule 3 restricts reads of demo.customers, but it masks column 'mail'" in message
    assert httpx.post(f"{url}/plan", json={"table": TABLE}, headers=_as("carol"), timeout=30).status_code == 403


def test_a_plan_id_ends_when_its_restrictions_change(served: tuple[str, Path]) -> None:
    url, config = served
    with httpx.Client(base_url=url, timeout=30) as client:
        bob = {**_as("bob"), **ENFORCING}
        planned = client.post("/plan", json={"table": TABLE, "inline-task-limit": 0}, headers=bob).json()
        task = f"/plans/{planned['plan-id']}/tasks/0"
        assert client.get(task, headers=bob).status_code == 200
        restricted = client.post(
            "/plan", json={"table": TABLE, "inline-task-limit": 0}, headers=_as("alice") | ENFORCING
        )
        alice_task = f"/plans/{restricted.json()['plan-id']}/tasks/0"
        assert client.get(alice_task, headers=_as("alice") | ENFORCING).status_code == 200
        _config(config, [{**ALICE, "principals": ["alice", "bob"], "row_filter": "region = 'us'"}])
        deadline = time.monotonic() + 15
        while (answer := client.get(task, headers=_as("bob"))).status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert answer.status_code == 403 and "restricted for principal 'bob'" in answer.text
        for headers, path in ((bob, task), (_as("alice") | ENFORCING, alice_task)):
            ended = client.get(path, headers=headers)  # planned unrestricted / under the old row filter
            assert ended.status_code == 404, ended.text
            assert "planned under read restrictions other than the caller's now" in ended.json()["error"]["message"]


def test_a_row_filter_that_does_not_parse_stops_the_start(tmp_path: Path, home: Path) -> None:
    config = tmp_path / "service.json"
    _config(config, [{**ALICE, "row_filter": "region = "}])
    cli = Path(sys.executable).with_name("scan-planner")
    started = subprocess.run(
        [str(cli), "serve", "--config", str(config), "--port", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"SCAN_PLANNER_HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    assert started.returncode == 2
    assert "the grants policy does not load: access rule 1: row_filter 'region = '" in started.stderr

"""Tables from an upstream Iceberg REST catalog (catalog/rest.py), end to end on loopback: a second
scan-planner serves the conformance warehouse through its /v1 catalog with OAuth2 client credentials
required (the upstream); the service under test knows only the upstream's URI and its client credentials.

PyIceberg's RestCatalog sees the same namespaces, tables and metadata through both; the service plans what
Iceberg Java planned; upstream 401/403/404s and an unreachable upstream are named as such."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog

from tests.conformance.reference import Conformance
from tests.conftest import free_port, running_service
from tests.plan_wire import splits

CLIENT = "planner"
SECRET = "upstream-s3cret"
STATIC_TOKEN = "upstream-static-token"
PLAN_CASES = ["identity_part/partition-and-column", "spec_evolution/category", "mor_position_deletes/current"]


def _config(directory: Path, name: str, settings: dict[str, object]) -> str:
    path = directory / f"{name}.json"
    path.write_text(json.dumps(settings))
    return str(path)


@pytest.fixture(scope="module")
def upstream(conformance: Conformance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The upstream catalog: the conformance warehouse behind OAuth2 client credentials or a static token."""
    directory = tmp_path_factory.mktemp("upstream")
    config = _config(directory, "upstream", {"oauth_clients": {CLIENT: SECRET}, "auth_tokens": [STATIC_TOKEN]})
    with running_service("--warehouse", str(conformance.dir / "warehouse"), "--config", config) as url:
        yield url


@pytest.fixture(scope="module")
def downstream(upstream: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The service under test: tables only from the upstream, by client credentials."""
    directory = tmp_path_factory.mktemp("downstream")
    config = _config(directory, "downstream", {"rest_catalog_credential": f"{CLIENT}:{SECRET}"})
    with running_service("--rest-catalog-uri", upstream, "--config", config) as url:
        yield url


def test_pyiceberg_sees_the_same_catalog_through_both(upstream: str, downstream: str) -> None:
    direct = RestCatalog("upstream", uri=upstream, credential=f"{CLIENT}:{SECRET}",
                         **{"oauth2-server-uri": f"{upstream}/v1/oauth/tokens"})  # fmt: skip
    through = RestCatalog("downstream", uri=downstream)
    assert through.list_namespaces() == direct.list_namespaces() and ("db",) in direct.list_namespaces()
    names = direct.list_tables("db")
    assert through.list_tables("db") == names and len(names) > 20
    for name in (n for n in names if n[1] in ("identity_part", "v3_dv", "schema_evolution")):
        ours, theirs = through.load_table(name), direct.load_table(name)
        assert ours.metadata_location == theirs.metadata_location
        assert ours.metadata.model_dump() == theirs.metadata.model_dump()


@pytest.mark.parametrize("case_id", PLAN_CASES)
def test_plans_of_upstream_tables_match_java(conformance: Conformance, downstream: str, case_id: str) -> None:
    case = conformance.case(case_id)
    body = {"table": f"db.{case['table']}", "filter": case["filter"], "case-sensitive": case["case_sensitive"]}
    response = httpx.post(f"{downstream}/plan", json=body, timeout=60)
    assert response.status_code == 200, response.text
    ours = [(f["data-file"]["file-path"], f["start"], f["length"]) for f in splits(response.json())]
    assert ours == [(t["path"], t["start"], t["length"]) for combined in case["tasks"] for t in combined]


def test_pyiceberg_plans_upstream_tables_through_the_service(conformance: Conformance, downstream: str) -> None:
    catalog = RestCatalog("downstream", uri=downstream, **{"scan-planning-mode": "server"})
    case = conformance.case("identity_part/partition-and-column")
    tasks = catalog.load_table("db.identity_part").scan(row_filter="category = 'c' AND id < 45").plan_files()
    assert sorted(t.file.file_path for t in tasks) == sorted(t["path"] for combined in case["tasks"] for t in combined)


def test_a_static_bearer_token(upstream: str, tmp_path: Path) -> None:
    config = _config(tmp_path, "token", {"rest_catalog_token": STATIC_TOKEN})
    with running_service("--rest-catalog-uri", upstream, "--config", config) as url:
        response = httpx.post(f"{url}/plan", json={"table": "db.unpartitioned"}, timeout=60)
        assert response.status_code == 200, response.text


def test_upstream_errors_are_named(upstream: str, downstream: str, tmp_path: Path) -> None:
    missing = httpx.post(f"{downstream}/plan", json={"table": "db.nope"}, timeout=60)
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "NoSuchTableException"
    assert "db.nope" in missing.json()["error"]["message"] and upstream in missing.json()["error"]["message"]
    no_namespace = httpx.get(f"{downstream}/v1/namespaces/nope/tables", timeout=60)
    assert no_namespace.status_code == 404, no_namespace.text

    wrong = _config(tmp_path, "wrong", {"rest_catalog_credential": f"{CLIENT}:not-the-s3cret-XYZ"})
    with running_service("--rest-catalog-uri", upstream, "--config", wrong) as url:
        refused = httpx.post(f"{url}/plan", json={"table": "db.unpartitioned"}, timeout=60)
    assert refused.status_code == 502, refused.text
    message = refused.json()["error"]["message"]
    assert "refused the service's client credentials: 401" in message and "rest_catalog_credential" in message
    assert "XYZ" not in message  # never the secret

    anonymous = _config(tmp_path, "anonymous", {})
    with running_service("--rest-catalog-uri", upstream, "--config", anonymous) as url:
        refused = httpx.post(f"{url}/plan", json={"table": "db.unpartitioned"}, timeout=60)
    assert refused.status_code == 502 and "401" in refused.json()["error"]["message"], refused.text

    nowhere = f"http://127.0.0.1:{free_port()}"
    with running_service("--rest-catalog-uri", nowhere, "--config", anonymous) as url:
        down = httpx.post(f"{url}/plan", json={"table": "db.unpartitioned"}, timeout=60)
        health = httpx.get(f"{url}/health", timeout=10)
    assert down.status_code == 503 and f"Cannot reach the REST catalog at {nowhere}" in down.json()["error"]["message"]
    assert health.status_code == 200


def _reports_received(upstream: str) -> float:
    text = httpx.get(f"{upstream}/metrics", headers={"Authorization": f"Bearer {STATIC_TOKEN}"}, timeout=30).text
    lines = [line for line in text.splitlines() if line.startswith("scan_planner_metrics_reports_total")]
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines if 'report_type="scan-report"' in line)


def test_scan_reports_go_to_the_catalog(upstream: str, tmp_path: Path) -> None:
    """With rest_catalog_report_metrics, each fresh plan's ScanReport is POSTed to the catalog's metrics
    endpoint (the upstream counts what it receives); a plan from the cache reports nothing again."""
    config = _config(tmp_path, "reporting", {"rest_catalog_credential": f"{CLIENT}:{SECRET}",
                                             "rest_catalog_report_metrics": True})  # fmt: skip
    before = _reports_received(upstream)
    with running_service("--rest-catalog-uri", upstream, "--config", config) as url:
        for _ in range(2):
            response = httpx.post(f"{url}/plan", json={"table": "db.identity_part", "filter": "id < 10"}, timeout=60)
            assert response.status_code == 200, response.text
        deadline = time.monotonic() + 10
        while _reports_received(upstream) < before + 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.3)
        assert _reports_received(upstream) == before + 1


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"report-type": "scan-report", "table-name": "db.t", "snapshot-id": 1, "metrics": {}}, 204),
        ({"report-type": "commit-report", "table-name": "db.t"}, 204),
        ({"report-type": "nonsense"}, 400),
        ({"table-name": "db.t"}, 400),
    ],
)
def test_the_metrics_endpoint(upstream: str, body: dict[str, object], status: int) -> None:
    headers = {"Authorization": f"Bearer {STATIC_TOKEN}"}
    response = httpx.post(f"{upstream}/v1/namespaces/db/tables/identity_part/metrics", json=body, headers=headers,
                          timeout=30)  # fmt: skip
    assert response.status_code == status, response.text
    if status == 400:
        assert "report-type" in response.json()["error"]["message"]

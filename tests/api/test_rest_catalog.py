"""The Iceberg REST catalog subset (/v1/config, namespaces, tables) through a real uvicorn on loopback,
with httpx and with PyIceberg 0.12's RestCatalog as the client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

from planner_service.settings import Settings
from tests.conformance.reference import Conformance
from tests.conftest import running_service

TABLE = "/v1/namespaces/db/tables/unpartitioned"
EXPECTED_ENDPOINTS = [
    "GET /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
]


@pytest.fixture(scope="module")
def client(conformance_service: str) -> httpx.Client:
    return httpx.Client(base_url=conformance_service, timeout=30)


@pytest.fixture(scope="module")
def nested_service(conformance: Conformance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Explicit tables in two-level namespaces (a.b, a.c), and no server-planning advertisement."""
    warehouse = conformance.dir / "warehouse"
    tables = {
        "a.b.unpartitioned": conformance.tables["unpartitioned"]["metadata_location"],
        "a.c.snapshots": conformance.tables["snapshots"]["metadata_location"],
    }
    config = tmp_path_factory.mktemp("nested") / "service.json"
    config.write_text(
        json.dumps({"allowed_roots": [str(warehouse)], "tables": tables, "advertise_server_planning": False})
    )
    with running_service("--config", str(config)) as url:
        yield url


def _error(response: httpx.Response, status: int, error_type: str) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert (error["code"], error["type"]) == (status, error_type)
    return str(error["message"])


# --- /v1/config ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client_version", "defaults"),
    [
        # what each client sends (captured from Iceberg Java's HTTPClient and PyIceberg's session)
        ("Apache Iceberg 1.12.0 (commit 212aa894e919ff9fdf89160da4aadcbe6858ac01)", {"scan-planning-mode": "server"}),
        ("Apache Iceberg 1.11.0 (commit 0cc337ace3)", {"scan-planning-mode": "server"}),
        ("Apache Iceberg 2.0.0", {"scan-planning-mode": "server"}),
        ("Apache Iceberg 1.10.2 (commit 57396d628cb9f92e121f9c2919398475393f0a3a)", {}),  # no REST scan client
        ("PyIceberg 0.12.0", {}),  # plans here when asked: synchronous only, no null partition values
        (None, {}),  # DuckDB sends none
    ],
)
def test_config_advertises_exactly_the_served_endpoints(
    client: httpx.Client, client_version: str | None, defaults: dict[str, str]
) -> None:
    headers = {"X-Client-Version": client_version} if client_version is not None else {}
    response = client.get("/v1/config", params={"warehouse": "anything"}, headers=headers)
    assert response.json() == {"defaults": defaults, "overrides": {}, "endpoints": EXPECTED_ENDPOINTS}
    assert response.headers["Vary"] == "X-Client-Version"


@pytest.mark.parametrize("prefix", ["", "/some-prefix"])
@pytest.mark.parametrize("endpoint", EXPECTED_ENDPOINTS)
def test_every_advertised_endpoint_is_served(client: httpx.Client, endpoint: str, prefix: str) -> None:
    method, template = endpoint.split(" ")
    plan_id = client.post(f"{TABLE}/plan", json={}).json()["plan-id"]
    path = (
        template.replace("/{prefix}", prefix)
        .replace("{namespace}", "db")
        .replace("{table}", "unpartitioned")
        .replace("{plan-id}", plan_id)
    )
    body = {"plan-task": "no-such-task"} if path.endswith("/tasks") else {}
    if path.endswith("/metrics"):
        body = {"report-type": "scan-report"}
    response = client.request(method, path, json=body if method == "POST" else None)
    assert response.status_code in (200, 204, 404), response.text
    if response.status_code == 404:  # only the task token is unknown: the route itself exists
        assert response.json()["error"]["type"] == "NoSuchPlanTaskException"


def test_config_without_server_planning(nested_service: str) -> None:
    with httpx.Client(base_url=nested_service) as c:
        assert c.get("/v1/config").json()["defaults"] == {}
        assert c.get("/v1/namespaces/a%1Fb/tables/unpartitioned").json()["config"] == {}


# --- Namespaces ------------------------------------------------------------------------------------------


def test_namespaces(client: httpx.Client) -> None:
    assert client.get("/v1/namespaces").json() == {"namespaces": [["db"]]}
    assert client.get("/v1/namespaces", params={"parent": "db"}).json() == {"namespaces": []}
    assert client.get("/v1/namespaces/db").json() == {"namespace": ["db"], "properties": {}}
    assert client.head("/v1/namespaces/db").status_code == 204
    assert client.get("/v1/some-prefix/namespaces/db").json() == {"namespace": ["db"], "properties": {}}


def test_namespace_errors(client: httpx.Client) -> None:
    assert "nope" in _error(client.get("/v1/namespaces/nope"), 404, "NoSuchNamespaceException")
    _error(client.get("/v1/namespaces", params={"parent": "nope"}), 404, "NoSuchNamespaceException")
    _error(client.get("/v1/namespaces/nope/tables"), 404, "NoSuchNamespaceException")
    missing = client.head("/v1/namespaces/nope")
    assert (missing.status_code, missing.content) == (404, b"")
    assert "levels must be non-empty" in _error(client.get("/v1/namespaces/db%1F"), 400, "BadRequestException")


def test_multi_level_namespaces(nested_service: str) -> None:
    with httpx.Client(base_url=nested_service) as c:
        assert c.get("/v1/namespaces").json() == {"namespaces": [["a"]]}
        assert c.get("/v1/namespaces", params={"parent": "a"}).json() == {"namespaces": [["a", "b"], ["a", "c"]]}
        assert c.get("/v1/namespaces/a%1Fb").json() == {"namespace": ["a", "b"], "properties": {}}
        assert c.head("/v1/namespaces/a").status_code == 204  # it holds namespaces, not tables
        assert c.get("/v1/namespaces/a/tables").json() == {"identifiers": []}
        tables = c.get("/v1/namespaces/a%1Fc/tables").json()
        assert tables == {"identifiers": [{"namespace": ["a", "c"], "name": "snapshots"}]}
        assert c.head("/v1/namespaces/a%1Fb/tables/unpartitioned").status_code == 204
        assert c.head("/v1/namespaces/a%1Fc/tables/unpartitioned").status_code == 404


# --- Tables ----------------------------------------------------------------------------------------------


def test_list_tables(client: httpx.Client, conformance: Conformance) -> None:
    identifiers = client.get("/v1/namespaces/db/tables").json()["identifiers"]
    names = {*conformance.tables, *conformance.expected["sized_tables"]}  # (metadata-only tables too)
    assert identifiers == [{"namespace": ["db"], "name": name} for name in sorted(names)]


def test_load_table(client: httpx.Client, conformance: Conformance) -> None:
    expected = conformance.tables["snapshots"]
    body = client.get("/v1/namespaces/db/tables/snapshots").json()
    assert body["metadata-location"] == expected["metadata_location"]
    assert body["metadata"] == json.loads(Path(expected["metadata_location"]).read_text())  # verbatim
    assert body["config"] == {}  # (DuckDB 1.5 takes any table config as storage options and wants a region)
    assert client.get("/v1/p/namespaces/db/tables/snapshots").json() == body
    assert client.head("/v1/namespaces/db/tables/snapshots").status_code == 204


def test_table_errors(client: httpx.Client) -> None:
    assert "db.nope" in _error(client.get("/v1/namespaces/db/tables/nope"), 404, "NoSuchTableException")
    _error(client.get("/v1/namespaces/nope/tables/unpartitioned"), 404, "NoSuchTableException")
    missing = client.head("/v1/namespaces/db/tables/nope")
    assert (missing.status_code, missing.content) == (404, b"")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/v1/namespaces/..%1F..%1Fdb/tables/unpartitioned", "Invalid namespace level '..': not a name"),
        ("/v1/namespaces/db/tables/%2E%2E", "Invalid table name '..': not a name"),
        ("/v1/namespaces/db%5Cx/tables/t", "path separators"),
        ("/v1/namespaces/db/tables/un%00partitioned", "control characters"),
        ("/v1/namespaces/db/tables/" + "x" * 300, "longer than 255 bytes"),
        ("/v1/namespaces/db/tables/" + "x" * 300 + "/plan", "longer than 255 bytes"),
    ],
)
def test_names_are_names_not_paths(client: httpx.Client, path: str, message: str) -> None:
    """Namespace levels and table names are checked as names before any lookup: `..`, separators and
    control characters never reach a path, and an overlong name is a 400 quoting 80 characters of it."""
    response = client.post(path, json={}) if path.endswith("/plan") else client.get(path)
    text = _error(response, 400, "BadRequestException")
    assert message in text and len(text) < 200
    head = client.head(path.removesuffix("/plan"))
    assert (head.status_code, head.content) == (400, b"")


# --- PyIceberg as the client -----------------------------------------------------------------------------


def test_pyiceberg_catalog(conformance_service: str, conformance: Conformance) -> None:
    catalog = RestCatalog("scan-planner", uri=conformance_service)
    assert not catalog.supports_server_side_planning()  # not advertised to PyIceberg: it plans for itself
    assert catalog.list_namespaces() == [("db",)]
    assert catalog.namespace_exists("db") and not catalog.namespace_exists("nope")
    assert catalog.load_namespace_properties("db") == {}
    names = {*conformance.tables, *conformance.expected["sized_tables"]}
    assert sorted(catalog.list_tables("db")) == [("db", name) for name in sorted(names)]
    assert catalog.table_exists("db.unpartitioned") and not catalog.table_exists("db.nope")
    table = catalog.load_table("db.snapshots")
    assert table.metadata_location == conformance.tables["snapshots"]["metadata_location"]
    assert table.metadata.current_snapshot_id == conformance.tables["snapshots"]["current_snapshot_id"]
    with pytest.raises(NoSuchTableError):
        catalog.load_table("db.nope")
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_tables("nope")
    server_mode = RestCatalog("scan-planner", uri=conformance_service, **{"scan-planning-mode": "server"})
    assert server_mode.supports_server_side_planning()  # asked for


def test_advertising_off_tells_no_client(nested_service: str) -> None:
    java = {"X-Client-Version": "Apache Iceberg 1.12.0 (commit 212aa89)"}
    assert httpx.get(f"{nested_service}/v1/config", headers=java).json()["defaults"] == {}


@pytest.mark.parametrize(
    ("value", "setting"), [(True, "all"), ("false", "off"), ("auto", "auto"), ("all", "all"), ("off", "off")]
)
def test_advertising_setting_takes_the_old_boolean(value: object, setting: str) -> None:
    assert Settings.model_validate({"advertise_server_planning": value}).advertise_server_planning == setting


def test_pyiceberg_nested_namespaces(nested_service: str) -> None:
    catalog = RestCatalog("scan-planner", uri=nested_service, **{"scan-planning-mode": "server"})
    assert catalog.list_namespaces() == [("a",)]
    assert catalog.list_namespaces("a") == [("a", "b"), ("a", "c")]
    assert catalog.list_tables("a.b") == [("a", "b", "unpartitioned")]
    table = catalog.load_table("a.b.unpartitioned")
    assert table.scan().to_arrow().num_rows == 60  # planned by the service through a two-level namespace

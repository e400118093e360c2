"""Tables from an upstream Iceberg REST catalog (catalog/rest.py), end to end on loopback: a second
scan-planner serves the conformance warehouse through its /v1 catalog with OAuth2 client credentials
required (the upstream); the service under test knows only the upstream's URI and its client credentials.

PyIceberg's RestCatalog sees the same namespaces, tables and metadata through both; the service plans what
Iceberg Java planned; upstream 401/403/404s and an unreachable upstream are named as such."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import ForbiddenError
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from planner_service.catalog.base import TableIdentifier
from planner_service.catalog.rest import RestCatalog as UpstreamCatalog
from planner_service.catalog.rest import RestCatalogConfig
from planner_service.io.fileio import FileIO
from tests.catalog.fronted_catalog import FORBIDDEN_MESSAGE, FrontedCatalog, fronted
from tests.conformance.reference import Conformance
from tests.conftest import free_port, running_service
from tests.plan_wire import splits

CLIENT = "planner"
SECRET = "upstream-s3cret"
STATIC_TOKEN = "upstream-static-token"
PLAN_CASES = ["identity_part/partition-and-column", "spec_evolution/category", "mor_position_deletes/current"]
NESTED_CATALOG = "nested"
NESTED_NAMESPACES = [("a",), ("a", "b"), ("a", "b", "c")]
# What the fronted upstream's GET /v1/config answers, by warehouse (a prefix per warehouse, as hosted catalogs)
PREFIX_CONFIGS: dict[str | None, dict[str, dict[str, str]]] = {
    "analytics": {"defaults": {"prefix": "analytics-catalog"}, "overrides": {}},
    "governed": {"defaults": {"prefix": "a-default"}, "overrides": {"prefix": "governed-catalog"}},
}


def _config(directory: Path, name: str, settings: Mapping[str, object]) -> str:
    path = directory / f"{name}.json"
    path.write_text(json.dumps(settings))
    return str(path)


@pytest.fixture(scope="module")
def nested(tmp_path_factory: pytest.TempPathFactory) -> SqlCatalog:
    """Tables in nested namespaces, written by PyIceberg to a SQL catalog: a.b.c.events (partitioned by
    region, two appends) and a.b.items."""
    directory = tmp_path_factory.mktemp("nested")
    catalog = SqlCatalog(NESTED_CATALOG, uri=f"sqlite:///{directory / 'catalog.db'}", warehouse=f"file://{directory}")
    for namespace in NESTED_NAMESPACES:
        catalog.create_namespace(namespace)
    schema = Schema(
        NestedField(1, "id", LongType(), required=False), NestedField(2, "region", StringType(), required=False)
    )
    events = catalog.create_table(
        "a.b.c.events",
        schema,
        partition_spec=PartitionSpec(
            PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region")
        ),
    )
    for start in (0, 100):
        ids = list(range(start, start + 100))
        events.append(
            pa.table({"id": ids, "region": ["eu" if i % 3 else "us" for i in ids]}, schema=events.schema().as_arrow())
        )
    items = catalog.create_table("a.b.items", schema)
    items.append(pa.table({"id": [1, 2], "region": ["eu", "us"]}, schema=items.schema().as_arrow()))
    return catalog


@pytest.fixture(scope="module")
def upstream(conformance: Conformance, nested: SqlCatalog, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The upstream catalog behind OAuth2 client credentials or a static token: the conformance warehouse, and
    the nested namespaces' SQL catalog."""
    directory = tmp_path_factory.mktemp("upstream")
    sql = {"catalog_uri": nested.properties["uri"], "catalog_name": NESTED_CATALOG}
    config = _config(directory, "upstream", {"oauth_clients": {CLIENT: SECRET}, "auth_tokens": [STATIC_TOKEN], **sql})
    with running_service("--warehouse", str(conformance.dir / "warehouse"), "--config", config) as url:
        yield url


@pytest.fixture(scope="module")
def downstream(upstream: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The service under test: tables only from the upstream, by client credentials."""
    directory = tmp_path_factory.mktemp("downstream")
    config = _config(directory, "downstream", {"rest_catalog_credential": f"{CLIENT}:{SECRET}"})
    with running_service("--rest-catalog-uri", upstream, "--config", config) as url:
        yield url


def _pyiceberg(uri: str, **properties: str) -> RestCatalog:
    """PyIceberg's RestCatalog with the upstream's client credentials."""
    return RestCatalog(
        "reference",
        uri=uri,
        credential=f"{CLIENT}:{SECRET}",
        **{"oauth2-server-uri": f"{uri}/v1/oauth/tokens", **properties},
    )


def test_pyiceberg_sees_the_same_catalog_through_both(upstream: str, downstream: str) -> None:
    direct = _pyiceberg(upstream)
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
    # the service's own words, whichever catalog was asked: a table a caller may not see is answered with them
    assert missing.json()["error"]["message"] == "Table does not exist: db.nope"
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
    config = _config(
        tmp_path, "reporting", {"rest_catalog_credential": f"{CLIENT}:{SECRET}", "rest_catalog_report_metrics": True}
    )
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
    response = httpx.post(
        f"{upstream}/v1/namespaces/db/tables/identity_part/metrics", json=body, headers=headers, timeout=30
    )
    assert response.status_code == status, response.text
    if status == 400:
        assert "report-type" in response.json()["error"]["message"]


def test_nested_namespaces_listed_and_planned_through_both(upstream: str, downstream: str, nested: SqlCatalog) -> None:
    """a.b.c: PyIceberg lists each level, loads and plans the tables through the service as through the
    upstream; what it finds is what PyIceberg wrote, and the plans are PyIceberg's own (client-side) plans."""
    direct, through = _pyiceberg(upstream), RestCatalog("downstream", uri=downstream)
    written = [*NESTED_NAMESPACES, ("db",)]  # (db: the conformance warehouse's)
    for parent in [(), *NESTED_NAMESPACES]:
        children = sorted(
            {ns[: len(parent) + 1] for ns in written if len(ns) > len(parent) and ns[: len(parent)] == parent}
        )
        assert through.list_namespaces(parent) == direct.list_namespaces(parent) == children, parent
    assert through.list_tables(("a", "b", "c")) == direct.list_tables(("a", "b", "c")) == [("a", "b", "c", "events")]
    assert through.list_tables(("a", "b")) == direct.list_tables(("a", "b")) == [("a", "b", "items")]
    for name in ("a.b.c.events", "a.b.items"):
        assert through.load_table(name).metadata_location == nested.load_table(name).metadata_location

    row_filter = "region = 'eu' AND id < 100"
    expected = sorted(
        t.file.file_path for t in nested.load_table("a.b.c.events").scan(row_filter=row_filter).plan_files()
    )
    assert len(expected) == 1  # the eu file of the first append: the second's ids start at 100
    response = httpx.post(f"{downstream}/plan", json={"table": "a.b.c.events", "filter": row_filter}, timeout=60)
    assert response.status_code == 200, response.text
    assert sorted({f["data-file"]["file-path"] for f in splits(response.json())}) == expected
    served = RestCatalog("downstream", uri=downstream, **{"scan-planning-mode": "server"})
    tasks = served.load_table("a.b.c.events").scan(row_filter=row_filter).plan_files()
    assert sorted(t.file.file_path for t in tasks) == expected


@pytest.fixture(scope="module")
def front(upstream: str) -> Iterator[tuple[FrontedCatalog, str]]:
    """The upstream fronted as a hosted catalog: a prefix per warehouse in /v1/config, and what lies under
    namespace `a` forbidden (403: listed, never loaded)."""
    catalog = FrontedCatalog(upstream, PREFIX_CONFIGS, forbidden_namespace="a")
    with fronted(catalog) as url:
        yield catalog, url


def _load_paths(front: FrontedCatalog) -> list[str]:
    """The config and LoadTable requests a client made (without LoadTable's query parameters)."""
    paths = [p.split("?")[0] if "/tables/" in p else p for p in front.paths()]
    return [p for p in paths if p.startswith("/v1/config") or p.endswith("/tables/unpartitioned")]


@pytest.mark.parametrize(
    ("warehouse", "prefix", "expected"),
    [
        ("analytics", None, "analytics-catalog"),  # the catalog's defaults
        ("analytics", "mine", "mine"),  # the setting beats the catalog's defaults
        ("governed", "mine", "governed-catalog"),  # the catalog's overrides beat the setting
        (None, "mine", "mine"),
        (None, None, None),
    ],
)
def test_the_prefix_as_the_spec_merges_it(
    front: tuple[FrontedCatalog, str], warehouse: str | None, prefix: str | None, expected: str | None
) -> None:
    """REST spec, getConfig: the catalog's defaults, then the client's configuration, then its overrides.
    PyIceberg's RestCatalog, given the same warehouse and prefix, asks for the same paths."""
    catalog, url = front
    properties = {key: value for key, value in (("warehouse", warehouse), ("prefix", prefix)) if value is not None}
    catalog.requests.clear()
    _pyiceberg(url, **properties).load_table("db.unpartitioned")
    theirs = _load_paths(catalog)
    catalog.requests.clear()
    config = RestCatalogConfig(uri=url, warehouse=warehouse, prefix=prefix, credential=f"{CLIENT}:{SECRET}")
    ours = UpstreamCatalog(FileIO(), config)
    try:
        ours.load_table(TableIdentifier(("db",), "unpartitioned"))
    finally:
        ours.close()
    config_request = f"/v1/config?warehouse={warehouse}" if warehouse else "/v1/config"
    table = f"/v1/{expected + '/' if expected else ''}namespaces/db/tables/unpartitioned"
    assert _load_paths(catalog) == theirs == [config_request, table]


def test_the_service_with_a_warehouse_prefix_and_a_forbidden_namespace(
    front: tuple[FrontedCatalog, str], tmp_path: Path
) -> None:
    """rest_catalog_warehouse and rest_catalog_prefix as settings; the catalog's 403 is a 502 naming it."""
    catalog, url = front
    settings = {
        "rest_catalog_credential": f"{CLIENT}:{SECRET}",
        "rest_catalog_warehouse": "analytics",
        "rest_catalog_prefix": "mine",
    }
    with running_service("--rest-catalog-uri", url, "--config", _config(tmp_path, "fronted", settings)) as ours:
        catalog.requests.clear()
        planned = httpx.post(f"{ours}/plan", json={"table": "db.unpartitioned"}, timeout=60)
        assert planned.status_code == 200, planned.text
        assert catalog.paths()[:2] == ["/v1/config?warehouse=analytics", "/v1/mine/namespaces/db/tables/unpartitioned"]
        forbidden = httpx.post(f"{ours}/plan", json={"table": "a.b.items"}, timeout=60)
        listing = httpx.get(f"{ours}/v1/namespaces/a%1Fb/tables", timeout=60)
    with pytest.raises(ForbiddenError, match=FORBIDDEN_MESSAGE):  # PyIceberg names it so too
        _pyiceberg(url).load_table("a.b.items")
    for refused in (forbidden, listing):
        assert refused.status_code == 502, refused.text
        message = refused.json()["error"]["message"]
        assert f"The REST catalog at {url} forbade GET /v1/mine/namespaces/a%1Fb/" in message, message
        assert f"403 Forbidden ({FORBIDDEN_MESSAGE})" in message and "rest_catalog_credential" in message

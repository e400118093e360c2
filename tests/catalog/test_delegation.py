"""Delegation to an upstream REST catalog (rest_catalog_delegation): the caller's bearer token goes to the
upstream for listings and LoadTable, so the upstream's grants decide per caller, not the service's one
identity (the confused deputy the review named). The upstream here is the fronted proxy (tests/catalog/
fronted_catalog.py) before a second scan-planner serving the conformance warehouse, deciding per token as
Polaris does; and PyIceberg as the caller; and Iceberg's own REST catalog server as a third-party upstream."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError

from tests.catalog.fronted_catalog import FrontedCatalog, fronted
from tests.catalog.iceberg_rest_server import iceberg_rest_server, register_table
from tests.conformance.reference import Conformance
from tests.conftest import moto_server, running_service
from tests.spark_client.vended import READER_SECRET, REGION, static_vending, vending_service, write_vended_table
from tests.spark_client.vended import TABLE as VENDED_TABLE

TEAM_A, TEAM_B = "team-a-token-0123456789", "team-b-token-0123456789"
TABLE = "db.unpartitioned"
KEEP_SECONDS = 1.0


@pytest.fixture(scope="module")
def upstream(conformance: Conformance) -> Iterator[str]:
    with running_service("--warehouse", str(conformance.dir / "warehouse"), "--log-level", "warning") as url:
        yield url


@pytest.fixture
def front(upstream: str) -> Iterator[tuple[FrontedCatalog, str]]:
    catalog = FrontedCatalog(upstream, {}, forbidden_namespace="none", grants={TEAM_A: {"db"}, TEAM_B: set()})
    with fronted(catalog) as url:
        yield catalog, url


@pytest.fixture
def service(front: tuple[FrontedCatalog, str], tmp_path: Path) -> Iterator[str]:
    config = tmp_path / "service.json"
    settings = {"rest_catalog_delegation": True, "rest_catalog_delegation_seconds": KEEP_SECONDS}
    config.write_text(json.dumps(settings))
    with running_service("--rest-catalog-uri", front[1], "--config", str(config), "--log-level", "warning") as url:
        yield url


def _as(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_upstream_decides_per_caller(front: tuple[FrontedCatalog, str], service: str) -> None:
    catalog, _ = front
    with httpx.Client(base_url=service, timeout=60) as c:
        planned = c.post("/plan", json={"table": TABLE, "inline-task-limit": 0}, headers=_as(TEAM_A))
        assert planned.status_code == 200, planned.text
        refused = c.post("/plan", json={"table": TABLE}, headers=_as(TEAM_B))
        assert refused.status_code == 403 and refused.json()["error"]["type"] == "ForbiddenException"
        assert ".parquet" not in refused.text
        loaded = c.get("/v1/namespaces/db/tables/unpartitioned", headers=_as(TEAM_B))
        assert loaded.status_code == 403
        assert c.post("/plan", json={"table": TABLE}, headers=_as("unknown-token")).status_code == 401
        assert c.post("/plan", json={"table": TABLE}).status_code == 401  # no token: nothing to ask as
        # the upstream saw each caller's own token, never one of the service's
        assert set(catalog.callers) <= {TEAM_A, TEAM_B, "unknown-token"} and TEAM_B in catalog.callers
        # team A's plan id is unknown to team B
        plan_id = planned.json()["plan-id"]
        assert c.get(f"/plans/{plan_id}", headers=_as(TEAM_A)).status_code == 200
        assert c.get(f"/plans/{plan_id}", headers=_as(TEAM_B)).status_code in (403, 404)


def test_answers_are_kept_briefly_and_a_revoked_grant_takes_effect(
    front: tuple[FrontedCatalog, str], service: str
) -> None:
    catalog, _ = front
    assert catalog.grants is not None
    with httpx.Client(base_url=service, timeout=60, headers=_as(TEAM_A)) as c:
        first = c.post("/plan", json={"table": TABLE, "inline-task-limit": 0})
        asked = len(catalog.callers)
        for _ in range(5):  # a plan a second costs no LoadTable each
            assert c.post("/plan", json={"table": TABLE}).status_code == 200
        assert len(catalog.callers) == asked
        catalog.grants[TEAM_A] = set()  # revoked upstream
        time.sleep(KEEP_SECONDS + 0.2)
        assert c.post("/plan", json={"table": TABLE}).status_code == 403
        assert c.get(f"/plans/{first.json()['plan-id']}/tasks/0").status_code == 403


def test_pyiceberg_as_two_callers(service: str) -> None:
    allowed = RestCatalog("a", uri=service, token=TEAM_A, **{"scan-planning-mode": "server"})
    files = [t.file.file_path for t in allowed.load_table(TABLE).scan().plan_files()]
    assert files and all(f.endswith(".parquet") for f in files)
    denied = RestCatalog("b", uri=service, token=TEAM_B)
    with pytest.raises(ForbiddenError):
        denied.load_table(TABLE)


def test_iceberg_rest_catalog_server_as_the_upstream(conformance: Conformance, tmp_path: Path) -> None:
    """A third-party REST catalog: Iceberg's own RESTCatalogServer (iceberg-open-api's test fixtures) holding
    a table Iceberg Java wrote, registered; the service plans it through the server as the caller (the server
    asks for no authentication, so any token passes) and as itself, with the same files either way."""
    warehouse = conformance.dir / "warehouse"
    metadata = sorted((warehouse / "db" / "unpartitioned" / "metadata").glob("v*.metadata.json"))[-1]
    with iceberg_rest_server(tmp_path / "server-warehouse") as server:
        register_table(server, "db", "unpartitioned", f"file://{metadata}")
        files = {}
        for name, settings in (("as-caller", {"rest_catalog_delegation": True}), ("as-itself", {})):
            config = tmp_path / f"{name}.json"
            config.write_text(json.dumps({**settings, "allowed_roots": [str(warehouse)]}))
            with running_service("--rest-catalog-uri", server, "--config", str(config)) as url:
                headers = _as("any-token") if settings else {}
                tables = httpx.get(f"{url}/v1/namespaces/db/tables", headers=headers, timeout=60)
                assert tables.json()["identifiers"] == [{"namespace": ["db"], "name": "unpartitioned"}], tables.text
                planned = httpx.post(f"{url}/plan", json={"table": TABLE}, headers=headers, timeout=60)
                assert planned.status_code == 200, planned.text
                files[name] = sorted(json.dumps(t, sort_keys=True) for t in planned.json()["tasks"])
        assert files["as-caller"] == files["as-itself"] and files["as-caller"]


def test_the_upstreams_vended_credentials_pass_through(tmp_path: Path) -> None:
    """Upstream: a scan-planner vending static credentials for a table on S3 (moto), behind the fronted proxy
    deciding per token. The caller allowed upstream gets the upstream's own credentials for the table, from
    LoadTable (when it asks for vended-credentials) and with its plan; the service reads the manifests with
    them too (it has no S3 keys of its own); the caller refused upstream gets none of it."""
    with moto_server() as endpoint:
        catalog = write_vended_table(endpoint, tmp_path)
        upstream_dir = tmp_path / "upstream"
        upstream_dir.mkdir()
        with vending_service(upstream_dir, catalog, endpoint, **static_vending()) as upstream:
            proxy = FrontedCatalog(upstream, {}, forbidden_namespace="none", grants={TEAM_A: {"demo"}, TEAM_B: set()})
            with fronted(proxy) as front:
                config = tmp_path / "service.json"
                settings = {"rest_catalog_delegation": True, "s3_endpoint": endpoint, "s3_region": REGION}
                config.write_text(json.dumps(settings))
                with running_service("--rest-catalog-uri", front, "--config", str(config)) as url:
                    delegation = {"X-Iceberg-Access-Delegation": "vended-credentials"}
                    with httpx.Client(base_url=url, timeout=60) as c:
                        loaded = c.get("/v1/namespaces/demo/tables/events", headers={**_as(TEAM_A), **delegation})
                        assert loaded.status_code == 200, loaded.text
                        (vended,) = loaded.json()["storage-credentials"]
                        assert vended["config"]["s3.secret-access-key"] == READER_SECRET
                        plain = c.get("/v1/namespaces/demo/tables/events", headers=_as(TEAM_A))
                        assert "storage-credentials" not in plain.json()  # not asked for, not given
                        planned = c.post("/plan", json={"table": VENDED_TABLE}, headers=_as(TEAM_A))
                        assert planned.status_code == 200, planned.text
                        assert planned.json()["storage-credentials"] == [vended]
                        refused = c.get("/v1/namespaces/demo/tables/events", headers={**_as(TEAM_B), **delegation})
                        assert refused.status_code == 403 and READER_SECRET not in refused.text


def test_one_callers_load_widens_nothing_for_another(conformance: Conformance, service: str) -> None:
    """Team A loads the table (the service then trusts its directory); team B, whom the upstream refuses it,
    asks for it by metadata location, its plan id and an aggregate: the same missing table as any, asked of
    the upstream as team B. Metrics answer no token the service cannot judge."""
    with httpx.Client(base_url=service, timeout=60) as c:
        loaded = c.get("/v1/namespaces/db/tables/unpartitioned", headers=_as(TEAM_A))
        assert loaded.status_code == 200, loaded.text
        location = loaded.json()["metadata-location"]
        mine = c.post("/plan", json={"metadata-location": location, "inline-task-limit": 0}, headers=_as(TEAM_A))
        assert mine.status_code == 200, mine.text
        for answer in (
            c.post("/plan", json={"metadata-location": location}, headers=_as(TEAM_B)),
            c.post("/aggregate", json={"metadata-location": location, "aggregates": ["count(*)"]}, headers=_as(TEAM_B)),
            c.post("/plan", json={"metadata-location": f"file://{location}"}, headers=_as(TEAM_B)),
        ):
            assert answer.status_code == 404 and answer.json()["error"]["type"] == "NoSuchTableException", answer.text
            assert ".parquet" not in answer.text
        assert c.get("/metrics", headers=_as("any-string-at-all")).status_code == 403

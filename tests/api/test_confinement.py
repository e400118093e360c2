"""Confinement: a service started with only `--warehouse` reads nothing outside it, whatever form a location
takes. Every refusal is a 403 that comes before any read: the locations lead to FIFOs, which a read would
wait on forever, so a refused location that had been opened would time the request out instead."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from planner_service.catalog.hadoop import current_metadata_location
from planner_service.demo import DEMO_TABLE, write_demo_table
from planner_service.io.fileio import FileIO
from tests.conformance.reference import Conformance
from tests.conftest import running_service

TIMEOUT = 10  # a request that opened a FIFO would still be waiting


class Site:
    """The service over `warehouse` (tables db.<name>, links into `outside`), and a directory beside it."""

    def __init__(self, url: str, warehouse: Path, outside: Path, foreign_table: str) -> None:
        self.url, self.warehouse, self.outside, self.foreign_table = url, warehouse, outside, foreign_table


@pytest.fixture(scope="module")
def site(conformance: Conformance) -> Iterator[Site]:
    root = Path(tempfile.mkdtemp(prefix="confinement-"))
    warehouse, outside = root / "warehouse", root / "outside"
    (warehouse / "db").mkdir(parents=True)
    outside.mkdir()
    source = conformance.dir / "warehouse" / "db" / "unpartitioned"
    shutil.copytree(source, warehouse / "db" / "inside")  # its metadata names the manifests of `source`
    os.mkfifo(outside / "v1.metadata.json")
    os.mkfifo(outside / "secret")
    (warehouse / "db" / "fifo-link.metadata.json").symlink_to(outside / "v1.metadata.json")
    (warehouse / "db" / "dir-link").symlink_to(outside)
    (warehouse / "db" / "table-link").symlink_to(source)  # a valid Iceberg table, outside the warehouse
    (warehouse / "db" / "secret.metadata.json").write_text('{"format-version": "hunter2-SECRET"}')
    foreign = current_metadata_location(FileIO(), str(source))
    assert foreign is not None
    try:
        with running_service("--warehouse", str(warehouse), "--log-level", "warning") as url:
            yield Site(url, warehouse, outside, foreign)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def client(site: Site) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=site.url, timeout=TIMEOUT) as client:
        yield client


def _forms(site: Site) -> list[str]:
    w, o = site.warehouse, site.outside
    fifo = o / "v1.metadata.json"
    return [
        str(fifo),
        f"file:{fifo}",
        f"file://{fifo}",
        f"file://localhost{fifo}",
        f"{w}/../outside/v1.metadata.json",
        f"{w}/db/../../outside/v1.metadata.json",
        f"file://{w}/%2e%2e/outside/v1.metadata.json",
        f"file://{quote(str(w))}%2F..%2Foutside%2Fv1.metadata.json",
        f"{w}/db/fifo-link.metadata.json",  # a link in the warehouse to a FIFO outside
        f"{w}/db/dir-link/v1.metadata.json",  # through a linked directory
        f"{w}/db/dir-link/secret",
        os.path.relpath(fifo),  # relative to the service's working directory
        "outside/v1.metadata.json",
        "/etc/passwd",
        "/dev/zero",
        "/proc/self/environ",
        "s3://bucket/warehouse/v1.metadata.json",
        site.foreign_table,  # a valid table outside the warehouse
        f"{w}/db/table-link/metadata/{Path(site.foreign_table).name}",
    ]


def test_every_form_of_an_outside_location_is_refused_before_a_read(site: Site, client: httpx.Client) -> None:
    for location in _forms(site):
        response = client.post("/plan", json={"metadata-location": location})
        assert response.status_code == 403, f"{location}: {response.status_code} {response.text[:300]}"
        error = response.json()["error"]
        assert error["type"] == "ForbiddenException" and location in error["message"]
        assert str(site.outside) not in error["message"].replace(location, ""), "names only what the client gave"
    assert client.get("/health").json()["status"] == "ok"


def test_control_characters_in_a_location_are_a_bad_request(site: Site, client: httpx.Client) -> None:
    """A NUL (which the OS would cut the path at) or another control character, inside the roots or not."""
    for location in (f"{site.warehouse}/db/x\0y.metadata.json", f"{site.warehouse}/db/\x01.json", "s3://b/k\n"):
        response = client.post("/plan", json={"metadata-location": location})
        assert response.status_code == 400, f"{location!r}: {response.status_code} {response.text[:300]}"
        assert "control character" in response.json()["error"]["message"]
    assert client.get("/health").json()["status"] == "ok"


def test_refusals_do_not_tell_whether_a_file_exists(client: httpx.Client) -> None:
    answers = set()
    for location in ("/etc/passwd", "/etc/no-such-file", "/etc", "/root/.bashrc"):
        response = client.post("/plan", json={"metadata-location": location})
        answers.add((response.status_code, response.json()["error"]["message"].replace(location, "X")))
    assert len(answers) == 1, answers


def test_links_and_references_out_of_the_warehouse(site: Site, client: httpx.Client) -> None:
    """db.inside is a copy whose metadata names the original's manifests: every read is checked, so its
    manifest list (outside) is refused. (The conformance suites plan the whole conformance warehouse on a
    service started with only --warehouse.)"""
    by_name = client.post("/plan", json={"table": "db.inside"})
    assert by_name.status_code == 403 and "snap-" in by_name.json()["error"]["message"], by_name.text[:300]
    tables = client.get("/v1/namespaces/db/tables").json()["identifiers"]
    assert [t["name"] for t in tables] == ["inside"], "links that lead outside are not listed"
    linked = client.post("/plan", json={"table": "db.table-link"})
    assert linked.status_code == 403 and "resolves outside" in linked.json()["error"]["message"]


def test_rest_names_are_names_not_paths(client: httpx.Client) -> None:
    for namespace, table in (("..\x1f..\x1fsome\x1fdir", "t"), ("db", ".."), ("..", "db"), ("db\\..", "t")):
        path = f"/v1/namespaces/{_encoded(namespace)}/tables/{_encoded(table)}"
        got = client.get(path)
        assert got.status_code == 400, f"{path}: {got.status_code} {got.text[:200]}"
        assert client.head(path).status_code == 400
        assert client.post(f"{path}/plan", json={}).status_code == 400
    routed = client.get(f"/v1/namespaces/{_encoded('db/..')}/tables/t")  # an encoded / still separates segments
    assert routed.status_code == 404 and "No route" in routed.json()["error"]["message"]


def test_error_bodies_quote_no_file_contents(site: Site, client: httpx.Client) -> None:
    location = f"{site.warehouse}/db/secret.metadata.json"
    response = client.post("/plan", json={"metadata-location": location})
    assert response.status_code == 422, response.text[:300]
    assert "hunter2" not in response.text and location in response.json()["error"]["message"]


def test_a_sql_catalog_service_follows_its_catalog(tmp_path: Path) -> None:
    """With a SQL catalog and no warehouse, the roots are the catalog's tables: a table created after the
    service started is planned by name and by its metadata location; other locations stay refused."""
    db = tmp_path / "catalog.db"
    catalog = PyIcebergSqlCatalog("followed", uri=f"sqlite:///{db}", warehouse=f"file://{tmp_path / 'first'}")
    write_demo_table(catalog)
    (tmp_path / "stray").mkdir()
    os.mkfifo(tmp_path / "stray" / "v1.metadata.json")
    args = ("--catalog-uri", str(db), "--catalog-name", "followed", "--log-level", "warning")
    with running_service(*args) as url, httpx.Client(base_url=url, timeout=60) as client:
        assert client.post("/plan", json={"table": DEMO_TABLE}).status_code == 200
        later = PyIcebergSqlCatalog("followed", uri=f"sqlite:///{db}", warehouse=f"file://{tmp_path / 'later'}")
        later.create_namespace("late")
        created = later.create_table("late.t", later.load_table(DEMO_TABLE).schema())
        by_location = client.post("/plan", json={"metadata-location": created.metadata_location})
        assert by_location.status_code == 200, by_location.text[:300]
        assert client.post("/plan", json={"table": "late.t"}).status_code == 200
        stray = client.post(
            "/plan", json={"metadata-location": str(tmp_path / "stray" / "v1.metadata.json")}, timeout=TIMEOUT
        )
        assert stray.status_code == 403, stray.text[:300]


def _encoded(name: str) -> str:
    """Percent-encoded, dots too (else the client would resolve `..` segments before sending)."""
    return quote(name, safe="").replace(".", "%2E")

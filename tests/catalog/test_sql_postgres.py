"""A SQL catalog in a real PostgreSQL server on loopback: PyIceberg's SqlCatalog writes the demo table
there, and we find and plan it, through the library and through the service."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from planner_service.catalog.base import TableIdentifier
from planner_service.catalog.sql import SqlCatalog
from planner_service.demo import DEMO_TABLE, write_demo_table
from planner_service.io.fileio import FileIO
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import ScanRequest
from tests.conftest import free_port, running_service
from tests.plan_wire import splits


def _pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        pytest.fail("PostgreSQL is not installed: scripts/setup_tests.sh installs it (apt-get install postgresql)")
    return Path(found[-1]).parent


def _as_postgres(*cmd: str) -> None:
    subprocess.run(["su", "postgres", "-s", "/bin/sh", "-c", " ".join(cmd)], check=True, capture_output=True)


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (trust auth), stopped afterwards."""
    bin_dir, port = _pg_bin(), free_port()
    root = Path(tempfile.mkdtemp(prefix="scan-planner-pg-"))  # pytest's tmp dirs are private to root
    os.chmod(root, 0o755)
    data = root / "data"
    data.mkdir()
    shutil.chown(data, "postgres", "postgres")
    _as_postgres(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
    _as_postgres(
        str(bin_dir / "pg_ctl"),
        "-D",
        str(data),
        "-w",
        "-l",
        str(data / "log"),
        "-o",
        f"'-p {port} -k {data} -h 127.0.0.1'",
        "start",
    )
    try:
        _as_postgres(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "iceberg")
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/iceberg"
    finally:
        _as_postgres(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def pg_table(postgres_url: str, tmp_path_factory: pytest.TempPathFactory) -> PyIcebergSqlCatalog:
    warehouse = tmp_path_factory.mktemp("pgwarehouse")
    catalog = PyIcebergSqlCatalog("pg", uri=postgres_url, warehouse=f"file://{warehouse}")
    write_demo_table(catalog)
    return catalog


def test_plans_a_table_from_a_postgres_catalog(postgres_url: str, pg_table: PyIcebergSqlCatalog) -> None:
    io = FileIO()
    table = SqlCatalog(io, postgres_url, "pg").load_table(TableIdentifier.parse(DEMO_TABLE))
    planner = ScanPlanner(io)
    try:
        plan = planner.plan(table, ScanRequest())
    finally:
        planner.close()
    expected = Counter(t.file.file_path for t in pg_table.load_table(DEMO_TABLE).scan().plan_files())
    assert Counter(t.file.path for t in plan.file_tasks) == expected and len(expected) > 10
    assert SqlCatalog(io, postgres_url, "pg").list_namespaces() == [("demo",)]


def test_the_service_serves_a_postgres_catalog(postgres_url: str, pg_table: PyIcebergSqlCatalog) -> None:
    with running_service("--catalog-uri", postgres_url, "--catalog-name", "pg") as url:
        response = httpx.post(f"{url}/plan", json={"table": DEMO_TABLE, "filter": "region = 'eu'"}, timeout=30)
        assert response.status_code == 200, response.text[:300]
        expected = {t.file.file_path for t in pg_table.load_table(DEMO_TABLE).scan("region = 'eu'").plan_files()}
        planned = {f["data-file"]["file-path"] for f in splits(response.json())}
        assert planned == expected
        assert httpx.post(f"{url}/plan", json={"table": "demo.nope"}, timeout=30).status_code == 404

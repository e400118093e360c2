"""The demo warehouse: its two tables as PyIceberg reads them, and a warehouse made before demo.customers
existed (its marker says "ok") given that table at the next start, its demo.events kept as it was."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import httpx
from pyiceberg.catalog.sql import SqlCatalog

from planner_service.demo import (
    CUSTOMERS_TABLE,
    DEMO_CATALOG_NAME,
    DEMO_TABLE,
    DEMO_VERSION,
    demo_catalog_uri,
    ensure_demo_warehouse,
    write_demo_table,
)
from tests.conftest import running_service


def _catalog(directory: Path) -> SqlCatalog:
    return SqlCatalog(DEMO_CATALOG_NAME, uri=demo_catalog_uri(directory), warehouse=f"file://{directory}")


def test_a_warehouse_of_the_first_version_gets_the_second_table(tmp_path: Path) -> None:
    directory = tmp_path / "demo-warehouse"
    directory.mkdir()
    write_demo_table(_catalog(directory))
    (directory / ".complete").write_text("ok\n")  # what the first version wrote when done
    events = _catalog(directory).load_table(DEMO_TABLE).metadata_location
    assert ensure_demo_warehouse(directory) == directory
    catalog = _catalog(directory)
    assert catalog.load_table(DEMO_TABLE).metadata_location == events  # untouched
    customers = catalog.load_table(CUSTOMERS_TABLE).scan().to_arrow()
    assert customers.num_rows == 30 and customers.column_names == ["customer_id", "name", "email", "region"]
    assert (directory / ".complete").read_text().strip() == DEMO_VERSION
    ensure_demo_warehouse(directory)  # and once made, nothing more
    assert (
        _catalog(directory).load_table(CUSTOMERS_TABLE).metadata_location
        == catalog.load_table(CUSTOMERS_TABLE).metadata_location
    )


def test_a_fresh_warehouse_has_both_tables(tmp_path: Path) -> None:
    directory = ensure_demo_warehouse(tmp_path / "demo-warehouse")
    catalog = _catalog(directory)
    assert {".".join(t) for t in catalog.list_tables("demo")} == {DEMO_TABLE, CUSTOMERS_TABLE}
    events = catalog.load_table(DEMO_TABLE)
    assert events.scan().to_arrow().num_rows == 600  # 900 appended, apac's 300 deleted
    assert "first-load" in events.metadata.refs


def test_serving_the_demo_directory_as_a_warehouse_says_how_to_serve_it(tmp_path: Path) -> None:
    """`--warehouse` takes Hadoop-style tables; the demo's directory is a SQL catalog, whose tables would all
    answer 404 so. The start says so, with the command that serves it; that command works."""
    directory = ensure_demo_warehouse(tmp_path / "demo-warehouse")
    log = tmp_path / "serve.log"
    with running_service("--warehouse", str(directory), log_path=log) as url:
        assert httpx.post(f"{url}/plan", json={"table": DEMO_TABLE}, timeout=30).status_code == 404
    said = re.search(r"Serve it with: scan-planner serve (.+)$", log.read_text(), re.MULTILINE)
    assert said, log.read_text()[-2000:]
    assert "holds a SQL catalog (catalog.db)" in log.read_text()
    with running_service(*shlex.split(said[1])) as url:
        listed = httpx.get(f"{url}/v1/namespaces/demo/tables", timeout=30).json()["identifiers"]
        assert {t["name"] for t in listed} == {"events", "customers"}
        assert httpx.post(f"{url}/plan", json={"table": DEMO_TABLE}, timeout=30).status_code == 200

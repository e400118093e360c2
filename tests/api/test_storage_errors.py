"""Broken storage through the real service: a corrupt manifest is 422 and a missing one 503, each naming
the file; a corrupt metadata.json is 422; the service keeps serving afterwards."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from planner_service.demo import DEMO_TABLE, write_demo_table
from tests.conftest import running_service


@pytest.fixture(scope="module")
def broken_tables(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """Three copies of the demo table: intact, a garbled manifest, a deleted manifest."""
    root = tmp_path_factory.mktemp("broken")
    db = root / "catalog.db"
    names: dict[str, str] = {}
    for kind in ("intact", "garbled", "missing"):
        catalog = PyIcebergSqlCatalog("broken", uri=f"sqlite:///{db}", warehouse=f"file://{root / kind}")
        write_demo_table(catalog)
        catalog.rename_table(DEMO_TABLE, f"demo.{kind}")
        table = catalog.load_table(f"demo.{kind}")
        snapshot = table.current_snapshot()
        assert snapshot is not None
        live = [m for m in snapshot.manifests(table.io) if m.added_files_count or m.existing_files_count]
        manifest = live[0].manifest_path.removeprefix("file://")
        names[kind] = manifest
        if kind == "garbled":
            Path(manifest).write_bytes(b"Obj\x01" + b"\x00garbage" * 50)
        elif kind == "missing":
            Path(manifest).unlink()
    with running_service("--catalog-uri", str(db), "--catalog-name", "broken") as url:
        yield url, names
    shutil.rmtree(root, ignore_errors=True)


def test_corrupt_and_missing_manifests(broken_tables: tuple[str, dict[str, str]]) -> None:
    url, manifests = broken_tables
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.post("/plan", json={"table": "demo.intact"}).status_code == 200

        garbled = client.post("/plan", json={"table": "demo.garbled"})
        assert garbled.status_code == 422, garbled.text[:300]
        assert manifests["garbled"] in garbled.json()["error"]["message"]

        missing = client.post("/plan", json={"table": "demo.missing"})
        assert missing.status_code == 503, missing.text[:300]
        assert manifests["missing"] in missing.json()["error"]["message"]

        assert client.get("/health").json()["status"] == "ok"
        assert client.post("/plan", json={"table": "demo.intact"}).status_code == 200


def test_corrupt_metadata_json(tmp_path: Path, broken_tables: tuple[str, dict[str, str]]) -> None:
    url, _ = broken_tables
    bad = tmp_path / "v1.metadata.json"
    bad.write_text('{"format-version": 2, "location": ')
    with httpx.Client(base_url=url, timeout=30) as client:
        response = client.post("/plan", json={"metadata-location": str(bad)})
        assert response.status_code == 422 and str(bad) in response.json()["error"]["message"]
        response = client.post("/plan", json={"metadata-location": str(tmp_path / "absent.metadata.json")})
        assert response.status_code == 404 and "absent.metadata.json" in response.json()["error"]["message"]

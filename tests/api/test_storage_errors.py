"""Broken storage through the real service: a corrupt manifest, or one longer than its manifest list
records, is 422 and a missing one 503, each naming the file; a corrupt metadata.json is 422, and so is
a location that is not a regular file (never read); the service keeps serving afterwards."""

from __future__ import annotations

import os
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
    """Copies of the demo table: intact, a garbled manifest, a deleted manifest, a grown manifest."""
    root = tmp_path_factory.mktemp("broken")
    db = root / "catalog.db"
    names: dict[str, str] = {}
    for kind in ("intact", "garbled", "missing", "grown"):
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
        elif kind == "grown":
            with Path(manifest).open("ab") as f:
                f.write(b"\x00" * 4096)
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

        grown = client.post("/plan", json={"table": "demo.grown"})
        assert grown.status_code == 422, grown.text[:300]
        message = grown.json()["error"]["message"]
        assert manifests["grown"] in message and "its recorded length" in message

        assert client.get("/health").json()["status"] == "ok"
        assert client.post("/plan", json={"table": "demo.intact"}).status_code == 200


def test_only_regular_files_are_read(broken_tables: tuple[str, dict[str, str]]) -> None:
    """Inside a served table's directory, a FIFO (a read would wait forever) and a directory are refused by
    their type, before any read; a device (/dev/zero: a read would never end) is outside the roots."""
    url, manifests = broken_tables
    metadata_dir = Path(manifests["intact"]).parent
    fifo = metadata_dir / "fifo.metadata.json"
    os.mkfifo(fifo)
    with httpx.Client(base_url=url, timeout=30) as client:
        for location in (str(fifo), str(metadata_dir)):
            response = client.post("/plan", json={"metadata-location": location})
            assert response.status_code == 422, response.text[:300]
            assert response.json()["error"]["message"] == f"Cannot read {location}: not a regular file"
        response = client.post("/plan", json={"metadata-location": "/dev/zero"})
        assert response.status_code == 403, response.text[:300]


def test_corrupt_metadata_json(broken_tables: tuple[str, dict[str, str]]) -> None:
    url, manifests = broken_tables
    metadata_dir = Path(manifests["intact"]).parent
    bad = metadata_dir / "v99.metadata.json"
    bad.write_text('{"format-version": 2, "location": ')
    with httpx.Client(base_url=url, timeout=30) as client:
        response = client.post("/plan", json={"metadata-location": str(bad)})
        assert response.status_code == 422 and str(bad) in response.json()["error"]["message"]
        response = client.post("/plan", json={"metadata-location": str(metadata_dir / "absent.metadata.json")})
        assert response.status_code == 404 and "absent.metadata.json" in response.json()["error"]["message"]

"""Iceberg's own REST catalog server (tests/catalog/iceberg_rest_server.py) runs here: a table created through
it is copied and the copy registered, and its configuration, namespaces, tables and LoadTable answer what was
registered; a bearer token and a request for vended credentials are accepted and change nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx

from tests.catalog.iceberg_rest_server import create_namespace, create_table, iceberg_rest_server, register_table

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "name", "required": False, "type": "string"},
    ],
}


def test_registers_and_serves_a_table(tmp_path: Path) -> None:
    with iceberg_rest_server(tmp_path / "warehouse") as uri:
        create_namespace(uri, "made")
        created = create_table(uri, "made", "events", SCHEMA)
        assert created["metadata"]["current-snapshot-id"] == -1  # an empty table: no snapshot yet
        source = Path(created["metadata-location"].removeprefix("file:"))
        assert source.is_file() and source.is_relative_to((tmp_path / "warehouse").resolve())

        copy = tmp_path / "copied" / "metadata" / "00000-copy.metadata.json"
        copy.parent.mkdir(parents=True)
        shutil.copyfile(source, copy)
        registered = register_table(uri, "db", "events", copy.as_uri())  # creates the namespace db
        assert registered["metadata-location"] == copy.as_uri()

        config = httpx.get(f"{uri}/v1/config", timeout=30).json()
        assert "POST /v1/{prefix}/namespaces/{namespace}/register" in config.get("endpoints", [])

        namespaces = httpx.get(f"{uri}/v1/namespaces", timeout=30).json()["namespaces"]
        assert sorted(namespaces) == [["db"], ["made"]]
        tables = httpx.get(f"{uri}/v1/namespaces/db/tables", timeout=30).json()["identifiers"]
        assert tables == [{"namespace": ["db"], "name": "events"}]

        table_url = f"{uri}/v1/namespaces/db/tables/events"
        loaded = httpx.get(table_url, timeout=30)
        assert loaded.status_code == 200
        assert loaded.json()["metadata-location"] == copy.as_uri()
        assert loaded.json()["metadata"]["table-uuid"] == created["metadata"]["table-uuid"]

        for headers in ({"Authorization": "Bearer anything"}, {"X-Iceberg-Access-Delegation": "vended-credentials"}):
            answer = httpx.get(table_url, headers=headers, timeout=30)
            assert answer.status_code == 200, headers
            assert answer.json() == loaded.json(), headers  # no credentials vended, no config added

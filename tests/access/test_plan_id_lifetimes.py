"""How long a plan id opens: until its expiry (plan_id_ttl_seconds for POST /plan's, plan_ttl_seconds for a
REST plan's: signed into the id, so no replica opens it later), and only while its table still has the name
it was planned by: a table renamed to a name the principal is denied, or another table given the name,
ends the id (404, plan again). A SQL catalog written by PyIceberg; a running service with static tokens."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from tests.conftest import running_service

TOKENS = {"alice": "alice-token"}
RULES = [
    {"principals": ["alice"], "tables": ["db.secret"], "privileges": []},
    {"principals": ["alice"], "namespaces": ["db"], "privileges": ["plan"]},
]


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[dict[str, Any]]:
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    catalog = SqlCatalog("lake", uri=uri, warehouse=f"file://{tmp_path / 'warehouse'}")
    catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=False))
    for name in ("t", "u"):
        table = catalog.create_table(f"db.{name}", schema=schema)
        table.append(pa.Table.from_pydict({"id": [1, 2, 3]}, schema=schema.as_arrow()))
    config = tmp_path / "service.json"
    settings = {
        "catalog_uri": uri,
        "catalog_name": "lake",
        "allowed_roots": [str(tmp_path / "warehouse")],
        "auth_tokens": TOKENS,
        "access_rules": RULES,
        "plan_id_ttl_seconds": 3,
        "plan_ttl_seconds": 3,
    }
    config.write_text(json.dumps(settings))
    with running_service("--config", str(config), "--log-level", "warning") as url:
        headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            yield {"catalog": catalog, "client": client}


def _ids(client: httpx.Client, name: str) -> tuple[str, str]:
    native = client.post("/plan", json={"table": f"db.{name}", "inline-task-limit": 0})
    rest = client.post(f"/v1/namespaces/db/tables/{name}/plan", json={})
    assert native.status_code == rest.status_code == 200, (native.text, rest.text)
    return native.json()["plan-id"], rest.json()["plan-id"]


def _unknown(answer: httpx.Response, words: str) -> bool:
    return (
        answer.status_code == 404
        and answer.json()["error"]["type"] == "NoSuchPlanIdException"
        and (words in answer.json()["error"]["message"])
    )


def test_plan_ids_end_at_their_expiry(lake: dict[str, Any]) -> None:
    client = lake["client"]
    native, rest = _ids(client, "t")
    assert client.get(f"/plans/{native}").status_code == 200
    assert client.get(f"/v1/namespaces/db/tables/t/plan/{rest}").json()["status"] == "completed"
    time.sleep(4.1)
    assert _unknown(client.get(f"/plans/{native}"), "expired")
    assert _unknown(client.get(f"/plans/{native}/tasks/0"), "expired")
    assert _unknown(client.get(f"/v1/namespaces/db/tables/t/plan/{rest}"), "expired")


def test_a_plan_id_ends_when_its_table_is_renamed_away_or_replaced(lake: dict[str, Any]) -> None:
    client, catalog = lake["client"], lake["catalog"]
    native, rest = _ids(client, "t")
    catalog.rename_table("db.t", "db.secret")  # a name alice is denied
    time.sleep(1.2)  # (a name is asked of the catalog again after a second)
    assert _unknown(client.get(f"/plans/{native}/tasks/0"), "no longer the table")
    assert _unknown(client.get(f"/v1/namespaces/db/tables/t/plan/{rest}"), "no longer the table")
    native_u, _ = _ids(client, "u")
    catalog.rename_table("db.u", "db.v")
    catalog.rename_table("db.secret", "db.u")  # another table now has the name
    time.sleep(1.2)
    assert _unknown(client.get(f"/plans/{native_u}"), "no longer the table")

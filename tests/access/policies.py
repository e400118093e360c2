"""The principals and grants of the access tests: a service over the conformance warehouse (tables
db.<name>, written by Iceberg Java) with static tokens by name and a policy in its settings file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

PLANNED = "db.unpartitioned"  # alice may plan it
LISTED = "db.identity_part"  # bob may only list it; carol may read its metadata
MISSING = "db.no_such_table"  # in no catalog
TOKENS = {
    "alice": "alice-token",  # plan on PLANNED
    "alice2": "alice2-token",  # plan on PLANNED too: another principal with the same grant
    "bob": "bob-token",  # list on LISTED
    "carol": "carol-token",  # group analysts: read-metadata on LISTED
    "mallory": "mallory-token",  # no rule names her
    "ops": "ops-token",  # metrics only
}
RULES: list[dict[str, Any]] = [
    {"principals": ["alice", "alice2"], "tables": [PLANNED], "privileges": ["plan"]},
    {"principals": ["bob"], "tables": [LISTED], "privileges": ["list"]},
    {"groups": ["analysts"], "tables": [LISTED], "privileges": ["read-metadata"]},
    {"principals": ["ops"], "privileges": ["metrics"]},
]


def write_settings(path: Path, warehouse: Path, rules: list[dict[str, Any]] = RULES, **more: Any) -> Path:
    settings = {
        "warehouse": str(warehouse),
        "auth_tokens": TOKENS,
        "principal_groups": {"carol": ["analysts"]},
        "access_rules": rules,
        "access_reload_seconds": 0.2,
        "plan_task_page_size": 1,
        **more,
    }
    path.write_text(json.dumps(settings))
    return path


def bearer(principal: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[principal]}"}


def client(url: str, principal: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers=bearer(principal), timeout=60)


def rest_path(table: str) -> str:
    namespace, name = table.split(".")
    return f"/v1/namespaces/{namespace}/tables/{name}"

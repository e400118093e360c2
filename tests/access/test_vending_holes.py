"""The vended-credentials hole the security review reproduced, reproduced here first and closed: credentials
were scoped to the `location` written inside a metadata file, which whoever writes the file chooses. A copy
of a table's metadata.json in that table's own metadata directory, saying `"location": "s3://vended/team-b"`
(or the bucket), planned by `metadata-location`, answered with keys for that prefix; LoadTable vended the
same way. Now credentials go only with tables a catalog names, only for the directory that holds the
metadata file, only within the roots, only to principals with the credentials privilege; each is audited.

On moto's S3 and STS on loopback, with the table written by PyIceberg (tests/spark_client/vended.py)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import boto3
import httpx
import pytest

from tests.conftest import moto_server
from tests.spark_client.vended import (
    BUCKET,
    CATALOG_NAME,
    KEY,
    REGION,
    SECRET,
    TABLE,
    TABLE_PREFIX,
    static_vending,
    sts_vending,
    vending_service,
    write_vended_table,
)

TOKENS = {"reader": "reader-token", "planner": "planner-token"}
RULES = [
    {"principals": ["reader"], "namespaces": ["demo"], "privileges": ["plan", "credentials"]},
    {"principals": ["planner"], "namespaces": ["demo"], "privileges": ["plan"]},
]
EVIL_TABLE = "demo.evil"
ELSEWHERE = (f"s3://{BUCKET}/team-b-secrets", f"s3://{BUCKET}")


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """moto, the table, and copies of its metadata.json in its own metadata directory that claim other
    locations (one registered in the catalog as demo.evil)."""
    with moto_server() as endpoint:
        directory = tmp_path_factory.mktemp("lake")
        catalog = write_vended_table(endpoint, directory)
        s3 = boto3.client(
            "s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=REGION
        )
        with sqlite3.connect(catalog) as db:
            (current,) = db.execute(
                "SELECT metadata_location FROM iceberg_tables WHERE table_name = 'events'"
            ).fetchone()
        key = current.removeprefix(f"s3://{BUCKET}/")
        metadata = json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
        forged = []
        for i, location in enumerate(ELSEWHERE):
            copy_key = f"{key.rsplit('/', 1)[0]}/99999-claims-{i}.metadata.json"
            s3.put_object(Bucket=BUCKET, Key=copy_key, Body=json.dumps({**metadata, "location": location}).encode())
            forged.append(f"s3://{BUCKET}/{copy_key}")
        with sqlite3.connect(catalog) as db:
            db.execute(
                "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location) "
                "VALUES (?, 'demo', 'evil', ?)",
                (CATALOG_NAME, forged[0]),
            )
        yield {"endpoint": endpoint, "catalog": catalog, "forged": forged, "directory": directory, "current": current}


def _prefixes(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [c["prefix"] for c in answer.json().get("storage-credentials") or []]


@pytest.mark.parametrize("vending", ["static", "sts"])
def test_credentials_only_for_the_directory_that_holds_the_metadata(lake: dict[str, Any], vending: str) -> None:
    settings = static_vending() if vending == "static" else sts_vending(lake["endpoint"])
    directory = lake["directory"] / vending
    directory.mkdir(exist_ok=True)
    delegation = {"X-Iceberg-Access-Delegation": "vended-credentials"}
    with (
        vending_service(directory, lake["catalog"], lake["endpoint"], **settings) as url,
        httpx.Client(base_url=url, timeout=60) as c,
    ):
        assert _prefixes(c.post("/plan", json={"table": TABLE})) == [TABLE_PREFIX]  # the table's own
        for forged in lake["forged"]:  # the review's reproduction: never keys for the claimed location
            assert _prefixes(c.post("/plan", json={"metadata-location": forged})) == []
        # by its true metadata location too: nobody vouches for a location, so nothing is vended for one
        assert _prefixes(c.post("/plan", json={"metadata-location": lake["current"]})) == []
        # a catalog's table whose metadata claims another table's location: named, but not its directory
        assert _prefixes(c.post("/plan", json={"table": EVIL_TABLE})) == []
        loaded = c.get("/v1/namespaces/demo/tables/evil", headers=delegation)
        assert _prefixes(loaded) == [] and "s3.access-key-id" not in json.dumps(loaded.json()["config"])
        good = c.get("/v1/namespaces/demo/tables/events", headers=delegation)
        assert _prefixes(good) == [TABLE_PREFIX]


def test_credentials_only_with_the_privilege_and_audited(lake: dict[str, Any]) -> None:
    directory = lake["directory"] / "policy"
    directory.mkdir(exist_ok=True)
    audit_log = directory / "audit.jsonl"
    settings = {**static_vending(), "auth_tokens": TOKENS, "access_rules": RULES, "audit_log": str(audit_log)}
    with vending_service(directory, lake["catalog"], lake["endpoint"], **settings) as url:
        delegation = {"X-Iceberg-Access-Delegation": "vended-credentials"}
        for principal, expected in (("reader", [TABLE_PREFIX]), ("planner", [])):
            headers = {"Authorization": f"Bearer {TOKENS[principal]}"}
            with httpx.Client(base_url=url, timeout=60, headers=headers) as c:
                planned = c.post("/plan", json={"table": TABLE, "inline-task-limit": 0})
                assert _prefixes(planned) == expected
                assert _prefixes(c.get(f"/plans/{planned.json()['plan-id']}")) == expected
                assert _prefixes(c.get("/v1/namespaces/demo/tables/events", headers=delegation)) == expected
                rest = c.post("/v1/namespaces/demo/tables/events/plan", json={})
                assert _prefixes(rest) == expected
        denied = httpx.post(f"{url}/plan", json={"table": TABLE}, headers=bearer_of("nobody"), timeout=60)
        assert denied.status_code == 401
    lines = [json.loads(line) for line in audit_log.read_text().splitlines()]
    events = {(line["msg"], line["principal"], line["outcome"]) for line in lines}
    assert ("credentials", "reader", "vended") in events
    assert ("credentials", "planner", "withheld") in events
    plans = [line for line in lines if line["msg"] == "plan"]
    assert plans and all(p["table"] == TABLE and p["files-planned"] > 0 and p["snapshot"] for p in plans)


def bearer_of(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_revoked_credentials_privilege_ends_them_in_every_answer(lake: dict[str, Any]) -> None:
    """A REST plan polled, and a native plan by id, after the reader's `credentials` privilege is revoked (the
    policy reloaded): neither answer carries the keys vended when the plan was made."""
    directory = lake["directory"] / "revoked"
    directory.mkdir(exist_ok=True)
    settings = {**static_vending(), "auth_tokens": TOKENS, "access_rules": RULES, "access_reload_seconds": 0.2}
    with vending_service(directory, lake["catalog"], lake["endpoint"], **settings) as url:
        headers = {"Authorization": f"Bearer {TOKENS['reader']}"}
        with httpx.Client(base_url=url, timeout=60, headers=headers) as c:
            rest = c.post("/v1/namespaces/demo/tables/events/plan", json={})
            native = c.post("/plan", json={"table": TABLE, "inline-task-limit": 0})
            assert _prefixes(rest) == _prefixes(native) == [TABLE_PREFIX]
            poll = f"/v1/namespaces/demo/tables/events/plan/{rest.json()['plan-id']}"
            assert _prefixes(c.get(poll)) == [TABLE_PREFIX]
            config = directory / "service.json"
            revoked = [{"principals": ["reader"], "namespaces": ["demo"], "privileges": ["plan"]}]
            config.write_text(json.dumps({**json.loads(config.read_text()), "access_rules": revoked}))
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and _prefixes(c.get(poll)):
                time.sleep(0.1)
            polled = c.get(poll)
            assert polled.status_code == 200 and polled.json()["status"] == "completed"
            assert "storage-credentials" not in polled.json()
            assert _prefixes(c.get(f"/plans/{native.json()['plan-id']}")) == []

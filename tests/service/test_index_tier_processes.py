"""The index's disk tier between real `scan-planner serve` processes sharing `index_directory`: a restarted
service plans warm from it (its explained plans say each manifest was read from the index tier, its metrics
count the hits), answering what the first service answered; the workers of `serve --workers 2` decode each
manifest once between them; two replicas on one host share it the same way, and two on different hosts share it
through an object store (`index_store`, S3 through moto); and a service whose directory cannot be used, or is
turned off, plans as without it."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from tests.conformance.reference import Conformance
from tests.conftest import running_service

TABLES = ("many_manifests", "mor_position_deletes", "spec_evolution", "identity_part")


def _explained(url: str, table: str) -> tuple[list[Any], dict[str, str]]:
    """(the plan's tasks, where each kept manifest was read from) of an explained plan on a new connection."""
    with httpx.Client(base_url=url, timeout=60) as client:
        answer = client.post("/plan", json={"table": f"db.{table}", "explain": True})
        assert answer.status_code == 200, answer.text[:300]
        body = answer.json()
    read_from = {m["manifest-path"]: m["read-from"] for m in body["explain"]["manifests"] if m["kept"]}
    return body["tasks"], read_from


def _tier_metric(url: str, what: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    found = re.search(rf'^scan_planner_index_tier\{{what="{what}"\}}\s+(\S+)$', text, re.MULTILINE)
    return float(found.group(1)) if found else -1.0


def _settled(directory: Path, manifests: int, seconds: float = 30) -> None:
    """Wait until the directory links `manifests` manifests' statistics (written in the background, after the
    manifests' other columns)."""
    deadline = time.monotonic() + seconds
    while len([p for p in directory.glob("*.stats") if p.is_symlink()]) < manifests:
        assert time.monotonic() < deadline, sorted(p.name for p in directory.iterdir())
        time.sleep(0.05)


def test_a_restarted_service_plans_from_the_tier(conformance: Conformance, tmp_path: Path) -> None:
    warehouse = str(conformance.dir / "warehouse")
    env = {"SCAN_PLANNER_INDEX_DIRECTORY": str(tmp_path / "index")}
    with running_service("--warehouse", warehouse, env=env) as url:
        first = {table: _explained(url, table) for table in TABLES}
        assert {where for _, read_from in first.values() for where in read_from.values()} == {"decoded"}
        manifests = sum(len(read_from) for _, read_from in first.values())
        _settled(tmp_path / "index", manifests)
        # (each data manifest with its statistics, the delete manifests too: links of both kinds)
        assert _tier_metric(url, "writes") >= 2 * manifests
    with running_service("--warehouse", warehouse, env=env) as url:
        for table, (tasks, read_from) in first.items():
            again, where = _explained(url, table)
            assert again == tasks
            assert set(where.values()) == {"index-tier"} and where.keys() == read_from.keys()
        assert _tier_metric(url, "hits") >= manifests and _tier_metric(url, "misses") == 0
        assert _tier_metric(url, "writes") == 0 and _tier_metric(url, "rejected") == 0


def test_workers_decode_each_manifest_once_between_them(conformance: Conformance, tmp_path: Path) -> None:
    warehouse = str(conformance.dir / "warehouse")
    env = {"SCAN_PLANNER_INDEX_DIRECTORY": str(tmp_path / "index")}
    with running_service("--warehouse", warehouse, "--workers", "2", env=env) as url:
        tasks, read_from = _explained(url, "many_manifests")
        _settled(tmp_path / "index", len(read_from))
        seen: set[str] = set()
        for _ in range(24):  # new connections, spread over both workers by the kernel
            again, where = _explained(url, "many_manifests")
            assert again == tasks
            seen |= set(where.values())
    assert set(read_from.values()) == {"decoded"}
    assert seen == {"memory", "index-tier"}  # the other worker read the first one's files


def test_two_replicas_on_one_host_share_the_tier(conformance: Conformance, tmp_path: Path) -> None:
    warehouse = str(conformance.dir / "warehouse")
    env = {"SCAN_PLANNER_INDEX_DIRECTORY": str(tmp_path / "index"), "SCAN_PLANNER_TOKEN_SIGNING_KEY": "shared"}
    with (
        running_service("--warehouse", warehouse, env=env) as one,
        running_service("--warehouse", warehouse, env=env) as two,
    ):
        tasks, read_from = _explained(one, "spec_evolution")
        _settled(tmp_path / "index", len(read_from))
        again, where = _explained(two, "spec_evolution")
    assert again == tasks and set(where.values()) == {"index-tier"}


@pytest.mark.parametrize("directory", ["", "file"])
def test_without_a_usable_directory_a_service_plans_as_before(
    conformance: Conformance, tmp_path: Path, directory: str
) -> None:
    if directory == "file":
        (tmp_path / "file").write_text("not a directory")
        directory = str(tmp_path / "file")
    warehouse = str(conformance.dir / "warehouse")
    log = tmp_path / "service.log"
    with running_service(
        "--warehouse", warehouse, env={"SCAN_PLANNER_INDEX_DIRECTORY": directory}, log_path=log
    ) as url:
        _, read_from = _explained(url, "many_manifests")
        assert set(read_from.values()) == {"decoded"}
        assert _tier_metric(url, "hits") == -1  # (no tier: no such metric)
    assert ("index_directory cannot be used" in log.read_text()) == bool(directory)


def test_a_replica_on_another_host_plans_from_the_shared_store(
    conformance: Conformance, tmp_path: Path, s3_endpoint: str
) -> None:
    """Two services with directories of their own (two hosts) and one index_store on S3 (moto): what the first
    planned, the second plans from the store, decoding nothing."""
    s3 = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    s3.create_bucket(Bucket="shared-index")
    warehouse = str(conformance.dir / "warehouse")
    common = {
        "SCAN_PLANNER_INDEX_STORE": "s3://shared-index/tier",
        "SCAN_PLANNER_S3_ENDPOINT": s3_endpoint,
        "SCAN_PLANNER_S3_ACCESS_KEY_ID": "testing",
        "SCAN_PLANNER_S3_SECRET_ACCESS_KEY": "testing",
        "SCAN_PLANNER_S3_REGION": "us-east-1",
        "SCAN_PLANNER_TOKEN_SIGNING_KEY": "shared",
    }
    first = {**common, "SCAN_PLANNER_INDEX_DIRECTORY": str(tmp_path / "host-a")}
    with running_service("--warehouse", warehouse, env=first) as url:
        tasks, read_from = _explained(url, "many_manifests")
        deadline = time.monotonic() + 30
        while not s3.list_objects_v2(Bucket="shared-index", Prefix="tier/asm-").get("KeyCount"):
            assert time.monotonic() < deadline, "no assembly was shared"
            time.sleep(0.1)
    second = {**common, "SCAN_PLANNER_INDEX_DIRECTORY": str(tmp_path / "host-b")}
    with running_service("--warehouse", warehouse, env=second) as url:
        again, where = _explained(url, "many_manifests")
        assert _tier_metric(url, "store_downloads") >= 2
    assert again == tasks and set(read_from.values()) == {"decoded"} and set(where.values()) == {"index-tier"}

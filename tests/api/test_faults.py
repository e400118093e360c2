"""Storage faults through the real service, its S3 store (moto) behind a proxy that breaks chosen objects:
throttling (503 SlowDown), internal errors (500), denied access (403), a connection cut mid-body, a store
that stops answering, and an object truncated in the store. Each plan that touches a broken object answers
a clear 503 or 422 naming it, within the configured S3 timeouts; /health stays fast meanwhile; once the
store heals, the same request plans the same files as before (nothing wrong was kept)."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from planner_service.demo import DEMO_TABLE, write_demo_table
from tests.conftest import running_service
from tests.faulty_store import FaultyStore

KEY, SECRET, REGION = "testing", "testing", "us-east-1"
EXPECTED_FILES: list[str] = []  # PyIceberg's plan of the table (the store fixture fills it)


@pytest.fixture(scope="module")
def store(s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, FaultyStore, str]]:
    """(the service's config, the store's proxy, the key of a manifest every plan reads); EXPECTED_FILES
    set to what PyIceberg plans for the table."""
    s3 = boto3.client(
        "s3", endpoint_url=s3_endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=REGION
    )
    s3.create_bucket(Bucket="faulty")
    root = tmp_path_factory.mktemp("faultcat")
    props = {"s3.endpoint": s3_endpoint, "s3.access-key-id": KEY, "s3.secret-access-key": SECRET, "s3.region": REGION}
    catalog = PyIcebergSqlCatalog("faulty", uri=f"sqlite:///{root / 'catalog.db'}", warehouse="s3://faulty/wh", **props)
    write_demo_table(catalog)
    table = catalog.load_table(DEMO_TABLE)
    EXPECTED_FILES[:] = sorted(t.file.file_path for t in table.scan().plan_files())
    snapshot = table.current_snapshot()
    assert snapshot is not None
    manifest = next(m for m in snapshot.manifests(table.io) if m.added_files_count or m.existing_files_count)
    key = manifest.manifest_path.removeprefix("s3://faulty/")
    with FaultyStore(s3_endpoint.removeprefix("http://")) as store:
        config = root / "service.json"
        config.write_text(
            json.dumps(
                {
                    "catalog_uri": str(root / "catalog.db"),
                    "catalog_name": "faulty",
                    "s3_endpoint": store.url,
                    "s3_access_key_id": KEY,
                    "s3_secret_access_key": SECRET,
                    "s3_region": REGION,
                    "s3_connect_timeout_seconds": 2,
                    "s3_request_timeout_seconds": 2,
                }
            )
        )
        yield config, store, key


@pytest.fixture
def faulty(store: tuple[Path, FaultyStore, str]) -> Iterator[tuple[str, FaultyStore, str]]:
    """(a fresh service's URL: nothing of the table cached yet, the store's proxy, the manifest's key)."""
    config, proxy, key = store
    proxy.faults.clear()
    with running_service("--config", str(config), "--log-level", "warning") as url:
        yield url, proxy, key
    proxy.faults.clear()


def _files(response: httpx.Response) -> list[str]:
    return sorted(f["data-file"]["file-path"] for f in response.json()["files"])


@pytest.mark.parametrize(
    ("fault", "status", "says"),
    [
        (("status", 503, "SlowDown"), 503, "the store is throttling or unavailable (503); retry later"),
        (("status", 500, "InternalError"), 503, "the store failed (HTTP 500); retry later"),
        (("status", 403, "AccessDenied"), 503, "the store denied access (403): check the service's S3 credentials"),
        (("cut", 100), 503, "the store cut the read short"),
        (("short", 100), 503, "the store cut the read short (its last 16 bytes read alone differ) 3 times"),
        (("hang", 30), 503, "the store did not answer within the S3 timeouts"),
    ],
    ids=["throttled", "internal-error", "access-denied", "cut-mid-body", "short-body", "not-answering"],
)
def test_a_broken_store_is_a_clear_503_and_nothing_wrong_is_kept(
    faulty: tuple[str, FaultyStore, str], fault: tuple[Any, ...], status: int, says: str
) -> None:
    url, store, key = faulty
    with httpx.Client(base_url=url, timeout=120) as client:
        body = {"table": DEMO_TABLE, "inline-task-limit": 10**6}
        store.faults[key] = fault
        health: list[float] = []
        answered = threading.Event()

        def probe() -> None:
            while not answered.is_set():
                started = time.perf_counter()
                assert client.get("/health").status_code == 200
                health.append(time.perf_counter() - started)
                time.sleep(0.05)

        prober = threading.Thread(target=probe)
        prober.start()
        started = time.monotonic()
        try:
            broken = client.post("/plan", json=body)
        finally:
            answered.set()
            prober.join()
        elapsed = time.monotonic() - started
        store.faults.clear()
        assert broken.status_code == status, broken.text[:500]
        error = broken.json()["error"]
        assert key in error["message"] and says in error["message"], error
        assert "Retry-After" in broken.headers
        assert elapsed < 30, f"answered after {elapsed:.1f}s: the S3 timeouts (2 s) bound a plan's wait"
        assert health and max(health) < 1.0, health
        healed = client.post("/plan", json=body)
        assert healed.status_code == 200, healed.text[:500]
        assert _files(healed) == EXPECTED_FILES and len(EXPECTED_FILES) > 10


def test_an_object_truncated_in_the_store_is_422(faulty: tuple[str, FaultyStore, str], s3_endpoint: str) -> None:
    url, _, key = faulty
    s3 = boto3.client(
        "s3", endpoint_url=s3_endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=REGION
    )
    whole = s3.get_object(Bucket="faulty", Key=key)["Body"].read()
    s3.put_object(Bucket="faulty", Key=key, Body=whole[: len(whole) // 2])
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            response = client.post("/plan", json={"table": DEMO_TABLE})
            assert response.status_code == 422, response.text[:500]
            assert key in response.json()["error"]["message"]
    finally:
        s3.put_object(Bucket="faulty", Key=key, Body=whole)


PLANS_UNDER_CHAOS = 30
CHAOS_SHARE = 0.2


@pytest.fixture
def uncached(store: tuple[Path, FaultyStore, str]) -> Iterator[tuple[str, FaultyStore]]:
    """A fresh service over the store that keeps nothing between plans (every plan reads the manifest list
    and the manifests again: no disk tier either), with a 20 s plan timeout."""
    config, proxy, _ = store
    keep_nothing = {"cache_bytes": 0, "plan_cache_bytes": 0, "index_directory": ""}
    settings = json.loads(config.read_text()) | keep_nothing | {"plan_timeout_seconds": 20}
    path = config.with_name("uncached.json")
    path.write_text(json.dumps(settings))
    proxy.faults.clear()
    with running_service("--config", str(path), "--log-level", "warning") as url:
        yield url, proxy
    proxy.chaos(0)


def test_transient_faults_are_retried_and_no_plan_is_wrong(uncached: tuple[str, FaultyStore]) -> None:
    """A fifth of the store's answers faulted at random (throttling, 500s, resets, bodies cut short behind a
    matching length, slow answers): plans are retried through them; a plan that still fails is a 503 with
    Retry-After, never a 422 for a store's fault, never a plan of other files; each within its timeout."""
    url, store = uncached
    body = {"table": DEMO_TABLE, "inline-task-limit": 10**6}
    outcomes: Counter[str] = Counter()
    slowest = 0.0
    with httpx.Client(base_url=url, timeout=120) as client:
        started = time.monotonic()
        clean = client.post("/plan", json=body)
        clean_seconds = time.monotonic() - started
        assert clean.status_code == 200 and _files(clean) == EXPECTED_FILES
        store.counts.clear()
        store.chaos(CHAOS_SHARE, seed=36)
        for _ in range(PLANS_UNDER_CHAOS):
            started = time.monotonic()
            response = client.post("/plan", json=body)
            slowest = max(slowest, time.monotonic() - started)
            if response.status_code == 200:
                assert _files(response) == EXPECTED_FILES
                outcomes["planned, the same files"] += 1
                continue
            assert response.status_code == 503, response.text[:500]
            assert "Retry-After" in response.headers
            error = response.json()["error"]
            assert error["type"] in ("StorageException", "ServiceUnavailableException"), error
            outcomes["503 with Retry-After"] += 1
        store.chaos(0)
    injected = {kind: n for kind, n in store.counts.items() if kind != "requests"}
    print(
        json.dumps(
            {"store requests": store.counts["requests"], "faults injected": injected, "plans": dict(outcomes)}
            | {"clean plan s": round(clean_seconds, 3), "slowest plan s": round(slowest, 3)}
        )
    )
    assert {"status SlowDown", "status InternalError", "reset", "short", "slow"} <= set(injected), injected
    assert sum(injected.values()) >= 0.1 * store.counts["requests"]
    assert outcomes["planned, the same files"] >= 0.8 * PLANS_UNDER_CHAOS, outcomes
    assert slowest < 25, f"a plan took {slowest:.1f}s: plan_timeout_seconds (20) bounds it"

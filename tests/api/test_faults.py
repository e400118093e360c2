"""Storage faults through the real service, its S3 store (moto) behind a proxy that breaks chosen objects:
throttling (503 SlowDown), internal errors (500), denied access (403), a connection cut mid-body, a store
that stops answering, and an object truncated in the store. Each plan that touches a broken object answers
a clear 503 or 422 naming it, within the configured S3 timeouts; /health stays fast meanwhile; once the
store heals, the same request plans the same files as before (nothing wrong was kept)."""

from __future__ import annotations

import http.client
import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from planner_service.demo import DEMO_TABLE, write_demo_table
from tests.conftest import running_service

KEY, SECRET, REGION = "testing", "testing", "us-east-1"
EXPECTED_FILES: list[str] = []  # PyIceberg's plan of the table (the store fixture fills it)
S3_ERROR = '<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message></Error>'


class FaultyStore:
    """An HTTP proxy to a moto server; `faults` maps a key fragment to what requests for it get instead:
    ("status", http status, S3 error code), ("cut", bytes sent before the connection closes), ("hang", seconds)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.faults: dict[str, tuple[Any, ...]] = {}
        self.hits: dict[str, int] = {}
        store = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fault = next((f for key, f in list(store.faults.items()) if key in self.path), None)
                if fault is not None:
                    store.hits[self.path] = store.hits.get(self.path, 0) + 1
                    if fault[0] == "status":
                        self._answer(fault[1], S3_ERROR.format(code=fault[2], message=fault[2]).encode())
                        return
                    if fault[0] == "hang":
                        time.sleep(fault[1])
                        self.close_connection = True
                        return
                status, headers, data = store.forward(self.command, self.path, self.headers, body)
                if fault is not None and fault[0] == "cut" and self.command == "GET":
                    self.send_response(status)
                    for name, value in headers:
                        if name.lower() not in ("transfer-encoding", "connection"):
                            self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data[: fault[1]])
                    self.close_connection = True
                    return
                self.send_response(status)
                dropped = ("transfer-encoding", "connection") + (() if self.command == "HEAD" else ("content-length",))
                for name, value in headers:  # (a HEAD's Content-Length is the object's, kept)
                    if name.lower() not in dropped:
                        self.send_header(name, value)
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def forward(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        host, port = self.target.rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            connection.request(method, path, body=body or None, headers=dict(headers.items()))
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def __enter__(self) -> FaultyStore:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


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
        (("hang", 30), 503, "the store did not answer within the S3 timeouts"),
    ],
    ids=["throttled", "internal-error", "access-denied", "cut-mid-body", "not-answering"],
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

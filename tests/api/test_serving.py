"""Several uvicorn worker processes (`serve --workers 2`) plan as one does: settings reach every worker."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.conformance.reference import Conformance
from tests.conftest import running_service
from tests.plan_wire import splits


def test_workers_plan_like_one(conformance: Conformance) -> None:
    warehouse = str(conformance.dir / "warehouse")
    case = conformance.case("identity_part/partition-and-column")
    with running_service("--warehouse", warehouse, "--workers", "2", "--log-level", "warning") as url:
        for _ in range(4):  # requests spread over both workers
            body = {"table": "db.identity_part", "filter": case["filter"]}
            response = httpx.post(f"{url}/plan", json=body, timeout=30)
            assert response.status_code == 200, response.text[:300]
            planned = [f["data-file"]["file-path"] for f in splits(response.json())]
            assert planned == [t["path"] for combined in case["tasks"] for t in combined]


def test_health_and_metrics_answer_while_every_worker_thread_is_blocked(tmp_path: Path) -> None:
    """Plans whose metadata file never finishes reading (an S3 endpoint that accepts connections and never
    answers) hold every thread of the worker pool; /health and /metrics, whose dependencies are
    coroutines, still answer at once."""
    silent = socket.create_server(("127.0.0.1", 0), backlog=128)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:  # take every connection and say nothing
        silent.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(silent.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    config = tmp_path / "service.toml"
    config.write_text(
        f'warehouse = "{tmp_path}"\nallowed_roots = ["{tmp_path}", "s3://bucket"]\ns3_endpoint = "http://127.0.0.1:{silent.getsockname()[1]}"\n'
        's3_access_key_id = "k"\ns3_secret_access_key = "s"\n'
    )
    blocked = 48  # more than the pool's 40 threads
    location = "s3://bucket/t/metadata/v1.metadata.json"
    with (
        running_service("--config", str(config), "--log-level", "warning") as url,
        ThreadPoolExecutor(blocked) as pool,
    ):
        stuck = [
            pool.submit(httpx.post, f"{url}/plan", json={"metadata-location": location}, timeout=120)
            for _ in range(blocked)
        ]
        try:
            time.sleep(2)  # every thread of the service's pool is now waiting for S3
            assert not any(f.done() for f in stuck)
            for path in ("/health", "/metrics"):
                started = time.perf_counter()
                response = httpx.get(f"{url}{path}", timeout=5)
                assert response.status_code == 200, path
                assert time.perf_counter() - started < 1.0, path
            assert httpx.head(f"{url}/health", timeout=5).status_code == 200
            # answered before routing, and still logged and counted as a route
            assert 'route="/health",status="200"' in httpx.get(f"{url}/metrics", timeout=5).text
        finally:
            stop.set()
            silent.close()
            for connection in held:  # the reads fail now
                connection.close()
        assert {f.result().status_code for f in stuck} <= {503}


def test_a_body_that_stops_arriving_is_answered_408(tmp_path: Path) -> None:
    """A client that sends part of its body and then nothing holds no worker: after body_timeout_seconds
    it gets 408, and the service goes on serving."""
    config = tmp_path / "service.toml"
    config.write_text(f'warehouse = "{tmp_path}"\nbody_timeout_seconds = 1\n')
    with running_service("--config", str(config), "--log-level", "warning") as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as half:
            half.sendall(
                b"POST /plan HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\n\r\n"
                b'{"table": "db'
            )
            started = time.perf_counter()
            answer = half.recv(4096)
            waited = time.perf_counter() - started
            while b"Request body" not in answer and (more := half.recv(4096)):  # the body may come apart
                answer += more
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"Request body not received within 1 s" in answer
        assert 0.8 < waited < 5
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200


def test_configured_origins_may_call_with_cors(tmp_path: Path) -> None:
    config = tmp_path / "service.toml"
    config.write_text(f'warehouse = "{tmp_path}"\ncors_allowed_origins = ["https://notebooks.example"]\n')
    with running_service("--config", str(config), "--log-level", "warning") as url:
        preflight = httpx.options(
            f"{url}/plan",
            headers={
                "Origin": "https://notebooks.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "https://notebooks.example"
        allowed = httpx.post(f"{url}/plan", json={"table": "db.nope"}, headers={"Origin": "https://notebooks.example"})
        assert allowed.status_code == 404  # through to planning: no such table
        assert allowed.headers["access-control-allow-origin"] == "https://notebooks.example"
        other = httpx.post(f"{url}/plan", json={"table": "db.nope"}, headers={"Origin": "https://evil.example"})
        assert other.status_code == 403


def test_startup_objects_are_frozen_out_of_the_cycle_collector(tmp_path: Path) -> None:
    """A full cycle collection walks every tracked object: the ~120k of startup (modules, routes, models) made
    it a 30-50 ms pause of every request about once a second under load. The service freezes them once
    it is ready (gc.freeze) and says so on /metrics, with the collections per generation."""
    with running_service("--warehouse", str(tmp_path), "--log-level", "warning") as url:
        text = httpx.get(f"{url}/metrics", timeout=5).text
    values = {
        line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines() if line.startswith("python_gc_")
    }
    assert values["python_gc_frozen_objects"] > 50_000
    assert set(values) >= {f'python_gc_collections{{generation="{g}"}}' for g in range(3)}

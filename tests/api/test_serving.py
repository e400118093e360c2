"""Several uvicorn worker processes (`serve --workers 2`) plan as one does: settings reach every worker."""

from __future__ import annotations

import contextlib
import os
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
    """Plans of a metadata file that never finishes reading (a FIFO no one writes) hold every thread of
    the worker pool; /health and /metrics, whose dependencies are coroutines, still answer at once."""
    fifo = tmp_path / "stuck.metadata.json"
    os.mkfifo(fifo)
    blocked = 48  # more than the pool's 40 threads
    with (
        running_service("--warehouse", str(tmp_path), "--log-level", "warning") as url,
        ThreadPoolExecutor(blocked) as pool,
    ):
        stuck = [
            pool.submit(httpx.post, f"{url}/plan", json={"metadata-location": str(fifo)}, timeout=60)
            for _ in range(blocked)
        ]
        try:
            time.sleep(1.5)  # every thread of the service's pool is now waiting in open()
            assert not any(f.done() for f in stuck)
            for path in ("/health", "/metrics"):
                started = time.perf_counter()
                response = httpx.get(f"{url}{path}", timeout=5)
                assert response.status_code == 200, path
                assert time.perf_counter() - started < 1.0, path
        finally:
            while not all(f.done() for f in stuck):  # a writer that closes at once: each read ends empty
                with contextlib.suppress(OSError):
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                time.sleep(0.05)
        assert {f.result().status_code for f in stuck} <= {422, 503}

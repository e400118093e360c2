"""A memory limit: the service started inside a real memory cgroup (this machine's cgroup v1 or v2 memory
controller; skipped where no cgroup can be made) reads the limit at start and fits its default budgets under
it (service/memory_limit.py), keeps what was set explicitly, and answers concurrent plans without being
killed. The reading of the cgroup files is also checked against both hierarchies' formats."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from planner_service.service.memory_limit import RESERVED_BYTES, cgroup_memory_limit
from tests.conformance.reference import Conformance
from tests.processes import free_port, memory_cgroup, stop, wait_for_port

LIMIT = 1024 * 1024 * 1024
MIB = 1024 * 1024


def test_the_limit_is_read_from_either_hierarchy(tmp_path: Path) -> None:
    proc = tmp_path / "cgroup"
    (tmp_path / "memory" / "job").mkdir(parents=True)
    (tmp_path / "memory" / "job" / "memory.limit_in_bytes").write_text(f"{LIMIT}\n")
    proc.write_text("4:memory:/job\n0::/\n")
    assert cgroup_memory_limit(proc, tmp_path) == LIMIT
    (tmp_path / "memory" / "job" / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1: none
    assert cgroup_memory_limit(proc, tmp_path) is None
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / "memory.max").write_text("max\n")
    proc.write_text("0::/svc\n")
    assert cgroup_memory_limit(proc, tmp_path) is None
    (tmp_path / "svc" / "memory.max").write_text(f"{LIMIT}\n")
    assert cgroup_memory_limit(proc, tmp_path) == LIMIT
    assert cgroup_memory_limit(tmp_path / "missing", tmp_path) is None


@pytest.fixture
def limited() -> Iterator[Path]:
    """A new memory cgroup limited to LIMIT bytes."""
    with contextlib.ExitStack() as stack:
        try:
            group = stack.enter_context(memory_cgroup(LIMIT))
        except OSError as exc:
            pytest.skip(f"cannot make a memory cgroup here: {exc}")
        yield group


def _serve(group: Path, warehouse: str, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str, Path]:
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="limited-", suffix=".log")[1])
    cli = Path(sys.executable).with_name("scan-planner")

    def enter() -> None:  # (in the child, before exec: the service starts inside the cgroup)
        (group / "cgroup.procs").write_text(str(os.getpid()))

    proc = subprocess.Popen(
        [str(cli), "serve", "--host", "127.0.0.1", "--port", str(port), "--warehouse", warehouse],
        stdout=open(log, "wb"),  # noqa: SIM115
        stderr=subprocess.STDOUT,
        env={**os.environ, "SCAN_PLANNER_SHUTDOWN_DRAIN_SECONDS": "0", **env},
        preexec_fn=enter,
    )
    wait_for_port(port, proc, 60)
    return proc, f"http://127.0.0.1:{port}", log


def _fitted(log: Path) -> dict[str, int]:
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    return next((line for line in lines if line["msg"] == "memory budgets fitted to the cgroup's limit"), {})


def test_a_service_in_a_memory_cgroup_fits_its_budgets_and_stays_up(conformance: Conformance, limited: Path) -> None:
    warehouse = str(conformance.dir / "warehouse")
    proc, url, log = _serve(limited, warehouse, {"SCAN_PLANNER_PLAN_CACHE_BYTES": str(300 * MIB)})
    try:
        usable = LIMIT - RESERVED_BYTES
        fitted = _fitted(log)
        assert fitted["limit-bytes"] == LIMIT
        assert fitted["cache-bytes"] == usable // 4 and fitted["plan-memory-bytes"] == usable // 2
        assert "plan-cache-bytes" not in fitted  # set explicitly: kept as given
        outcomes: Counter[int] = Counter()
        lock = threading.Lock()

        def plans() -> None:
            with httpx.Client(base_url=url, timeout=120) as client:
                for table in sorted(conformance.tables)[:12]:
                    answer = client.post("/plan", json={"table": f"db.{table}", "inline-task-limit": 10**6})
                    assert answer.status_code in (200, 503), answer.text[:300]
                    assert answer.status_code == 200 or "Retry-After" in answer.headers
                    with lock:
                        outcomes[answer.status_code] += 1

        workers = [threading.Thread(target=plans) for _ in range(6)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(300)
        assert proc.poll() is None, "the service was killed"
        assert outcomes[200] >= 1 and sum(outcomes.values()) == 72, outcomes
    finally:
        stop(proc)
        log.unlink()

"""`scan-planner serve` as a real uvicorn process on a free loopback port, for bench/service_bench.py.

The service runs the project venv's `scan-planner` script with `src` first on PYTHONPATH, so that it
serves that checkout's planner_service (the benchmark's --src). Settings come only from the arguments
and `env`: SCAN_PLANNER_* variables of the caller's environment are dropped. Its log (JSON lines) goes
to a temporary file, whose tail is shown if the service fails to start; it is removed after a clean stop.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
from common import peak_rss_bytes

CLI = Path(sys.executable).with_name("scan-planner")


@dataclass(frozen=True)
class Service:
    url: str
    pid: int
    log: Path

    def peak_rss_bytes(self) -> int:
        """The service's peak RSS since it started or since the last reset_peak_rss()."""
        return peak_rss_bytes(self.pid)

    def rss_bytes(self) -> int:
        """The service's current RSS (VmRSS)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError(f"no VmRSS in /proc/{self.pid}/status")

    def reset_peak_rss(self) -> bool:
        """Reset the peak RSS to the current RSS (Linux >= 4.0: `5` to /proc/PID/clear_refs); False if refused."""
        try:
            Path(f"/proc/{self.pid}/clear_refs").write_text("5")
        except OSError:
            return False
        return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the service exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url}/health did not answer within {timeout:.0f}s")


@contextlib.contextmanager
def served(
    args: Sequence[str],
    src: Path,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    cgroup: Path | None = None,
) -> Iterator[Service]:
    """`scan-planner serve --host 127.0.0.1 --port <free> ARGS`, healthy; stopped (SIGTERM, then SIGKILL) at exit.
    With `cgroup` (a cgroup directory), the service starts inside it."""
    port = free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith("SCAN_PLANNER_")}
    path = os.pathsep.join(p for p in (str(src), os.environ.get("PYTHONPATH")) if p)
    own_index = tempfile.mkdtemp(prefix="bench-index-")  # a fresh service is cold unless `env` shares a tier
    environment = {
        **base,
        "PYTHONPATH": path,
        "SCAN_PLANNER_SHUTDOWN_DRAIN_SECONDS": "0",
        "SCAN_PLANNER_INDEX_DIRECTORY": own_index,
        **(env or {}),
    }
    log = Path(tempfile.NamedTemporaryFile(prefix="bench-service-", suffix=".log", delete=False).name)  # noqa: SIM115
    cmd = [str(CLI), "serve", "--host", "127.0.0.1", "--port", str(port), *args]
    with open(log, "wb") as out:
        enter = None if cgroup is None else lambda: (cgroup / "cgroup.procs").write_text(str(os.getpid()))
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=environment, preexec_fn=enter)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            _wait_healthy(url, proc, timeout)
        except (RuntimeError, TimeoutError) as err:
            raise RuntimeError(f"{' '.join(cmd)}: {err}; its log:\n{log.read_text()[-3000:]}") from None
        yield Service(url, proc.pid, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
    shutil.rmtree(own_index, ignore_errors=True)
    log.unlink()  # kept when anything failed, for a look

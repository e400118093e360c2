"""Processes on loopback for the tests (and bench/replica_bench.py's balancer): a free port, waiting until a
process listens on it, and stopping it; a memory cgroup to start one in (and bench/memory_limit_bench.py)."""

from __future__ import annotations

import contextlib
import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


def stop(proc: subprocess.Popen[bytes], timeout: float = 10) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `timeout` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()


@contextlib.contextmanager
def memory_cgroup(limit: int) -> Iterator[Path]:
    """A new memory cgroup (v1's or v2's controller) limited to `limit` bytes, removed afterwards (what is left
    in it moved back to the root); a process joins it by writing its pid to `cgroup.procs`. OSError where no
    cgroup can be made (not root, no memory controller)."""
    v1 = Path("/sys/fs/cgroup/memory")
    root = v1 if v1.is_dir() else Path("/sys/fs/cgroup")
    group = root / f"scan-planner-{secrets.token_hex(4)}"
    group.mkdir()
    try:
        (group / ("memory.limit_in_bytes" if v1.is_dir() else "memory.max")).write_text(str(limit))
        yield group
    finally:
        for pid in (group / "cgroup.procs").read_text().split():
            (root / "cgroup.procs").write_text(pid)
        group.rmdir()

"""Planning many hostile tables through a running service and judging each answer (verdicts.judge), and the
service process's memory, for the fuzz test and the long run (fuzz_run.py)."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import httpx

from tests.hostile.verdicts import judge

FUZZ_NAMESPACE = "fuzz"  # java_verdicts.py writes the mutations there


def plan_all(
    url: str, judged: dict[str, dict[str, Any]], deadline_seconds: float, namespace: str = FUZZ_NAMESPACE
) -> tuple[dict[str, str], collections.Counter[str]]:
    """Plan every table of `judged` (name -> Java's verdict): (name -> what is wrong, for each wrong answer;
    how many were planned, refused, and judged by Java as planned / refused)."""
    findings: dict[str, str] = {}
    outcomes: collections.Counter[str] = collections.Counter()
    with httpx.Client(base_url=url, timeout=deadline_seconds) as client:
        for name, verdict in judged.items():
            try:
                response = client.post("/plan", json={"table": f"{namespace}.{name}"})
            except httpx.TimeoutException:
                findings[name] = f"no answer within {deadline_seconds:.0f} s"
                continue
            except httpx.HTTPError as exc:  # e.g. a streamed answer cut short
                findings[name] = f"the answer broke off: {type(exc).__name__}: {exc}"
                continue
            try:
                body = response.json()
            except ValueError:
                body = {"error": None}
            problem = judge(verdict, response.status_code, body)
            outcomes["planned" if response.status_code == 200 else "refused"] += 1
            outcomes[f"java {verdict['stage']}"] += 1
            if problem is not None:
                findings[name] = problem
    return findings, outcomes


def service_pid(url: str) -> int:
    """The pid of the `scan-planner serve` process listening on `url`'s port."""
    port = url.rsplit(":", 1)[1]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"serve" in argv and port.encode() in argv:
                return int(entry.name)
    raise RuntimeError(f"no service process on port {port}")


def peak_rss_mb(pid: int, field: str = "VmRSS") -> float:
    """A memory figure of /proc/<pid>/status in MB: VmRSS (now) or VmHWM (the peak so far)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for {pid}")

"""The structure-aware fuzzer's fast share: FUZZ_COUNT mutations (mutations.py) of a table Iceberg Java wrote,
each judged by Iceberg Java 1.10.2 (java_verdicts.py), each planned through the service on loopback with a
deadline, and held to Java's verdict (verdicts.judge): refused with a named error, or planned exactly as
Java plans it; never a 5xx, never a plan of what Java refuses. The service runs with a 32 MiB inflation
limit, so the compression bombs among the mutations are refused; its peak RSS must stay within its idle
size plus 8 times that limit throughout.

The long run (tens of thousands of mutations, each seed its own) is tests/hostile/fuzz_run.py; the guide
docs/guides/when-things-fail.md ("Hostile tables") has its command and its latest count and findings.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import running_service
from tests.hostile.fuzzing import peak_rss_mb, plan_all, service_pid
from tests.hostile.verdicts import load_verdicts

LIMIT_MIB = 32
DEADLINE_SECONDS = 30


@pytest.fixture(scope="module")
def verdicts(request: pytest.FixtureRequest) -> dict[str, Any]:
    return load_verdicts(request.config)


@pytest.fixture(scope="module")
def service(verdicts: dict[str, Any]) -> Iterator[str]:
    env = {"SCAN_PLANNER_MAX_INFLATED_BYTES": str(LIMIT_MIB * 1024 * 1024)}
    with running_service("--warehouse", str(verdicts["dir"] / "warehouse"), env=env) as url:
        yield url


def test_every_mutation_is_refused_or_planned_as_java_plans_it(verdicts: dict[str, Any], service: str) -> None:
    judged = {name: v for name, v in verdicts["fuzz"].items() if v["stage"] != "unwritable"}
    assert len(judged) > 0.9 * len(verdicts["fuzz"])  # the mutations are mostly writable
    kinds = {v["stage"] for v in judged.values()}
    assert kinds >= {"load", "plan", "planned"}  # Java refuses some at load, some at planning, plans others
    pid = service_pid(service)
    idle = peak_rss_mb(pid, "VmRSS")
    findings, outcomes = plan_all(service, judged, DEADLINE_SECONDS)
    assert not findings, "\n".join(f"{name}: {what}" for name, what in sorted(findings.items())[:20])
    assert outcomes["planned"] > 0 and outcomes["refused"] > 0
    peak = peak_rss_mb(pid, "VmHWM")
    assert peak < idle + 8 * LIMIT_MIB, f"peak RSS {peak:.0f} MB, idle {idle:.0f} MB"
    with httpx.Client(base_url=service, timeout=10) as client:
        assert client.get("/health").status_code == 200

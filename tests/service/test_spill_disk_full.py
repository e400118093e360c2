"""A full disk under the plan spill: plan_spill_directory on a real 1 MiB tmpfs, filled to its last pages.
Plans answered by id still serve every task exactly as a service with room does (each is planned again when
its tasks are fetched, since it could not be written and the plan cache is too small for it); nothing half
written is read back; the metrics count each failed write and the log says so once per run of failures;
with room again, plans are spilled again. A spill directory that cannot be made at start leaves the
service running without one, saying why."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import httpx

from tests.conformance.reference import Conformance
from tests.conftest import running_service

TABLES = ("many_manifests", "mor_position_deletes", "spec_evolution")


def _fill(point: Path, leave: int) -> Path:
    """A file taking all of `point`'s free space but `leave` bytes."""
    stat = os.statvfs(point)
    filler = point / "filler"
    filler.write_bytes(b"\0" * max(0, stat.f_bavail * stat.f_frsize - leave))
    return filler


def _metric(url: str, name: str) -> float:
    found = re.search(rf"^{name}\s+(\S+)$", httpx.get(f"{url}/metrics", timeout=10).text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def _tasks(url: str, table: str) -> list[object]:
    with httpx.Client(base_url=url, timeout=60) as client:
        plan = client.post("/plan", json={"table": f"db.{table}", "inline-task-limit": 0}).json()
        assert "plan-id" in plan, plan
        out = []
        for index in range(plan["task-count"]):
            answer = client.get(f"/plans/{plan['plan-id']}/tasks/{index}")
            assert answer.status_code == 200, answer.text[:300]
            out.append(answer.json()["tasks"])
        return out


def test_a_full_disk_costs_a_replan_never_an_answer(
    conformance: Conformance, conformance_service: str, small_disk: Path, tmp_path: Path
) -> None:
    expected = {table: _tasks(conformance_service, table) for table in TABLES}
    filler = _fill(small_disk, leave=4096)
    log = tmp_path / "service.log"
    env = {"SCAN_PLANNER_PLAN_SPILL_DIRECTORY": str(small_disk), "SCAN_PLANNER_PLAN_CACHE_BYTES": "1024"}
    warehouse = str(conformance.dir / "warehouse")
    with running_service("--warehouse", warehouse, env=env, log_path=log) as url:
        for table in TABLES:
            assert _tasks(url, table) == expected[table]
        deadline = time.monotonic() + 30
        while _metric(url, "scan_planner_plan_spill_failures") < len(TABLES) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _metric(url, "scan_planner_plan_spill_failures") >= len(TABLES)
        assert _metric(url, "scan_planner_plan_spill_plans") == 0
        for table in TABLES:  # once more: not spilled, not cached: planned again, the same tasks
            assert _tasks(url, table) == expected[table]
        made = _metric(url, "scan_planner_plans_made")
        assert made >= 2 * len(TABLES)
        filler.unlink()  # room again
        assert _tasks(url, "many_manifests") == expected["many_manifests"]
        deadline = time.monotonic() + 30
        while _metric(url, "scan_planner_plan_spill_plans") < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _metric(url, "scan_planner_plan_spill_plans") >= 1
        assert _tasks(url, "many_manifests") == expected["many_manifests"]
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    warnings = [line for line in lines if line["msg"].startswith("cannot spill plans to disk")]
    assert len(warnings) == 1, warnings  # once for the run of failures, with what to do
    assert "No space left on device" in warnings[0]["error"] and "free space" in warnings[0]["msg"]
    assert any(line["msg"] == "spilling plans to disk again" for line in lines)


def test_a_spill_directory_that_cannot_be_made_leaves_the_service_without_one(
    conformance: Conformance, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    log = tmp_path / "service.log"
    env = {"SCAN_PLANNER_PLAN_SPILL_DIRECTORY": str(blocker / "spill"), "SCAN_PLANNER_PLAN_CACHE_BYTES": "1024"}
    with running_service("--warehouse", str(conformance.dir / "warehouse"), env=env, log_path=log) as url:
        assert httpx.get(f"{url}/health", timeout=10).json()["status"] == "ok"
        assert _tasks(url, "many_manifests")
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    warning = next(line for line in lines if line["msg"].startswith("plan_spill_directory cannot be used"))
    assert warning["directory"] == str(blocker / "spill") and "NotADirectoryError" in warning["error"]

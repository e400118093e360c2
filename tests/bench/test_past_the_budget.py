"""A table whose own split size cuts it into more ranges than the plan memory budget holds plans at default
settings (issue 53: a 20,000,000-file table was refused so), here at a size that stays quick: the bench's
metadata-only table of 20,000 files (bench/make_table.py, Iceberg Java, cached), whose 1-4 row groups a file
make 38,348 pieces, served with a plan memory budget of 1 MiB (8,192 ranges beyond one a file) and a plan
cache of 1 MiB, so that the plan goes to the spill and its tasks are fetched from there.

Each answer is held to the plan made in process without any bound (the in-memory answer): every task fetched
by index, a thousand at a time (so that each answer streams), and the one task a split size of 2^63 - 1 and
no open cost make of every file, fetched whole (streamed: no Content-Length), plain and ?pretty."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from planner_service.catalog.base import load_by_metadata_location
from planner_service.io.fileio import FileIO
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import ScanRequest
from tests.bench.test_bench_smoke import REPO
from tests.conftest import running_service
from tests.planning.conformance_plans import task_pieces

FILES, MANIFESTS = 20_000, 20
BUDGET = 1 << 20  # bytes: 8,192 ranges of 128 bytes beyond one a file
ONE_TASK = {"split-size": 2**63 - 1, "file-open-cost": 0}
Pieces = list[list[tuple[str, int, int]]]


@pytest.fixture(scope="module")
def table() -> dict[str, Any]:
    cmd = [sys.executable, str(REPO / "bench" / "plan_bench.py"), "--files", str(FILES), "--manifests"]
    cmd += [str(MANIFESTS), "--table-only", "--timeout", "600"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr[-5000:]}"
    described: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert described["data_files"] == FILES
    return described


@pytest.fixture(scope="module")
def service(table: dict[str, Any]) -> Iterator[str]:
    env = {"SCAN_PLANNER_PLAN_MEMORY_BYTES": str(BUDGET), "SCAN_PLANNER_PLAN_CACHE_BYTES": str(BUDGET)}
    with tempfile.TemporaryDirectory(prefix="past-the-budget-") as directory:
        config = Path(directory) / "service.toml"
        config.write_text(f'tables = {{"bench.t" = {json.dumps(table["metadata_location"])}}}\n')
        with running_service("--config", str(config), env=env) as url:
            yield url


def _in_memory(table: dict[str, Any], options: dict[str, int] | None = None) -> Pieces:
    """The tasks of the plan made in process, with no bound on its ranges: (path, start, length) each."""
    planner = ScanPlanner(FileIO())
    loaded = load_by_metadata_location(planner.io, table["metadata_location"])
    return task_pieces(planner.plan(loaded, ScanRequest(options=options or {})))


def _pieces(task: dict[str, Any]) -> list[tuple[str, int, int]]:
    return [(f["data-file"]["file-path"], f["start"], f["length"]) for f in task["files"]]


def _spilled(client: httpx.Client) -> float:
    lines = client.get("/metrics").text.splitlines()
    return sum(float(line.split()[-1]) for line in lines if line.startswith("scan_planner_plan_spill_plans"))


def test_a_table_past_the_budget_plans_at_its_own_split_size(service: str, table: dict[str, Any]) -> None:
    expected = _in_memory(table)
    assert sum(len(t) for t in expected) - FILES > BUDGET // 128  # (the table's own ranges cross the budget)
    with httpx.Client(base_url=service, timeout=300) as client:
        answer = client.post("/plan", json={"table": "bench.t", "inline-task-limit": 0})
        assert answer.status_code == 200, answer.text[:1000]
        plan = answer.json()
        assert plan["task-count"] == len(expected) and plan["metrics"]["scanned-data-files"] == FILES
        deadline = time.monotonic() + 120
        while _spilled(client) < 1:  # the plan is bigger than the plan cache: written to the spill
            assert time.monotonic() < deadline, "the plan never reached the spill"
            time.sleep(0.2)
        fetched: Pieces = []
        for start in range(0, len(expected), 1000):
            end = min(start + 1000, len(expected))
            page = client.get(f"/plans/{plan['plan-id']}/tasks", params={"start": start, "end": end})
            assert page.status_code == 200, page.text[:1000]
            fetched += [_pieces(t) for t in page.json()["tasks"]]
    assert fetched == expected


def test_one_task_of_every_file_streams(service: str, table: dict[str, Any]) -> None:
    (expected,) = _in_memory(table, ONE_TASK)
    with httpx.Client(base_url=service, timeout=300) as client:
        plan = client.post("/plan", json={"table": "bench.t", "options": ONE_TASK, "inline-task-limit": 0}).json()
        assert plan["task-count"] == 1
        path = f"/plans/{plan['plan-id']}/tasks/0"
        with client.stream("GET", path, headers={"Accept-Encoding": "identity"}) as streamed:
            assert streamed.status_code == 200
            assert "content-length" not in streamed.headers  # (streamed, a chunk of pieces at a time)
            body = streamed.read()
        (task,) = orjson.loads(body)["tasks"]
        assert _pieces(task) == expected
        pretty = client.get(path, params={"pretty": ""}, headers={"Accept-Encoding": "zstd"})
        assert pretty.headers["content-encoding"] == "zstd"
        assert pretty.content == orjson.dumps(
            orjson.loads(body), option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
        )

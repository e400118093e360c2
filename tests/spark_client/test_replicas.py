"""Replicas behind a real load balancer: two `scan-planner serve` processes behind HAProxy (round robin per
request, on loopback). A Spark job whose executors fetch their tasks by plan id through the balancer reads
Spark + Iceberg Java's rows exactly once; a replica that did not make a plan serves its tasks (it rebuilds
the plan from the id, once, and keeps it); no replica plans it again per task fetch."""

from __future__ import annotations

import contextlib
import re
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest

from spark_client import plan_and_read
from tests.balancer import Replica, balanced, haproxy_path
from tests.conformance.reference import Conformance
from tests.conftest import running_service
from tests.spark_client.compare import assert_spark_read_matches, read_arguments

pytest.importorskip("pyspark")
pytestmark = pytest.mark.skipif(haproxy_path() is None, reason="haproxy is not installed (scripts/setup.sh)")

REPLICAS = 2
# reads whose tasks carry deletes of every kind, several specs, split files and every data format
CASES = [
    "mor_position_deletes/full",
    "equality_deletes/full",
    "v3_dv/full",
    "spec_evolution/id",
    "row_groups/full",
    "mixed_formats/full",
    "orc_stripes/full",
]
SMALL_SPLITS = {"split-size": 4096}  # many tasks per plan: every replica serves some


@pytest.fixture(scope="module")
def replicas(conformance: Conformance) -> Iterator[list[str]]:
    warehouse = str(conformance.dir / "warehouse")
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(running_service("--warehouse", warehouse)) for _ in range(REPLICAS)]


@pytest.fixture(scope="module")
def balancer(replicas: list[str]) -> Iterator[str]:
    with balanced(replicas) as url:
        yield url


def _gauge(url: str, name: str, labels: str = "") -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    found = re.search(rf"^{re.escape(name + labels)}\s+(\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def _task_fetches(url: str) -> float:
    return _gauge(
        url, "scan_planner_requests_total", '{method="GET",route="/plans/{plan_id}/tasks/{index}",status="200"}'
    )


@pytest.mark.parametrize("read_id", CASES)
def test_a_spark_job_through_the_balancer_reads_every_row_once(
    spark: Any, conformance: Conformance, replicas: list[str], balancer: str, read_id: str
) -> None:
    case = conformance.read(read_id)
    arguments = read_arguments(case)
    arguments["options"] = {**SMALL_SPLITS, **(arguments["options"] or {})}
    made = [_gauge(r, "scan_planner_plans_made") for r in replicas]
    fetched = [_task_fetches(r) for r in replicas]
    df = plan_and_read(spark, f"db.{case['table']}", service_url=balancer, inline_task_limit=0, **arguments)
    tasks = df.rdd.getNumPartitions()
    assert_spark_read_matches(case, df.schema, df.toArrow(), pq.read_table(conformance.dir / case["path"]))
    served = [_task_fetches(r) - before for r, before in zip(replicas, fetched, strict=True)]
    rebuilt = [_gauge(r, "scan_planner_plans_made") - before for r, before in zip(replicas, made, strict=True)]
    assert sum(served) == tasks  # one fetch per task: no task read twice, none lost
    if tasks >= 2 * REPLICAS:
        assert all(n > 0 for n in served), served  # round robin: every replica served tasks
    assert all(n <= 1 for n in rebuilt), rebuilt  # at most one plan per replica, whatever it served


def test_a_replica_that_did_not_make_a_plan_serves_its_tasks(conformance: Conformance, replicas: list[str]) -> None:
    """Planned on one replica, each task fetched from the other answers exactly as the first would."""
    body = {"table": "db.mor_position_deletes", "inline-task-limit": 0, "options": SMALL_SPLITS}
    first, second = replicas[0], replicas[1]
    made = _gauge(second, "scan_planner_plans_made")
    plan = httpx.post(f"{first}/plan", json=body, timeout=60).json()
    assert plan["task-count"] >= 2
    for index in range(plan["task-count"]):
        here = httpx.get(f"{first}/plans/{plan['plan-id']}/tasks/{index}", timeout=60).json()
        there = httpx.get(f"{second}/plans/{plan['plan-id']}/tasks/{index}", timeout=60).json()
        assert there == here
    assert _gauge(second, "scan_planner_plans_made") - made == 1  # rebuilt once from the id, then kept


def test_a_spark_job_survives_a_replica_killed_while_it_reads(spark: Any, conformance: Conformance) -> None:
    """Two replicas on fixed ports behind HAProxy; while a Spark job's executors fetch its tasks by id through
    the balancer, one replica is killed (SIGKILL): the balancer and the client send its requests to the other,
    and the job reads exactly Spark + Iceberg Java's rows."""
    case = conformance.read("row_groups/full")
    arguments = read_arguments(case)
    arguments["options"] = {**SMALL_SPLITS, **(arguments["options"] or {})}
    warehouse = str(conformance.dir / "warehouse")
    pair = [Replica(warehouse), Replica(warehouse)]
    try:
        for replica in pair:
            replica.start()
        with balanced([r.url for r in pair]) as url:
            df = plan_and_read(spark, f"db.{case['table']}", service_url=url, inline_task_limit=0, **arguments)
            assert df.rdd.getNumPartitions() >= 8
            killed: list[float] = []

            def kill() -> None:
                pair[0].stop(signal.SIGKILL)
                killed.append(time.monotonic())

            killer = threading.Timer(0.3, kill)
            killer.start()
            actual = df.toArrow()
            finished = time.monotonic()
            killer.join()
        assert killed and killed[0] < finished, "the replica died while the job read"
        assert_spark_read_matches(case, df.schema, actual, pq.read_table(conformance.dir / case["path"]))
    finally:
        for replica in pair:
            replica.close()

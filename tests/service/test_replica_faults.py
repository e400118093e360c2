"""Replicas that stop or die under load, behind a real HAProxy (tests/balancer.py's configuration, which
deploy/haproxy.cfg is): a rolling restart (SIGTERM, the replica drains, starts again on its port, then the
other) under a steady load of plans and task fetches fails no request; a replica killed with SIGKILL costs
none of the requests that go through PlannerClient (the balancer sends again what a dead replica did not
answer, the client retries a balancer's 502/504). Each request's answer is checked, not only its status."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from planner_client import PlannerClient, PlannerServiceError
from tests.balancer import Replica, balanced, haproxy_path
from tests.conformance.reference import Conformance

pytestmark = pytest.mark.skipif(haproxy_path() is None, reason="haproxy is not installed (scripts/setup.sh)")

TABLE = "db.many_manifests"
DRAIN_SECONDS = 3  # longer than HAProxy takes to see /health fail (inter 1s, fall 2)
CLIENTS = 4


@pytest.fixture
def replicas(conformance: Conformance) -> Iterator[tuple[list[Replica], str]]:
    warehouse = str(conformance.dir / "warehouse")
    pair = [Replica(warehouse, DRAIN_SECONDS), Replica(warehouse, DRAIN_SECONDS)]
    try:
        for replica in pair:
            replica.start()
        with balanced([r.url for r in pair]) as url:
            yield pair, url
    finally:
        for replica in pair:
            replica.close()


class Load:
    """CLIENTS threads planning the table by id and fetching a task through the balancer, each answer
    checked: `counts` of requests, failures (any error, or a wrong answer), and what the failures were."""

    def __init__(self, url: str, client_retries: int) -> None:
        self.url, self.retries = url, client_retries
        self.counts: Counter[str] = Counter()
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run) for _ in range(CLIENTS)]
        with PlannerClient(url) as client:
            self.expected = client.plan({"table": TABLE, "inline-task-limit": 0})
            self.expected_task = client.task(self.expected["plan-id"], 0)["task"]

    def _run(self) -> None:
        with PlannerClient(self.url, retries=self.retries, backoff=0.2, timeout=60) as client:
            while not self._stop.is_set():
                try:
                    plan = client.plan({"table": TABLE, "inline-task-limit": 0})
                    assert plan["task-count"] == self.expected["task-count"], plan["task-count"]
                    # (not the id's bytes: its expiry steps each hour, so an hour's turn gives a new id)
                    task = client.task(plan["plan-id"], 0)
                    assert task["task"] == self.expected_task, task
                    outcome = "answered"
                except (PlannerServiceError, AssertionError) as exc:
                    outcome = "failed"
                    with self._lock:
                        self.failures.append(str(exc)[:300])
                with self._lock:
                    self.counts["requests"] += 2
                    self.counts[outcome] += 1

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(120)


def _healthy(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    return False


def test_a_rolling_restart_under_load_fails_no_request(replicas: tuple[list[Replica], str]) -> None:
    pair, url = replicas
    with Load(url, client_retries=0) as load:  # no retries of the client's own: the drain alone
        time.sleep(2)
        for replica in pair:
            stopped = threading.Thread(target=replica.stop)
            started = time.monotonic()
            stopped.start()
            time.sleep(0.5)
            health = httpx.get(f"{replica.url}/health", timeout=5)  # draining: still up, not ready
            assert health.status_code == 503 and health.json()["status"] == "draining"
            stopped.join(60)
            assert time.monotonic() - started >= DRAIN_SECONDS
            replica.start()
            while not _healthy(replica.url):
                time.sleep(0.1)
            time.sleep(2.5)  # HAProxy sees it up again (inter 1s, rise 1)
    summary: dict[str, Any] = dict(load.counts)
    print({"rolling restart": summary})
    assert load.counts["answered"] > 20, summary
    assert load.failures == [], load.failures[:5]


def test_a_replica_killed_under_load_costs_no_request(replicas: tuple[list[Replica], str]) -> None:
    pair, url = replicas
    with Load(url, client_retries=3) as load:
        time.sleep(2)
        assert pair[0].stop(signal.SIGKILL) == -signal.SIGKILL
        time.sleep(4)  # the balancer marks it down; the survivor serves everything
        pair[0].start()
        time.sleep(3)
    summary: dict[str, Any] = dict(load.counts)
    print({"kill -9": summary})
    assert load.counts["answered"] > 20, summary
    assert load.failures == [], load.failures[:5]

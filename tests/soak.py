"""A soak: several clients sending a running service a mix of requests (plans answered whole, plans by id
and their tasks, the explorer's explained plans) over many tables, while the service's RSS, open files and
threads and the requests' p99 latency are sampled at a fixed interval. Used by tests/service/test_soak.py
(a short run in CI: a leak fails it) and bench/soak_bench.py (30 minutes, a table of the samples).
"""

from __future__ import annotations

import os
import random
import statistics
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class Sample:
    seconds: float  # since the soak started
    rss_bytes: int
    open_files: int
    threads: int
    requests: int  # answered in this interval
    errors: int
    p99_ms: float


@dataclass
class Soak:
    samples: list[Sample] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # wrong answers and errors, what they were

    def after(self, warm_up: float) -> list[Sample]:
        return [s for s in self.samples if s.seconds > warm_up]


def process_figures(pid: int) -> tuple[int, int, int]:
    """(RSS bytes, open file descriptors, threads) of a process, from /proc."""
    rss = threads = 0
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd")), threads


def soak(url: str, pid: int, tables: Sequence[str], seconds: float, every: float, clients: int = 4) -> Soak:
    """Run the mix for `seconds` over `tables` (full names; each has a long column `id`), sampling every
    `every` seconds."""
    out = Soak()
    lock = threading.Lock()
    latencies: list[float] = []
    counts = {"errors": 0}
    stop = threading.Event()

    def client(seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(base_url=url, timeout=120) as http:
            while not stop.is_set():
                table = rng.choice(tables)
                started = time.perf_counter()
                try:  # a filter of many values: more distinct plans than the plan cache holds
                    problem = _one(http, rng.random(), {"table": table, "filter": f"id < {rng.randrange(1, 5000)}"})
                except httpx.HTTPError as exc:
                    problem = f"{type(exc).__name__}: {exc}"
                elapsed = time.perf_counter() - started
                with lock:
                    latencies.append(elapsed)
                    if problem is not None:
                        counts["errors"] += 1
                        out.failures.append(problem[:300])

    workers = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    started = time.monotonic()
    for worker in workers:
        worker.start()
    try:
        while time.monotonic() - started < seconds:
            time.sleep(every)
            with lock:
                taken, errors = latencies[:], counts["errors"]
                latencies.clear()
                counts["errors"] = 0
            rss, files, threads = process_figures(pid)
            p99 = statistics.quantiles(taken, n=100)[98] * 1000 if len(taken) >= 2 else 0.0
            out.samples.append(Sample(time.monotonic() - started, rss, files, threads, len(taken), errors, p99))
    finally:
        stop.set()
        for worker in workers:
            worker.join(120)
    return out


def _one(http: httpx.Client, roll: float, scan: dict[str, Any]) -> str | None:
    """One request of the mix; what was wrong with its answer, or None."""
    if roll < 0.4:  # a plan answered whole
        answer = http.post("/plan", json=scan | {"inline-task-limit": 10**6})
        if answer.status_code != 200:
            return f"/plan {answer.status_code}: {answer.text[:200]}"
        body: dict[str, Any] = answer.json()
        return None if body["task-count"] == len(body["tasks"]) else "/plan: task-count differs from its tasks"
    if roll < 0.8:  # by id, then a task
        answer = http.post("/plan", json=scan | {"inline-task-limit": 0})
        if answer.status_code != 200:
            return f"/plan by id {answer.status_code}: {answer.text[:200]}"
        plan = answer.json()
        if not plan["task-count"]:
            return None
        index = plan["task-count"] - 1
        task = http.get(f"/plans/{plan['plan-id']}/tasks/{index}")
        return None if task.status_code == 200 else f"task {task.status_code}: {task.text[:200]}"
    answer = http.post("/explore", json=scan)  # the explorer's
    return None if answer.status_code == 200 else f"/explore {answer.status_code}: {answer.text[:200]}"

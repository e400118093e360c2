"""Replicas behind HAProxy: throughput and latency of 1, 2 and 4 `scan-planner serve` processes behind a real
load balancer (Debian's haproxy, round robin per request; tests/balancer.py), from the clients' seat.

    .venv/bin/python bench/replica_bench.py [--replicas 1,2,4] [--clients 50] [--seconds 20]
        [--files 200000 --manifests 400]

On the bench table (bench/make_table.py), for each replica count: the replicas are started, each warmed
through the balancer (the selective plan, the full plan answered by id and its tasks fetched, so every
replica holds the index and the plan), then two loads of --clients clients for --seconds each:

* small   every client POSTs the selective plan (`id = X`: one file) again and again: the planning
          service's common case, answered from the replicas' caches;
* mixed   each client cycles through the selective plan, a plan pruned by partition (a few days), and
          fetches of the full plan's tasks by id (GET /plans/{id}/tasks/{i}, as executors do).

Reported per count and load: requests/s, p50 and p99 latency (nearest rank), errors. The clients, the
balancer and the replicas share this machine's cores: the figures show what replicas buy on it, not on a
fleet. Results go to --out as JSON and to stdout as a table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from common import REPO, progress, write_json
from load import Request, drive
from service_bench import BENCH_TABLE, bench_service, bench_table

sys.path.insert(0, str(REPO))
from tests.balancer import balanced


def warm(url: str, bodies: list[dict[str, Any]], replicas: int) -> tuple[str, int]:
    """Each body planned, and the full plan's tasks fetched, often enough that round robin reaches every
    replica; returns the full plan's id and task count."""
    with httpx.Client(base_url=url, timeout=600) as client:
        for body in bodies:
            for _ in range(replicas):
                client.post("/plan", json=body).raise_for_status()
        full = client.post("/plan", json={"table": BENCH_TABLE}).json()
        for index in range(2 * replicas):
            client.get(f"/plans/{full['plan-id']}/tasks/{index}").raise_for_status()
    return full["plan-id"], int(full["task-count"])


def run(args: argparse.Namespace) -> dict[str, Any]:
    table = bench_table(args)
    location = table["metadata_location"]
    one = {
        "table": BENCH_TABLE,
        "filter": {"type": "eq", "term": "id", "value": table["one_percent"]["id_range"]["min"]},
    }
    days = table["one_percent"]["day_range"]
    pruned = {
        "table": BENCH_TABLE,
        "filter": {
            "type": "and",
            "left": {"type": "gt-eq", "term": "ts", "value": f"{days['first']}T00:00:00"},
            "right": {"type": "lt-eq", "term": "ts", "value": f"{days['last']}T23:59:59"},
        },
    }
    results: dict[str, Any] = {"table": table, "clients": args.clients, "seconds": args.seconds, "runs": []}
    for replicas in args.replicas:
        with contextlib.ExitStack() as stack:
            services = [stack.enter_context(bench_service(REPO, location)) for _ in range(replicas)]
            url = stack.enter_context(balanced([s.url for s in services]))
            plan_id, tasks = warm(url, [one, pruned], replicas)
            mixed: list[Request] = [
                ("POST", f"{url}/plan", json.dumps(one).encode()),
                ("POST", f"{url}/plan", json.dumps(pruned).encode()),
            ]
            mixed += [("GET", f"{url}/plans/{plan_id}/tasks/{i % tasks}", None) for i in range(0, 997, 7)]
            for name, load in (("small", None), ("mixed", mixed)):
                progress("bench", f"--- {replicas} replica(s), {name}: {args.clients} clients x {args.seconds:.0f} s")
                time.sleep(1)
                figures = drive(
                    f"{url}/plan", json.dumps(one).encode(), args.clients, args.seconds, timeout=120, mixed=load
                )
                figures |= {"replicas": replicas, "load": name}
                progress(name, json.dumps({k: v for k, v in figures.items() if k != "error_samples"}, default=str))
                results["runs"].append(figures)
    return results


def report(results: dict[str, Any]) -> list[str]:
    lines = [f"{'replicas':>8} {'load':>6} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}"]
    for r in results["runs"]:
        lines.append(
            f"{r['replicas']:>8} {r['load']:>6} {r['requests_per_s']:>8,.0f} {r['p50_ms']:>8.1f} "
            f"{r['p99_ms']:>8.1f} {r['errors']:>7}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=lambda t: [int(x) for x in t.split(",")], default=[1, 2, 4])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--manifests", type=int, default=400)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "replicas.json")
    args = parser.parse_args()
    results = run(args)
    lines = report(results)
    print("\n".join(lines))
    write_json(args.out, {**results, "report": lines})
    errors = sum(r["errors"] for r in results["runs"])
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

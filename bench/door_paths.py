"""The planning doors from an HTTP client's seat, beside another checkout's service in the same run (issue 54:
one planning entrance, REST plans in the plan cache, plan ids checked against their table's name): what the
doors cost before and after, on the bench table (bench/make_table.py, cached).

    .venv/bin/python bench/door_paths.py [--files 200000 --manifests 400] [--peer /tmp/old-checkout]

Each side, a fresh service (one configured table, bench.t), then, one after the other:
* `plan cold`, `plan warm`: POST /plan of the whole table (answered by id): the first, then the median of 5;
* `task fetch`: GET /plans/{id}/tasks/{i}, as an executor fetches its task: the median of 300, over tasks
  spread through the plan (each plan id opened, checked, its plan found kept);
* `rest cold`, `rest warm`: POST .../plan of the REST door (planFiles, pages of plan_task_page_size) and every
  page fetched, the first time and the median of 3 (answers taken whole, until the last page).
The client is httpx on loopback, one request at a time; the time is until each answer is read whole. Each side
runs --rounds times (3), alternating which goes first, and the medians are reported.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from common import BENCH, REPO, progress, write_json
from service import Service
from service_bench import BENCH_TABLE, bench_service, bench_table, peer_arguments

REST_TABLE = "/v1/namespaces/" + BENCH_TABLE.replace(".", "/tables/")


def _timed(send: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    answer = send()
    return (time.perf_counter() - started) * 1000, answer


def _rest_scan(client: httpx.Client) -> int:
    """A REST scan: the plan, then every page it lists; the number of tasks."""
    first = client.post(f"{REST_TABLE}/plan", json={})
    first.raise_for_status()
    body = first.json()
    while body["status"] == "submitted":
        time.sleep(0.05)
        body = client.get(f"{REST_TABLE}/plan/{body['plan-id']}").json()
    tasks = len(body["file-scan-tasks"])
    for token in body["plan-tasks"]:
        page = client.post(f"{REST_TABLE}/tasks", json={"plan-task": token})
        page.raise_for_status()
        tasks += len(page.json()["file-scan-tasks"])
    return tasks


def _measure(service: Service) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with httpx.Client(base_url=service.url, timeout=1800, headers={"Accept-Encoding": "identity"}) as client:
        plan = {"table": BENCH_TABLE, "inline-task-limit": 0}
        cold, answer = _timed(lambda: client.post("/plan", json=plan))
        answer.raise_for_status()
        plan_id, count = answer.json()["plan-id"], answer.json()["task-count"]
        out["plan cold"] = round(cold, 1)
        out["plan warm"] = round(
            statistics.median(_timed(lambda: client.post("/plan", json=plan))[0] for _ in range(5)), 1
        )
        fetches = []
        for i in range(300):
            ms, task = _timed(lambda i=i: client.get(f"/plans/{plan_id}/tasks/{(i * 7919) % count}"))
            task.raise_for_status()
            fetches.append(ms)
        out["task fetch"] = round(statistics.median(fetches), 2)
        cold, tasks = _timed(lambda: _rest_scan(client))
        out["rest cold"], out["rest tasks"] = round(cold, 1), tasks
        out["rest warm"] = round(statistics.median(_timed(lambda: _rest_scan(client))[0] for _ in range(3)), 1)
    out["peak rss MB"] = round(service.peak_rss_bytes() / 2**20)
    return out


def main() -> int:
    parser = peer_arguments(__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="fresh services a side; medians are reported")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "door-paths.json")
    args = parser.parse_args()
    location = bench_table(args)["metadata_location"]
    sides = {"ours": REPO} | ({"peer": args.peer.resolve()} if args.peer is not None else {})
    rounds: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for number in range(args.rounds):  # the sides alternate, each round in the other order (drift falls on both)
        for side in sides if number % 2 == 0 else reversed(sides):
            with bench_service(sides[side], location) as service:
                rounds[side].append(_measure(service))
            progress("door-paths", f"round {number + 1}/{args.rounds}: {side} ({sides[side]}): {rounds[side][-1]}")
    results = {side: {k: statistics.median(r[k] for r in runs) for k in runs[0]} for side, runs in rounds.items()}
    write_json(args.out, {"files": args.files, "manifests": args.manifests, "results": results, "rounds": rounds})
    print(f"{'door (ms)':<16}{'ours':>12}{'peer':>12}{'ours/peer':>12}")
    for name, value in results["ours"].items():
        peer = results.get("peer", {}).get(name)
        ratio = f"{value / peer:.2f}x" if isinstance(peer, (int, float)) and peer else ""
        print(f"{name:<16}{value:>12}{'' if peer is None else peer:>12}{ratio:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

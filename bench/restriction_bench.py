"""What read restrictions cost a plan, from an HTTP client's seat: plans of the bench table (bench/make_table.py,
written by Iceberg Java) with the same filter, asked by principals of one service that differ only in
their rule:

- open: a grant, no restriction;
- partition: a row filter on the identity partition (`category <> 'toys'`) and two masks (id, amount: the
  table's files are named by their partition values, so a partition column is not masked);
- stats: a row filter on a column only statistics decide (`amount >= 10`), and the same two masks.

Each plan selects about 1% of the files by a range of days (`ts`), shifted plan by plan so that no plan is
answered from the plan cache (the manifests stay warm, as on a busy service): what is measured is planning
and answering. The principals alternate in rounds of 20 so that drift in the machine hits them alike; each
figure is the median and 90th percentile of the client's wall time until it has the whole body, and the
files planned.

    .venv/bin/python bench/restriction_bench.py [--files 200000 --manifests 400] [--repeat 200] [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from common import progress, write_json
from make_table import FIRST_DAY
from service import Service, served
from service_bench import BENCH_TABLE, bench_table

REPO = Path(__file__).resolve().parent.parent
ROUND = 20
MASKS = {"id": "sha-256-global", "amount": "mask-to-default"}
PRINCIPALS: dict[str, dict[str, Any]] = {
    "open": {},
    "partition": {"row_filter": "category <> 'toys'", "column_masks": MASKS},
    "stats": {"row_filter": "amount >= 10", "column_masks": MASKS},
}
ENFORCING = {"X-Iceberg-Client-Capabilities": "read-restrictions"}


@contextlib.contextmanager
def _service(metadata_location: str) -> Iterator[Service]:
    rules = [
        {"principals": [name], "tables": [BENCH_TABLE], "privileges": ["plan"], **restriction}
        for name, restriction in PRINCIPALS.items()
    ]
    settings = {
        "tables": {BENCH_TABLE: metadata_location},
        "auth_tokens": {name: f"{name}-token-0123456789" for name in PRINCIPALS},
        "access_rules": rules,
    }
    with tempfile.TemporaryDirectory(prefix="restriction-bench-") as directory:
        config = Path(directory) / "service.json"
        config.write_text(json.dumps(settings))
        with served(["--config", str(config), "--log-level", "warning"], REPO, {"SCAN_PLANNER_HOME": directory}) as s:
            yield s


def _timed(client: httpx.Client, bodies: list[dict[str, Any]]) -> tuple[list[float], list[int]]:
    times, files = [], []
    for body in bodies:
        started = time.perf_counter()
        answer = client.post("/plan", json=body)
        answer.read()
        times.append((time.perf_counter() - started) * 1000)
        if answer.status_code != 200:
            raise RuntimeError(f"the plan was answered {answer.status_code}: {answer.text[:300]}")
        files.append(answer.json()["metrics"]["scanned-data-files"])
    return times, files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200_000, help="data files of the bench table (200000)")
    parser.add_argument("--manifests", type=int, default=400, help="its manifests (400)")
    parser.add_argument("--repeat", type=int, default=200, help="plans per principal (200)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--timeout", type=float, default=3600, help="building the table, at most (s)")
    args = parser.parse_args()
    table = bench_table(args)
    days = table["one_percent"]["day_range_manifests"]
    first = FIRST_DAY

    def body(k: int) -> dict[str, Any]:
        start = first + dt.timedelta(days=k % max(1, args.manifests - days))
        end = start + dt.timedelta(days=days)
        window = f"ts >= TIMESTAMP '{start} 00:00:00' AND ts < TIMESTAMP '{end} 00:00:00'"
        return {"table": BENCH_TABLE, "filter": window}

    load = os.getloadavg()[0]
    progress("restrictions", f"load average {load:.2f}; {args.repeat} plans per principal, rounds of {ROUND}")
    times: dict[str, list[float]] = {p: [] for p in PRINCIPALS}
    files: dict[str, list[int]] = {p: [] for p in PRINCIPALS}
    with _service(table["metadata_location"]) as service, contextlib.ExitStack() as stack:
        clients = {
            p: stack.enter_context(
                httpx.Client(
                    base_url=service.url,
                    headers={"Authorization": f"Bearer {p}-token-0123456789", **ENFORCING},
                    timeout=300,
                )
            )
            for p in PRINCIPALS
        }
        for client in clients.values():
            _timed(client, [body(-1 - i) for i in range(3)])  # warm: manifests decoded, statistics too
        done = 0
        while done < args.repeat:
            batch = [body(done + i) for i in range(min(ROUND, args.repeat - done))]
            for p, client in clients.items():
                t, f = _timed(client, batch)
                times[p] += t
                files[p] += f
            done += len(batch)
            progress("restrictions", f"{done}/{args.repeat}")
    base = statistics.median(times["open"])
    figures = {
        p: {
            "median_ms": round(statistics.median(t), 3),
            "p90_ms": round(statistics.quantiles(t, n=10)[-1], 3),
            "over_open": round(statistics.median(t) / base, 3),
            "median_files": statistics.median(files[p]),
        }
        for p, t in times.items()
    }
    report = {"files": args.files, "repeat": args.repeat, "load_average": load, "principals": figures}
    print(f"{'principal':<10} {'median ms':>10} {'p90 ms':>8} {'x open':>7} {'files':>7}")
    for p, f in figures.items():
        print(f"{p:<10} {f['median_ms']:>10.2f} {f['p90_ms']:>8.2f} {f['over_open']:>7.2f} {f['median_files']:>7}")
    if args.out:
        write_json(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The soak, long: a fresh service over the demo warehouse (demo.events), with caches far smaller than the
working set (every filter its own plan), under several clients sending a
mix of whole plans, plans by id and their tasks, and the explorer's plans, each with a filter of thousands
of values (tests/soak.py: the same driver as tests/service/test_soak.py's minute). Its RSS, open files,
threads, requests and p99 latency are sampled every --every seconds and printed as a table; flat after the
warm-up is the promise.

    .venv/bin/python bench/soak_bench.py [--minutes 30] [--every 60] [--clients 4] [--src DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from common import BENCH, REPO, progress, write_json
from service import served

sys.path.insert(0, str(REPO))
from tests.soak import soak  # (the driver the CI test runs)

MIB = 1024 * 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--src", type=Path, default=REPO, help="the checkout whose planner_service to serve")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "soak-latest.json")
    args = parser.parse_args()
    env = {"SCAN_PLANNER_CACHE_BYTES": str(2 * MIB), "SCAN_PLANNER_PLAN_CACHE_BYTES": str(MIB // 2)}
    with (
        tempfile.TemporaryDirectory(prefix="soak-home-") as home,
        served([], args.src, env | {"SCAN_PLANNER_HOME": home}) as service,
    ):
        progress("soak", f"{args.minutes:g} minutes, {args.clients} clients, a sample every {args.every:g} s")
        result = soak(service.url, service.pid, ["demo.events"], args.minutes * 60, args.every, args.clients)
    print(f"{'s':>6} {'RSS MB':>8} {'files':>6} {'threads':>8} {'req/s':>7} {'errors':>7} {'p99 ms':>8}")
    for s in result.samples:
        rate = s.requests / args.every
        print(
            f"{s.seconds:6.0f} {s.rss_bytes / MIB:8.1f} {s.open_files:6d} {s.threads:8d} {rate:7.1f} "
            f"{s.errors:7d} {s.p99_ms:8.1f}"
        )
    for failure in result.failures[:10]:
        print("failed:", failure)
    write_json(args.out, {"samples": [asdict(s) for s in result.samples], "failures": result.failures[:100]})
    return 1 if result.failures else 0


if __name__ == "__main__":
    sys.exit(main())

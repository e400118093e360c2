"""A memory limit under concurrent big plans: the service inside a real memory cgroup (needs root and a
cgroup v1 or v2 memory controller), --clients clients each asking at once for the whole inline plan of the
200,000-file bench table (each with its own split size: a plan each), twice: with the budgets the service
fits under the cgroup's limit at start (service/memory_limit.py), and with the defaults forced (the
budgets of an unlimited machine, given explicitly). For each: the answers (200, 503 with Retry-After, or
none: the process killed), the cgroup's peak usage and OOM kills. With --slow-readers, each client reads its
answer --read-kib at a time with a pause between reads (a slow client: the service holds what it has not sent).

    .venv/bin/python bench/memory_limit_bench.py [--limit-mib 1024] [--clients 4] [--slow-readers] [--src DIR]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from common import BENCH, REPO, progress, write_json
from service_bench import bench_service, bench_table

sys.path.insert(0, str(REPO))
from tests.processes import memory_cgroup  # (the tests' cgroup, made and removed alike)

MIB = 1024 * 1024
UNFITTED = {  # an unlimited machine's defaults, given explicitly (so not fitted)
    "SCAN_PLANNER_CACHE_BYTES": str(512 * MIB),
    "SCAN_PLANNER_PLAN_CACHE_BYTES": str(512 * MIB),
    "SCAN_PLANNER_PLAN_MEMORY_BYTES": str(1024 * MIB),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit-mib", type=int, default=1024)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--slow-readers", action="store_true", help="read each answer slowly")
    parser.add_argument("--read-kib", type=int, default=64, help="--slow-readers: KiB read at a time (default 64)")
    parser.add_argument("--pause", type=float, default=0.05, help="--slow-readers: seconds between reads")
    parser.add_argument("--uncompressed", action="store_true", help="ask for the answers as they are (curl's way)")
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--manifests", type=int, default=400)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds building the table may take")
    parser.add_argument("--src", type=Path, default=REPO)
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "memory-limit-latest.json")
    args = parser.parse_args()
    location = bench_table(args)["metadata_location"]
    results = {}
    for name, env in (("budgets fitted to the limit", {}), ("an unlimited machine's budgets", UNFITTED)):
        progress("memory-limit", f"{name}: {args.clients} concurrent inline plans under {args.limit_mib} MiB")
        results[name] = run(args, location, env)
        print(f"{name}: {results[name]}")
    write_json(args.out, results)
    return 0


def run(args: argparse.Namespace, location: str, env: dict[str, str]) -> dict[str, Any]:
    with memory_cgroup(args.limit_mib * MIB) as group:
        answers: Counter[str] = Counter()
        with bench_service(args.src, location, env | {"SCAN_PLANNER_SHUTDOWN_DRAIN_SECONDS": "0"}, group) as service:

            def plan(split_mib: int) -> None:
                body = {"table": "bench.t", "inline-task-limit": 10**9, "options": {"split-size": str(split_mib * MIB)}}
                try:
                    headers = {"Accept-Encoding": "identity"} if args.uncompressed else {}
                    with httpx.stream("POST", f"{service.url}/plan", json=body, headers=headers, timeout=600) as answer:
                        for _ in answer.iter_raw(args.read_kib * 1024 if args.slow_readers else None):
                            if args.slow_readers:
                                time.sleep(args.pause)
                    kind = str(answer.status_code) + (" + Retry-After" if "retry-after" in answer.headers else "")
                except httpx.HTTPError as exc:
                    kind = f"no answer ({type(exc).__name__})"
                answers[kind] += 1

            started = time.monotonic()
            clients = [threading.Thread(target=plan, args=(64 + 16 * i,)) for i in range(args.clients)]
            for client in clients:
                client.start()
            for client in clients:
                client.join()
            seconds = time.monotonic() - started
            alive = _answers(service.url)
        return {
            "answers": dict(answers),
            "seconds": round(seconds, 1),
            "service alive after": alive,
            "peak MiB": peak_bytes(group) // MIB,
            "oom kills": oom_kills(group),
        }


def _answers(url: str) -> bool:
    """Whether the service still answers its health check (a killed one refuses the connection)."""
    try:
        return httpx.get(f"{url}/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def peak_bytes(group: Path) -> int:
    for name in ("memory.max_usage_in_bytes", "memory.peak"):
        if (group / name).exists():
            return int((group / name).read_text())
    return 0


def oom_kills(group: Path) -> int:
    for name, key in (("memory.oom_control", "oom_kill"), ("memory.events", "oom_kill")):
        if (group / name).exists():
            for line in (group / name).read_text().splitlines():
                if line.startswith(key + " "):
                    return int(line.split()[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())

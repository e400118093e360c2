"""Bounded under load (issue 9's targets), from the clients' seat, on the 200,000-file bench table:

1. soak: 50 clients x 60 s of small plans (`id = X`: every manifest pruned by its stats, one file kept),
   each its own keep-alive client; requests/s, p50/p99, errors, and the service's RSS every second (flat:
   the median of the last 10 s against that of the first 10 s after the warm-up);
2. burst: 8 clients at once, each a different full plan of the table (split sizes differ, so none is
   shared or cached), inline with every file and task, on a fresh service: each answer's status (200, or
   503 with Retry-After), the service's peak RSS, and its RSS once they are done;
and throughout both, /health every 50 ms from another client (p50, p99, max).

    .venv/bin/python bench/sturdy_bench.py [--clients 50] [--seconds 60] [--burst 8] [--skip-soak | --skip-burst]
                                            [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from common import REPO, progress, write_json
from load import drive, percentile
from service import Service
from service_bench import BENCH_TABLE, bench_service, bench_table

MB = 1024 * 1024
INLINE = 10**9


HEALTH_PROBE = """
import json, sys, time, httpx
url, stop = sys.argv[1], sys.argv[2]
times, errors = [], 0
with httpx.Client(base_url=url, timeout=10) as client:
    while True:
        try:
            open(stop).close()
            break
        except OSError:
            pass
        began = time.perf_counter()
        try:
            ok = client.get("/health").status_code == 200
        except httpx.HTTPError:
            ok = False
        times.append((time.perf_counter() - began) * 1000)
        errors += 0 if ok else 1
        if len(times) == 1:
            print("ready", flush=True)  # the first check is in: the load may start
        time.sleep(0.05)
print(json.dumps({"health_ms": times, "health_errors": errors}))
"""


@contextlib.contextmanager
def probing(service: Service) -> Iterator[dict[str, Any]]:
    """/health every 50 ms from a process of its own (not this one, whose load clients take its GIL), and
    the service's RSS every second, while the body runs (which starts once the first check is in)."""
    out: dict[str, Any] = {"rss": []}
    stop = threading.Event()
    with tempfile.TemporaryDirectory(prefix="sturdy-") as directory:
        flag = Path(directory) / "stop"
        prober = subprocess.Popen([sys.executable, "-c", HEALTH_PROBE, service.url, str(flag)], stdout=subprocess.PIPE)
        assert prober.stdout is not None
        if prober.stdout.readline().strip() != b"ready":
            raise RuntimeError(f"the /health probe of {service.url} exited before its first check")

        def rss() -> None:
            while not stop.wait(1.0):
                out["rss"].append(service.rss_bytes())

        sampler = threading.Thread(target=rss, daemon=True)
        sampler.start()
        try:
            yield out
        finally:
            stop.set()
            sampler.join(15)
            flag.touch()
            stdout, _ = prober.communicate(timeout=60)
            out.update(json.loads(stdout))


def _health(probe: dict[str, Any]) -> dict[str, Any]:
    times = probe["health_ms"]
    return {
        "checks": len(times),
        "errors": probe["health_errors"],
        "p50_ms": percentile(times, 50),
        "p99_ms": percentile(times, 99),
        "max_ms": max(times),
    }


def soak(location: str, one: dict[str, Any], clients: int, seconds: float) -> dict[str, Any]:
    with bench_service(REPO, location) as service:
        httpx.post(f"{service.url}/plan", json=one, timeout=600).raise_for_status()  # warm: the table's index
        idle = service.rss_bytes()
        with probing(service) as probe:
            load = drive(f"{service.url}/plan", json.dumps(one).encode(), clients, seconds, timeout=120)
        rss = probe["rss"]
        first, last = statistics.median(rss[:10]), statistics.median(rss[-10:])
        return {
            **load,
            "health": _health(probe),
            "rss_warm_mb": idle / MB,
            "rss_first_10s_mb": first / MB,
            "rss_last_10s_mb": last / MB,
            "rss_max_mb": max(rss) / MB,
        }


def burst(location: str, plans: int) -> dict[str, Any]:
    with bench_service(REPO, location) as service:
        idle = service.rss_bytes()
        service.reset_peak_rss()

        def full(i: int) -> dict[str, Any]:
            body = {"table": BENCH_TABLE, "inline-task-limit": INLINE, "options": {"split-size": 128 * MB + i}}
            began = time.perf_counter()
            with httpx.Client(base_url=service.url, timeout=600) as client:
                response = client.post("/plan", json=body, headers={"Accept-Encoding": "zstd"})
                size = len(response.read())
            return {
                "status": response.status_code,
                "retry_after": response.headers.get("retry-after"),
                "ms": (time.perf_counter() - began) * 1000,
                "bytes": size,
            }

        with probing(service) as probe, ThreadPoolExecutor(plans) as pool:
            answers = list(pool.map(full, range(plans)))
        time.sleep(2)
        return {
            "answers": answers,
            "health": _health(probe),
            "idle_rss_mb": idle / MB,
            "peak_rss_mb": service.peak_rss_bytes() / MB,
            "rss_after_mb": service.rss_bytes() / MB,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--manifests", type=int, default=400)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--burst", type=int, default=8)
    parser.add_argument("--skip-soak", action="store_true")
    parser.add_argument("--skip-burst", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "sturdy.json")
    args = parser.parse_args(argv)
    table = bench_table(args)
    location = table["metadata_location"]
    one = {
        "table": BENCH_TABLE,
        "filter": {"type": "eq", "term": "id", "value": table["one_percent"]["id_range"]["min"]},
    }
    progress("bench", f"--- soak: {args.clients} clients x {args.seconds:.0f} s of selective plans")
    results: dict[str, Any] = {"table": table}
    if not args.skip_soak:
        results["soak"] = soak(location, one, args.clients, args.seconds)
        progress("soak", json.dumps({k: v for k, v in results["soak"].items() if k != "error_samples"}, default=str))
    if not args.skip_burst:
        progress("bench", f"--- burst: {args.burst} different full plans at once, inline")
        results["burst"] = burst(location, args.burst)
        progress("burst", json.dumps(results["burst"], default=str))
    write_json(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

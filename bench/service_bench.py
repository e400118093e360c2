"""Service throughput: warm POST /plan from 1, 4 and 16 concurrent clients against a real `scan-planner serve`.

    .venv/bin/python bench/service_bench.py [--scenarios demo,ids,full] [--clients 1,4,16] [--duration 10]
        [--full-clients 1,4] [--full-requests 2] [--src DIR] [--files 200000 --manifests 400]

Starts `scan-planner serve` (uvicorn, one worker, 127.0.0.1 on a free port; bench/service.py) and drives
it with bench/load.py: for each scenario, one warm-up request (its time is reported as the cold request;
it fills the manifest cache), then, per concurrency level, that many clients POSTing the same /plan body
for --duration seconds. Scenarios:

* demo   the demo table demo.events (tiny), on its own service: no catalog configured and
         SCAN_PLANNER_HOME=<a temporary directory>, so the service creates and serves the demo warehouse;
* ids    the bench table (bench/make_table.py) with the selective filter of bench/scenarios.py (1% of
         the files, by column bounds), on a service configured with `--config` `tables = {"bench.t" = ...}`;
* days   the bench table with the manifest-pruning filter (not run by default);
* full   the bench table unfiltered: its response is about 200 MB and takes seconds, so it runs at
         --full-clients (default 1,4: 16 of them would hold 16 such responses at once) and at most
         --full-requests requests per client.

Every request must answer 200 (errors are counted, and any error fails the run, exit 1), and each warm-up
response must plan as many data files as the scenario selects. Reported per level: requests/s (completed
requests over the wall time from the start until the last response), p50 and p99 latency (nearest rank),
errors, and the service's peak RSS during the level (VmHWM, reset before each level through
/proc/PID/clear_refs where allowed; otherwise the peak since start). The clients run in this process on
the same machine, so they take CPU from the service. Results go to --out as JSON and to stdout as a table.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
from common import BENCH, REPO, load_java_env, progress, read_marker, table_dir, write_json
from load import drive
from plan_bench import BenchError, ensure_table, environment, java_environment
from scenarios import NAMES, parse_names, scenarios
from service import Service, served

KNOWN = ("demo", *NAMES)
DEFAULT_SCENARIOS = "demo,ids,full"
BENCH_TABLE = "bench.t"
MB = 1024 * 1024


@dataclass(frozen=True)
class Target:
    """One scenario as the service sees it: the /plan body and how hard to drive it."""

    name: str
    title: str
    body: dict[str, Any]
    clients: tuple[int, ...]
    max_requests: int | None  # per client and level
    expected_files: int | None  # None: not known beforehand (the demo table)


def _levels(text: str) -> tuple[int, ...]:
    levels = tuple(int(n) for n in text.split(",") if n.strip())
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError(f"expected positive client counts such as 1,4,16, not {text!r}")
    return levels


def bench_targets(args: argparse.Namespace, table: dict[str, Any]) -> list[Target]:
    """The chosen scenarios on the bench table, in the order given."""
    out = []
    for name in (n for n in args.scenarios if n != "demo"):
        scenario = scenarios(table)[name]
        body: dict[str, Any] = {"table": BENCH_TABLE}
        if scenario.filter_json is not None:
            body["filter"] = scenario.filter_json
        full = scenario.filter_json is None
        clients, cap = (args.full_clients, args.full_requests) if full else (args.clients, None)
        out.append(Target(name, scenario.title, body, clients, cap, scenario.expected_files))
    return out


def warm_up(service: Service, target: Target, timeout: float) -> dict[str, Any]:
    """One request, checked: 200, and the data files the scenario selects. Returns its time and counts."""
    began = time.perf_counter()
    response = httpx.post(f"{service.url}/plan", json=target.body, timeout=timeout)
    elapsed_ms = (time.perf_counter() - began) * 1000
    if response.status_code != 200:
        raise BenchError(f"{target.name}: the warm-up /plan answered {response.status_code}: {response.text[:500]}")
    plan = orjson.loads(response.content)
    files = plan["metrics"]["scanned-data-files"]
    if target.expected_files is not None and files != target.expected_files:
        raise BenchError(f"{target.name}: the service planned {files:,} data files, expected {target.expected_files:,}")
    return {"ms": elapsed_ms, "bytes": len(response.content), "files": files, "tasks": len(plan["tasks"])}


def run_target(service: Service, target: Target, args: argparse.Namespace) -> dict[str, Any]:
    """Warm up, then every concurrency level for --duration seconds, reading the service's RSS around each."""
    cold = warm_up(service, target, args.timeout)
    progress(
        target.name,
        f"warm-up request {cold['ms']:,.0f} ms, {_size(cold['bytes'])}, "
        f"{cold['files']:,} files, {cold['tasks']:,} tasks",
    )
    levels = []
    body = orjson.dumps(target.body)
    for clients in target.clients:
        reset = service.reset_peak_rss()
        level = drive(f"{service.url}/plan", body, clients, args.duration, target.max_requests, args.timeout)
        level.update(
            {
                "service_peak_rss_bytes": service.peak_rss_bytes(),
                "peak_rss_since": "level start" if reset else "service start",
                "load_average": os.getloadavg(),
            }
        )
        levels.append(level)
        progress(
            target.name,
            f"{clients} clients: {level['requests']} requests, {level['requests_per_s']:.2f}/s, "
            f"p50 {level['p50_ms']:,.0f} ms, p99 {level['p99_ms']:,.0f} ms, {level['errors']} errors, "
            f"service RSS peak {level['service_peak_rss_bytes'] / MB:,.0f} MB, load {os.getloadavg()[0]:.2f}",
        )
    return {"title": target.title, "body": target.body, "warm_up": cold, "levels": levels}


@contextlib.contextmanager
def demo_service(src: Path) -> Iterator[Service]:
    """The service with no catalog configured, over a fresh demo warehouse in a temporary SCAN_PLANNER_HOME."""
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as home, served([], src, {"SCAN_PLANNER_HOME": home}) as s:
        yield s


@contextlib.contextmanager
def bench_service(
    src: Path, metadata_location: str, env: dict[str, str] | None = None, cgroup: Path | None = None
) -> Iterator[Service]:
    """The service with one configured table, bench.t, at the bench table's metadata location (`env`: more
    SCAN_PLANNER_* settings; `cgroup`: started inside it)."""
    with tempfile.TemporaryDirectory(prefix="bench-service-") as directory:
        config = Path(directory) / "service.toml"
        config.write_text(f"tables = {{{json.dumps(BENCH_TABLE)} = {json.dumps(metadata_location)}}}\n")
        with served(["--config", str(config)], src, env, cgroup=cgroup) as service:
            yield service


def peer_arguments(description: str | None) -> argparse.ArgumentParser:
    """The arguments of a benchmark of the bench table beside another checkout's service (--peer)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--manifests", type=int, default=400)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--peer", type=Path, help="another checkout to serve the same way (e.g. the commit before)")
    return parser


def bench_table(args: argparse.Namespace) -> dict[str, Any]:
    """The bench table's table.json; built first (with Iceberg Java) if it is not cached."""
    described = read_marker(table_dir(args.files, args.manifests))
    if described is not None:
        return described
    env = load_java_env().ensure_java_env()
    return ensure_table(args, {**env, "env": java_environment(env["java_home"])})


def run(args: argparse.Namespace, report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every chosen scenario, the demo on its own service first, then the bench table's on one service."""
    results: dict[str, dict[str, Any]] = {}
    if "demo" in args.scenarios:
        progress("service-bench", "=== demo: starting a service over a fresh demo warehouse")
        with demo_service(args.src) as service:
            demo = Target(
                "demo", "the demo table demo.events, no filter", {"table": "demo.events"}, args.clients, None, None
            )
            results["demo"] = run_target(service, demo, args)
    if set(args.scenarios) - {"demo"}:
        report["table"] = table = bench_table(args)
        targets, location = bench_targets(args, table), table["metadata_location"]
        progress("service-bench", f"=== bench table: starting a service over {location}")
        with bench_service(args.src, location) as service:
            for target in targets:
                progress("service-bench", f"--- {target.name}: {target.title}")
                results[target.name] = run_target(service, target, args)
    return results


def render(report: dict[str, Any]) -> str:
    """One row per scenario and concurrency level."""
    settings = report["settings"]
    lines = [
        f"Service throughput: POST /plan on one uvicorn worker, loopback, warm; {settings['duration_s']:g} s per level",
        "",
        f"{'scenario':8} {'clients':>7} {'requests':>8} {'req/s':>8} {'p50':>10} {'p99':>10} {'errors':>6} "
        f"{'response':>9} {'RSS peak':>9} {'cold request':>12}",
    ]
    for name, result in report["scenarios"].items():
        for level in result["levels"]:
            lines.append(
                f"{name:8} {level['clients']:>7} {level['requests']:>8} {level['requests_per_s']:>8.2f} "
                f"{level['p50_ms']:>7,.0f} ms {level['p99_ms']:>7,.0f} ms {level['errors']:>6} "
                f"{_size(level['mean_response_bytes']):>9} {level['service_peak_rss_bytes'] / MB:>6,.0f} MB "
                f"{result['warm_up']['ms']:>9,.0f} ms"
            )
    lines += ["", *(f"{name}: {result['title']}" for name, result in report["scenarios"].items())]
    return "\n".join(lines)


def _size(n: float) -> str:
    return f"{n / MB:,.1f} MB" if n >= MB else f"{n / 1024:,.1f} KB"


def versions() -> dict[str, str]:
    names = ("scan-planner", "fastapi", "uvicorn", "httpx", "polars")
    return {"python": sys.version.split()[0], **{n: importlib.metadata.version(n) for n in names}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", default=DEFAULT_SCENARIOS, help=f"of {','.join(KNOWN)} ({DEFAULT_SCENARIOS})")
    parser.add_argument("--clients", type=_levels, default=(1, 4, 16), help="concurrency levels (default 1,4,16)")
    parser.add_argument("--full-clients", type=_levels, default=(1, 4), help="levels for `full` (default 1,4)")
    parser.add_argument("--full-requests", type=int, default=2, help="per client in `full` (default 2)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per level (default 10)")
    parser.add_argument("--files", type=int, default=200_000, help="data files of the bench table (default 200000)")
    parser.add_argument("--manifests", type=int, default=400, help="data manifests of the bench table (default 400)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a request or a table build may take")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "service-latest.json", help="the JSON results")
    parser.add_argument("--src", type=Path, default=REPO, help="the planner_service to serve (default: this)")
    args = parser.parse_args()
    try:
        args.scenarios = parse_names(args.scenarios, KNOWN)
    except ValueError as err:
        parser.error(str(err))
    args.src = args.src.resolve()
    started = time.monotonic()
    report: dict[str, Any] = environment(args.src)
    try:
        results = run(args, report)
    except (BenchError, RuntimeError) as err:
        print(f"[service-bench] error: {err}", file=sys.stderr)
        return 1
    report["machine"]["load_average_at_end"] = os.getloadavg()
    errors = sum(level["errors"] for result in results.values() for level in result["levels"])
    report.update(
        {
            "settings": {
                "duration_s": args.duration,
                "clients": args.clients,
                "full_clients": args.full_clients,
                "full_requests_per_client": args.full_requests,
            },
            "versions": versions(),
            "scenarios": results,
            "errors": errors,
            "elapsed_s": time.monotonic() - started,
        }
    )
    write_json(args.out, report)
    print(render(report), flush=True)
    progress("service-bench", f"done in {report['elapsed_s']:.0f}s; results in {args.out}")
    if errors:
        samples = {e for result in results.values() for level in result["levels"] for e in level["error_samples"]}
        print(f"[service-bench] FAILED: {errors} requests failed, e.g. {sorted(samples)}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

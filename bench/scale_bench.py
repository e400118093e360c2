"""Planning at scale, from the user's seat: the service over HTTP and a Spark driver getting its partitions,
against Iceberg Java planning in the driver, in one run (issue 8's targets).

    .venv/bin/python bench/scale_bench.py [--files 200000 --manifests 400] [--repeat 3] [--src DIR]

On the bench table (bench/make_table.py; built once with Iceberg Java and cached), one after the other:
1. Iceberg Java 1.10.2 planTasks() (bench/java_plan.py, a bare JVM): the full plan of a freshly loaded table
   in a warm JVM with the default worker pool (the median of --repeat warm plans), and the selective plan
   (`id = X`: every manifest read, one file kept) without the pool (sequential), warm.
2. The service (`scan-planner serve`, fresh): the first full plan (cold caches) until the whole body is
   received, inline (every file and task; `Accept-Encoding: zstd`), then warm; the default answer for the
   full plan (its plan id: over the inline task limit), warm and, from other fresh services, cold; the
   selective plan, cold and warm. Cold figures are the median of --cold-runs fresh services.
3. Spark drivers (bench/driver_partitions.py): `spark.read.format("iceberg").load(t).rdd.getNumPartitions()`
   on pyspark 3.5 + the Iceberg runtime, planning in the driver and, as a second peer, with Iceberg's
   distributed planning (`spark.sql.iceberg.data-planning-mode=distributed`), against
   `plan_and_read(spark, t).rdd.getNumPartitions()` on the project's pyspark 4 with a fresh service: first,
   warm, selective, and each driver's peak RSS (its Python process and JVM); --cold-runs fresh sessions of
   each, taken in turn, and the medians of their figures.
4. Memory: a fresh service's RSS after the full plan answered by id (the snapshot's index cached and the
   plan kept: bytes per file over its idle RSS), then its peak over 2 full (inline) + 3 selective plans,
   against PyIceberg 0.12's peak for plan_files() of the full table (bench/py_plan.py); and a fresh service
   with 64 MiB caches (cache_bytes, plan_cache_bytes): how much 3 selective plans grow it.
A step that fails (a JVM out of memory at --heap, a timeout) is reported as failed, not fatal: at 20,000,000
files the peers may not plan the table at all.
Prints the times side by side with the ratios and the issue's targets; writes --out as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from common import BENCH, REPO, load_java_env, progress, write_json
from plan_bench import BenchError, ensure_table, environment, java_environment, run_json
from scenarios import scenarios
from service import Service
from service_bench import BENCH_TABLE, bench_service

INLINE = 10**9  # an inline-task-limit no plan reaches: every file and task in the body
MB = 1024 * 1024


def fetch_ms(client: httpx.Client, body: dict[str, Any], coding: str = "zstd") -> tuple[float, dict[str, Any]]:
    """POST /plan until the whole body is received and decoded (httpx decodes zstd and gzip)."""
    started = time.perf_counter()
    response = client.post("/plan", json=body, headers={"Accept-Encoding": coding})
    raw = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        raise BenchError(f"/plan answered {response.status_code}: {response.text[:500]}")
    return elapsed, {"bytes": len(raw), "wire_bytes": response.num_bytes_downloaded}


def full_body(args: argparse.Namespace) -> dict[str, Any]:
    """The full plan's request: every file and task inline, or (--no-inline) the default answer by id."""
    return {"table": BENCH_TABLE} if args.no_inline else {"table": BENCH_TABLE, "inline-task-limit": INLINE}


def service_times(service: Service, one: dict[str, Any], repeat: int, full: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with httpx.Client(base_url=service.url, timeout=600) as client:
        out["full_cold_ms"], size = fetch_ms(client, full)
        out["full_body_bytes"], out["full_wire_bytes"] = size["bytes"], size["wire_bytes"]
        out["full_warm_ms"] = statistics.median(fetch_ms(client, full)[0] for _ in range(repeat))
        out["full_warm_identity_ms"] = fetch_ms(client, full, "identity")[0]
        started = time.perf_counter()
        default = client.post("/plan", json={"table": BENCH_TABLE}).json()
        out["full_by_id_ms"] = (time.perf_counter() - started) * 1000
        out["full_by_id_tasks"] = default["task-count"]
        out["one_cold_ms"], _ = fetch_ms(client, one)
        out["one_warm_ms"] = statistics.median(fetch_ms(client, one)[0] for _ in range(repeat))
    progress("service", json.dumps({k: round(v) if isinstance(v, float) else v for k, v in out.items()}))
    return out


SMALL_CACHES = {"SCAN_PLANNER_CACHE_BYTES": str(64 * MB), "SCAN_PLANNER_PLAN_CACHE_BYTES": str(64 * MB)}
SETTLE_SECONDS = 12  # a spilled plan written, the allocators' freed pages returned (polars' jemalloc: 10 s)


def service_memory(args: argparse.Namespace, location: str, one: dict[str, Any], files: int) -> dict[str, Any]:
    """A fresh service's RSS held after the full plan by id (index and plan kept), then its peak over 2 full
    (inline) + 3 selective plans; a fresh service with 64 MiB caches: its growth over 3 selective plans."""
    out: dict[str, Any] = {}
    with bench_service(args.src, location) as service, httpx.Client(base_url=service.url, timeout=3600) as client:
        idle = out["idle_rss_bytes"] = service.rss_bytes()
        fetch_ms(client, {"table": BENCH_TABLE})
        time.sleep(SETTLE_SECONDS)
        out["rss_after_full_by_id_bytes"] = held = service.rss_bytes()
        out["bytes_per_file"] = (held - idle) / files
        for body in [full_body(args)] * 2 + [one] * 3:
            fetch_ms(client, body)
        out["peak_rss_bytes"], out["rss_after_bytes"] = service.peak_rss_bytes(), service.rss_bytes()
    env = SMALL_CACHES
    with bench_service(args.src, location, env) as service, httpx.Client(base_url=service.url, timeout=3600) as c:
        idle = service.rss_bytes()
        service.reset_peak_rss()
        times = [fetch_ms(c, one)[0] for _ in range(3)]
        out["small_caches"] = {
            "idle_rss_bytes": idle,
            "peak_rss_bytes": service.peak_rss_bytes(),
            "growth_bytes": service.peak_rss_bytes() - idle,
            "selective_ms": times,
        }
    progress("memory", json.dumps({k: v for k, v in out.items()}, default=str))
    return out


def attempt(name: str, cmd: list[str], env: dict[str, str], timeout: float) -> dict[str, Any]:
    """run_json, or {"failed": why} when the step fails (out of memory at its heap, out of time)."""
    try:
        return run_json(name, cmd, env, timeout)
    except BenchError as err:
        progress("bench", f"{name}: {err}")
        return {"failed": str(err)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    java_env = load_java_env()
    env = java_env.ensure_java_env()
    java = {**env, "env": java_environment(env["java_home"])}
    table = ensure_table(args, java)
    location = table["metadata_location"]
    one_id = table["one_percent"]["id_range"]["min"]  # ids are disjoint per file: exactly one file holds it
    one_filter = {"type": "eq", "term": "id", "value": one_id}
    one = {"table": BENCH_TABLE, "filter": one_filter}
    full_files = scenarios(table)["full"].expected_files
    results: dict[str, Any] = {"table": table, "one_id": one_id, "heap": args.heap, "no_inline": args.no_inline}

    java_plan = [
        java["python"],
        str(BENCH / "java_plan.py"),
        "--metadata-location",
        location,
        "--heap",
        args.heap,
        "--repeat",
        str(args.repeat),
        "--jars",
        ",".join(java["jars"]),
    ]
    progress("bench", "--- Iceberg Java planTasks(): full (worker pool), one file (sequential)")
    results["java_full"] = attempt("java full", java_plan, java["env"], args.timeout)
    if "failed" in results["java_full"]:  # (at 20,000,000 files its warm plan runs out of the heap: the cold alone)
        progress("bench", "--- Iceberg Java planTasks(), full: its cold plan alone")
        cold_only = [*java_plan[:-4], "--repeat", "0", *java_plan[-2:]]
        results["java_full"] = {
            **attempt("java full, cold only", cold_only, java["env"], args.timeout),
            "warm_failed": results["java_full"]["failed"],
        }
    results["java_one"] = attempt(
        "java one", [*java_plan, "--no-worker-pool", "--filter-json", json.dumps(one_filter)], java["env"], args.timeout
    )
    progress("bench", "--- the service over HTTP")
    with bench_service(args.src, location) as service:
        results["service"] = service_times(service, one, args.repeat, full_body(args))
    colds = [results["service"]["full_cold_ms"]]
    by_id = []
    for run_number in range(args.cold_runs):
        # what a client gets by default: a plan over the inline task limit answers with its id and estimates
        with bench_service(args.src, location) as service, httpx.Client(base_url=service.url, timeout=600) as client:
            cold_ms, size = fetch_ms(client, {"table": BENCH_TABLE})
            by_id.append(cold_ms)
            results["service"]["full_by_id_bytes"] = size["bytes"]
        if run_number:  # the first inline cold came with the warm figures above
            with bench_service(args.src, location) as service, httpx.Client(base_url=service.url, timeout=600) as c:
                colds.append(fetch_ms(c, full_body(args))[0])
    results["service"] |= {
        "full_cold_runs_ms": colds,
        "full_cold_ms": statistics.median(colds),
        "full_by_id_cold_runs_ms": by_id,
        "full_by_id_cold_ms": statistics.median(by_id),
    }
    progress("service", f"fresh services: full inline cold {colds} ms, default answer (by id) cold {by_id} ms")
    table_location = str(Path(location).parent.parent)
    iceberg_driver = [
        java["python"],
        str(BENCH / "driver_partitions.py"),
        "iceberg",
        "--table-location",
        table_location,
        "--one-id",
        str(one_id),
        "--repeat",
        str(args.repeat),
        "--jars",
        ",".join(java["jars"]),
        "--heap",
        args.heap,
    ]
    ours_env = {**java["env"], "PYTHONPATH": f"{args.src}:{BENCH}", "JAVA_HOME": env["java_home"]}
    spark_iceberg: list[dict[str, Any]] = []
    spark_distributed: list[dict[str, Any]] = []
    spark_ours: list[dict[str, Any]] = []
    for run_number in range(args.cold_runs):
        progress("bench", f"--- Spark + Iceberg Java in the driver (pyspark 3.5), session {run_number + 1}")
        spark_iceberg.append(attempt("spark + iceberg", iceberg_driver, java["env"], args.timeout))
        if not args.no_distributed:
            progress("bench", f"--- Spark + Iceberg, distributed planning, session {run_number + 1}")
            distributed = [*iceberg_driver, "--planning-mode", "distributed"]
            spark_distributed.append(attempt("spark + iceberg distributed", distributed, java["env"], args.timeout))
        progress("bench", f"--- plan_and_read in the driver (pyspark 4), a fresh service, session {run_number + 1}")
        with bench_service(args.src, location) as service:
            ours_driver = [
                sys.executable,
                str(BENCH / "driver_partitions.py"),
                "ours",
                "--service-url",
                service.url,
                "--one-id",
                str(one_id),
                "--repeat",
                str(args.repeat),
                "--heap",
                args.heap,
            ]
            spark_ours.append(run_json("spark + ours", ours_driver, ours_env, args.timeout))
    results["spark_iceberg"], results["spark_ours"] = _medians(spark_iceberg), _medians(spark_ours)
    if spark_distributed:
        results["spark_iceberg_distributed"] = _medians(spark_distributed)
    progress("bench", "--- memory: the service held after a full plan, over 2 full + 3 selective; small caches")
    results["service_memory"] = service_memory(args, location, one, full_files)
    if args.no_pyiceberg:
        return results
    results["pyiceberg"] = run_json(
        "pyiceberg",
        [sys.executable, str(BENCH / "py_plan.py"), "pyiceberg", "--metadata-location", location, "--repeat", "1"],
        {**java["env"], "PYTHONPATH": str(args.src)},
        args.timeout,
    )
    if results["pyiceberg"]["files"] != full_files:
        raise BenchError(f"PyIceberg planned {results['pyiceberg']['files']} files, the table has {full_files}")
    return results


def _medians(sessions: list[dict[str, Any]]) -> dict[str, Any]:
    """The first session's figures, with first / warm times the medians over every session (each run's
    figures kept under "sessions"); {"failed": why} when every session failed."""
    done = [s for s in sessions if "failed" not in s]
    if not done:
        return {"failed": sessions[0]["failed"], "sessions": sessions}
    sessions = done
    out: dict[str, Any] = {**sessions[0], "sessions": sessions}
    out["driver_peak_rss_bytes"] = statistics.median(s.get("driver_peak_rss_bytes", 0) for s in sessions)
    for scan in ("full", "one"):
        out[scan] = {
            **sessions[0][scan],
            "first_ms": statistics.median(s[scan]["first_ms"] for s in sessions),
            "warm_median_ms": statistics.median(s[scan]["warm_median_ms"] for s in sessions),
        }
    return out


NAN = float("nan")


def _get(r: dict[str, Any], *path: str) -> float:
    """A figure by its path, NaN where the step failed (a peer that could not plan the table)."""
    value: Any = r
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return NAN
        value = value[key]
    return NAN if value is None else float(value)


def java_full_ms(r: dict[str, Any]) -> float:
    """Java's full plan: its warm median, or its cold plan where the warm one failed (out of its heap)."""
    warm = _get(r, "java_full", "warm", "median_ms")
    return warm if warm == warm else _get(r, "java_full", "cold", "plan_ms")


def report(r: dict[str, Any]) -> list[str]:
    java_full, java_one = java_full_ms(r), _get(r, "java_one", "warm", "median_ms")
    svc, mem = r["service"], r["service_memory"]
    pyiceberg_peak = _get(r, "pyiceberg", "peak_rss_bytes") / MB
    java_fresh, java_seq, spark, dist = (
        "Java planTasks, fresh table, warm JVM",
        "Java planTasks, sequential",
        "Spark + Iceberg",
        "Spark + Iceberg, distributed planning",
    )
    rows = [
        ("service, cold full plan, whole body (zstd)", java_full, svc["full_cold_ms"], 0.5, java_fresh),
        ("service, warm full plan, whole body (zstd)", java_full, svc["full_warm_ms"], None, java_fresh),
        (
            "service, cold full plan, default answer (by id)",
            java_full,
            svc.get("full_by_id_cold_ms", NAN),
            0.2,
            java_fresh,
        ),
        ("service, warm selective plan (1 file)", java_one, svc["one_warm_ms"], 0.05, java_seq),
    ]
    for peer, who in (("spark_iceberg", spark), ("spark_iceberg_distributed", dist)):
        if peer not in r:
            continue
        rows += [
            (
                "Spark driver to partitions, first",
                _get(r, peer, "full", "first_ms"),
                _get(r, "spark_ours", "full", "first_ms"),
                0.5,
                who,
            ),
            (
                "Spark driver to partitions, warm",
                _get(r, peer, "full", "warm_median_ms"),
                _get(r, "spark_ours", "full", "warm_median_ms"),
                0.25,
                who,
            ),
            (
                "Spark driver to partitions, selective",
                _get(r, peer, "one", "warm_median_ms"),
                _get(r, "spark_ours", "one", "warm_median_ms"),
                0.1,
                who,
            ),
            (
                "Spark driver peak RSS (MB)",
                _get(r, peer, "driver_peak_rss_bytes") / MB,
                _get(r, "spark_ours", "driver_peak_rss_bytes") / MB,
                None,
                who,
            ),
        ]
    rows.append(
        (
            "service peak RSS, 2 full + 3 selective (MB)",
            pyiceberg_peak,
            mem["peak_rss_bytes"] / MB,
            0.5,
            "PyIceberg plan_files() peak",
        )
    )
    lines = [f"{'':46} {'peer':>10} {'ours':>10} {'ours/peer':>10} {'target':>8}  peer"]
    for name, peer_value, ours, target, who in rows:
        ratio = ours / peer_value if peer_value else NAN
        verdict = "" if target is None or ratio != ratio else ("  met" if ratio <= target else "  MISSED")
        tgt = "" if target is None else f"<= {target}"
        failed = "  (peer failed)" if peer_value != peer_value else ""
        lines.append(f"{name:46} {peer_value:>10,.0f} {ours:>10,.0f} {ratio:>9.2f}x {tgt:>8}  {who}{verdict}{failed}")
    small = mem["small_caches"]
    lines.append(
        f"service memory: {mem['bytes_per_file']:,.0f} bytes per file held after the full plan by id (index and "
        f"plan; target <= 300); 3 selective plans with 64 MiB caches grow it {small['growth_bytes'] / MB:,.0f} MB "
        f"(target <= 256), {statistics.median(small['selective_ms']):,.0f} ms each"
    )
    if r.get("no_inline"):
        lines.append("(--no-inline: the 'whole body' rows are the full plan answered by id, not inline)")
    lines.append(
        f"full plan: {svc['full_body_bytes'] / MB:.1f} MB of JSON inline ({svc['full_wire_bytes'] / MB:.1f} MB "
        f"zstd); by default (plan id, {svc['full_by_id_tasks']:,} tasks over the inline limit) "
        f"{svc['full_by_id_ms']:,.0f} ms; warm inline, no compression {svc['full_warm_identity_ms']:,.0f} ms; "
        f"selective cold {svc['one_cold_ms']:,.0f} ms"
    )
    failed = [
        name
        for name in ("java_full", "java_one", "spark_iceberg", "spark_iceberg_distributed")
        if "failed" in r.get(name, {})
    ]
    lines.append(
        f"service RSS: idle {mem['idle_rss_bytes'] / MB:.0f} MB, after {mem['rss_after_bytes'] / MB:.0f} MB; "
        f"Spark + ours {r['spark_ours']['spark']}, partitions {r['spark_ours']['full']['partitions']:,}"
        + (f"; failed at heap {r.get('heap', '?')}: {', '.join(failed)}" if failed else "")
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--manifests", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3, help="warm repeats of each measurement (default 3)")
    parser.add_argument(
        "--cold-runs",
        type=int,
        default=3,
        help="fresh services and Spark sessions whose cold figures' median is taken (default 3)",
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds each step may take")
    parser.add_argument("--src", type=Path, default=REPO, help="the checkout whose planner_service to serve")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "scale-latest.json")
    parser.add_argument("--heap", default="8g", help="the Java planner's and the Spark drivers' heap (default 8g)")
    parser.add_argument("--no-pyiceberg", action="store_true", help="skip PyIceberg (minutes on 2,000,000 files)")
    parser.add_argument(
        "--no-inline",
        action="store_true",
        help="the full plan by id, not inline (20,000,000 files inline are gigabytes of JSON)",
    )
    parser.add_argument("--no-distributed", action="store_true", help="skip Spark + Iceberg's distributed planning")
    args = parser.parse_args()
    started = time.monotonic()
    try:
        results = run(args)
    except (BenchError, subprocess.SubprocessError) as err:
        print(f"[bench] failed: {err}", file=sys.stderr)
        return 1
    write_json(args.out, {"environment": environment(args.src), "results": results})
    lines = report(results)
    print("\n".join(lines))
    write_json(args.out, {"environment": environment(args.src), "results": results, "report": lines})
    progress("bench", f"done in {time.monotonic() - started:.0f}s; results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

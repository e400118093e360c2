"""Spark + Iceberg's own REST catalog client planning through the service, against the same Spark + Iceberg
planning in its driver, from the user's seat (issue 32).

    .venv/bin/python bench/rest_client_bench.py [--files 200000 --manifests 400] [--shape uniform|mixed]
        [--iceberg 1.12.0] [--cold-runs 2] [--worker-threads N]

On the metadata-only bench table (bench/make_table.py; built once with Iceberg Java and cached), served by
a fresh `scan-planner serve` as `bench.t`, each Spark driver (pyspark 3.5 with iceberg-spark-runtime 1.12.0,
bench/driver_partitions.py `rest`) configures the catalog `sp` (type rest, the service's uri) and times
`spark.table("sp.bench.t").rdd.getNumPartitions()` in a fresh local[2] session:
* `server`: the scans planned by the service (`scan-planning-mode=server`, what the service advertises);
* `client`: the same client, catalog and table, planned by Iceberg in the driver (`scan-planning-mode=client`).
Both get the table's metadata from the same service, and Spark's partitions from Iceberg's own task packing.
Per session: the first full read (cold: a fresh service and a fresh JVM), the median of --repeat warm reads,
the selective read `id = X` (one data file; first and warm), each with the driver's CPU seconds (Python and
JVM) and wall time, the driver's peak RSS, and the service's CPU seconds and peak RSS over the session.
--cold-runs fresh sessions of each, taken in turn; the report gives their medians and the ratios server /
client (< 1: the service is faster). Writes --out as JSON; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from common import BENCH, REPO, SHAPES, load_java_env, progress, write_json
from plan_bench import BenchError, ensure_table, java_environment, run_json
from service_bench import bench_service

MB = 1024 * 1024


def service_cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def session(args: argparse.Namespace, java: dict[str, Any], location: str, one_id: int, mode: str) -> dict[str, Any]:
    """One fresh service and one fresh Spark session of the `mode` (server or client planning)."""
    with bench_service(args.src, location) as service:
        cpu = service_cpu_seconds(service.pid)
        cmd = [java["python"], str(BENCH / "driver_partitions.py"), "rest", "--service-url", service.url]
        cmd += ["--rest-mode", mode, "--one-id", str(one_id), "--repeat", str(args.repeat), "--heap", args.heap]
        if args.worker_threads:
            cmd += ["--worker-threads", str(args.worker_threads)]
        result = run_json(f"rest {mode}", [*cmd, "--jars", ",".join(java["jars"])], java["env"], args.timeout)
        result["service_cpu_s"] = service_cpu_seconds(service.pid) - cpu
        result["service_peak_rss_bytes"] = service.peak_rss_bytes()
    return result


def _median(sessions: list[dict[str, Any]], *path: str) -> float:
    values = []
    for s in sessions:
        value: Any = s
        for key in path:
            value = value[key]
        values.append(float(value))
    return statistics.median(values)


FIGURES = (
    ("until partitions, cold (ms)", ("full", "first_ms")),
    ("  driver CPU, cold (s)", ("full", "first_cpu_s")),
    ("until partitions, warm (ms)", ("full", "warm_median_ms")),
    ("  driver CPU, warm (s)", ("full", "warm_median_cpu_s")),
    ("one file, cold (ms)", ("one", "first_ms")),
    ("one file, warm (ms)", ("one", "warm_median_ms")),
    ("driver peak RSS (MB)", ("driver_peak_rss_bytes",)),
    ("service CPU, whole session (s)", ("service_cpu_s",)),
    ("service peak RSS (MB)", ("service_peak_rss_bytes",)),
)


def report(results: dict[str, Any]) -> list[str]:
    server, client = results["server"], results["client"]
    lines = [
        f"{results['files']:,} files in {results['manifests']:,} manifests ({results['shape']}); Iceberg "
        f"{results['iceberg']} on Spark {server[0]['spark']}, worker threads {results['worker_threads'] or 'cores'}; "
        f"medians of {len(server)} fresh sessions each",
        f"{'':34} {'service plans':>14} {'driver plans':>14} {'ratio':>7}",
    ]
    for label, path in FIGURES:
        ours, theirs = _median(server, *path), _median(client, *path)
        scale = MB if label.endswith("(MB)") else 1
        ratio = f"{ours / theirs:.2f}x" if theirs else "-"
        lines.append(f"{label:34} {ours / scale:14,.2f} {theirs / scale:14,.2f} {ratio:>7}")
    partitions = {s["full"]["partitions"] for s in server + client}
    lines.append(f"partitions: {sorted(partitions)} (both plan the same files; Iceberg packs them)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--manifests", type=int, default=400)
    parser.add_argument("--shape", choices=SHAPES, default="uniform", help="the bench table's shape (make_table.py)")
    parser.add_argument("--worker-threads", type=int, help="the client's iceberg.worker.num-threads (default: cores)")
    parser.add_argument("--iceberg", default="1.12.0", help="the Iceberg release (1.11 or later)")
    parser.add_argument("--repeat", type=int, default=3, help="warm repeats in each session (default 3)")
    parser.add_argument("--cold-runs", type=int, default=2, help="fresh sessions of each (default 2)")
    parser.add_argument("--heap", default="8g", help="the Spark driver's heap (default 8g)")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--src", type=Path, default=REPO, help="the checkout whose planner_service to serve")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "rest-client-latest.json")
    args = parser.parse_args()
    java_env = load_java_env()
    try:
        reference = java_env.ensure_java_env()  # make_table.py runs with the reference (1.10.2)
        table = ensure_table(args, {**reference, "env": java_environment(reference["java_home"])})
        env = java_env.ensure_spark_env("3.5", args.iceberg)
        java = {**env, "env": java_environment(env["java_home"])}
        one_id = table["one_percent"]["id_range"]["min"]  # ids are disjoint per file: one file holds it
        results: dict[str, Any] = {"files": args.files, "manifests": args.manifests, "iceberg": args.iceberg}
        results |= {"shape": args.shape, "worker_threads": args.worker_threads}
        results |= {"server": [], "client": []}
        for run in range(args.cold_runs):
            for mode in ("server", "client"):
                progress("bench", f"--- {mode} planning, session {run + 1} of {args.cold_runs}")
                results[mode].append(session(args, java, table["metadata_location"], one_id, mode))
    except BenchError as err:
        print(f"[bench] error: {err}", file=sys.stderr)
        return 1
    write_json(args.out, results)
    print("\n".join(report(results)))
    print(json.dumps({"out": str(args.out)}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

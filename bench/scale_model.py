"""Planning past one machine, by simulation from measured costs (docs/scale.md).

    .venv/bin/python bench/scale_model.py [--files 2000000 --manifests 4000] [--out bench/results/scale-model.json]

Measures, on the bench table and one thread of this machine, what planning costs per manifest entry and per
planned file: a cold full plan (read, inflate, decode without statistics, index; split and pack), a cold
selective plan (the same with statistics decoded and every file pruned by its bounds), the bytes a planned
file's index row holds, and the bytes of what a planned file must send to the place that bin-packs it
(size, split offsets, record count, delete bytes). From those it models two designs for tables of 20,000,000
and 200,000,000 files on 16 to 512 cores:

* one machine: the service as it is, its cores decoding manifests in parallel (at most the machine's);
* Spark: manifest groups (64 manifests a task) decoded and pruned on executors, as Iceberg's distributed
  planning does (SparkDistributedDataScan), the kept files' packing columns collected to the driver, which
  splits and bin-packs them in Java's order (sequential by definition, and cheap), the kept files' full
  rows left on the executors' side (an Arrow IPC result per task) for the task fetches.

The constants the model does not measure are stated where they are used (Spark's per-task scheduling cost
and launch latency, the network's bandwidth); docs/scale.md discusses them. Prints the table; writes JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from common import BENCH, REPO, progress, write_json
from service_bench import bench_table

sys.path.insert(0, str(REPO))

TASK_MANIFESTS = 64  # manifests per Spark task (the service's own decode chunk)
SCHEDULING_S = 0.004  # the driver's cost to schedule and collect one task (Spark's DAG scheduler, ~2-5 ms)
LAUNCH_S = 0.050  # a task's launch and result latency on an executor (deserialization, JVM<->Python)
NETWORK_BYTES_S = 1.0e9  # driver's NIC, bytes per second (10 GbE, about 1 GB/s usable)
JOB_S = 0.5  # a Spark job's fixed start (stage submission, executors already up: Spark Connect session)
MACHINE_CORES = 64  # the biggest single machine the one-machine design may use
FILES = (20_000_000, 200_000_000)
CORES = (16, 64, 128, 512)


def measure(args: argparse.Namespace) -> dict[str, float]:
    """Per-entry and per-file costs on one thread, from a fresh planner per plan (cold)."""
    from planner_service.catalog.base import LoadedTable, load_by_metadata_location
    from planner_service.expressions.expression_json import expression_from_json
    from planner_service.io.fileio import FileIO
    from planner_service.planning.planner import ScanPlanner
    from planner_service.planning.scan_request import ScanRequest

    table = bench_table(args)
    io = FileIO()
    loaded = load_by_metadata_location(io, table["metadata_location"])
    target = LoadedTable(("bench", "t"), loaded.metadata_location, loaded.metadata)
    one = expression_from_json({"type": "eq", "term": "id", "value": table["one_percent"]["id_range"]["min"]})
    out: dict[str, float] = {}
    for name, request in (("full", ScanRequest()), ("selective", ScanRequest(row_filter=one))):
        planner = ScanPlanner(io, cache_bytes=1 << 34, threads=1)
        started = time.perf_counter()
        plan = planner.plan(target, request)
        elapsed = time.perf_counter() - started
        stages = plan.metrics.stage_ms
        files = table["data_files"]
        out[f"{name}_s"] = elapsed
        out[f"{name}_decode_s_per_entry"] = stages["data_files"] / 1000 / files
        out[f"{name}_pack_s_per_file"] = stages.get("split_and_pack", 0.0) / 1000 / max(1, len(plan.files or ()))
        if name == "full":
            assert plan.files is not None
            out["index_bytes_per_file"] = plan.files.index.nbytes / files
        planner.close()
        progress("model", f"{name}: {elapsed:.2f} s on one thread; stages {stages}")
    out["pack_columns_bytes_per_file"] = 8 * 4 + 8 * 2.5  # size, rows, delete bytes and count; ~2.5 offsets
    return out


def one_machine(files: int, cores: int, c: dict[str, float], selective: bool) -> dict[str, float]:
    used = min(cores, MACHINE_CORES)
    decode = c["selective_decode_s_per_entry" if selective else "full_decode_s_per_entry"]
    kept = 1 if selective else files
    seconds = files * decode / used + kept * c["full_pack_s_per_file"]
    # a full plan holds every file's index row; a selective one streams its manifests (manifest_reader.py: 24 MiB
    # groups, about twice that decoded) beside a 64 MiB cache
    memory = kept * c["index_bytes_per_file"] if not selective else 128 * 2**20
    return {"seconds": seconds, "driver_bytes": memory, "cores_used": used}


def spark(files: int, manifests: int, cores: int, c: dict[str, float], selective: bool) -> dict[str, float]:
    decode = c["selective_decode_s_per_entry" if selective else "full_decode_s_per_entry"]
    tasks = math.ceil(manifests / TASK_MANIFESTS)
    per_task = files / tasks * decode + LAUNCH_S
    waves = math.ceil(tasks / cores)
    kept = 1 if selective else files
    collect_bytes = kept * c["pack_columns_bytes_per_file"]
    seconds = (
        JOB_S
        + waves * per_task
        + tasks * SCHEDULING_S  # the scheduler's work is serial
        + collect_bytes / NETWORK_BYTES_S
        + kept * c["full_pack_s_per_file"]
    )
    executor_bytes = files / tasks * c["index_bytes_per_file"] * 2  # a task's decoded group and its result
    return {
        "seconds": seconds,
        "driver_bytes": collect_bytes + kept * 25,
        "executor_task_bytes": executor_bytes,
        "tasks": tasks,
        "waves": waves,
    }


def simulate(c: dict[str, float], per_manifest: int) -> list[dict[str, Any]]:
    rows = []
    for files in FILES:
        manifests = files // per_manifest
        for cores in CORES:
            for selective in (False, True):
                rows.append(
                    {
                        "files": files,
                        "cores": cores,
                        "scan": "selective" if selective else "full",
                        "one_machine": one_machine(files, cores, c, selective),
                        "spark": spark(files, manifests, cores, c, selective),
                    }
                )
    return rows


def report(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"{'files':>12} {'cores':>6} {'scan':>10} {'one machine s':>14} {'its GB':>8} "
        f"{'Spark s':>9} {'driver GB':>10} {'tasks':>7}"
    ]
    for r in rows:
        m, s = r["one_machine"], r["spark"]
        lines.append(
            f"{r['files']:>12,} {r['cores']:>6} {r['scan']:>10} {m['seconds']:>14,.1f} "
            f"{m['driver_bytes'] / 1e9:>8.1f} {s['seconds']:>9,.1f} {s['driver_bytes'] / 1e9:>10.2f} "
            f"{s['tasks']:>7,}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=2_000_000)
    parser.add_argument("--manifests", type=int, default=4000)
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "scale-model.json")
    args = parser.parse_args()
    costs = measure(args)
    rows = simulate(costs, args.files // args.manifests)
    lines = report(rows)
    print("\n".join(lines))
    write_json(
        args.out,
        {
            "measured": costs,
            "constants": {
                "task_manifests": TASK_MANIFESTS,
                "scheduling_s": SCHEDULING_S,
                "launch_s": LAUNCH_S,
                "network_bytes_s": NETWORK_BYTES_S,
                "job_s": JOB_S,
                "machine_cores": MACHINE_CORES,
            },
            "rows": rows,
            "report": lines,
        },
    )
    print(json.dumps(costs))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Time one Python planner on one table: the cold plan of this fresh process, then warm repeats.

    .venv/bin/python bench/py_plan.py {ours,pyiceberg} --metadata-location LOC [--repeat 5] [--budget 60]

* ours: planner_service's ScanPlanner(FileIO()).plan(table, ScanRequest()), the full planTasks() equivalent
  (files, splits, bin packing). One planner serves every repeat, so warm plans hit its manifest cache.
* pyiceberg: StaticTable.from_metadata(LOC).scan().plan_files(), consumed fully. PyIceberg has no
  planTasks(): it stops at the file list, without splitting or packing.

Each plan loads the table afresh from its metadata file, untimed (reported as load_ms): only the planning
call is timed. Memory: this process's peak RSS (VmHWM). Prints one JSON object on stdout; progress goes to
stderr.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import time
from collections.abc import Callable

from common import Sample, measure, peak_rss_bytes


def ours(location: str) -> Callable[[], Sample]:
    from planner_service.catalog.base import load_by_metadata_location
    from planner_service.io.fileio import FileIO
    from planner_service.planning.planner import ScanPlanner, ScanRequest

    io = FileIO()
    planner = ScanPlanner(io)

    def plan_once() -> Sample:
        started = time.perf_counter()
        table = load_by_metadata_location(io, location)
        loaded = time.perf_counter()
        plan = planner.plan(table, ScanRequest())
        done = time.perf_counter()
        return {
            "load_ms": (loaded - started) * 1000,
            "plan_ms": (done - loaded) * 1000,
            "files": plan.metrics.scanned_data_files,
            "tasks": len(plan.tasks),
            "stage_ms": dict(plan.metrics.stage_ms),
        }

    return plan_once


def pyiceberg(location: str) -> Callable[[], Sample]:
    from pyiceberg.table import StaticTable

    def plan_once() -> Sample:
        started = time.perf_counter()
        table = StaticTable.from_metadata(location)
        loaded = time.perf_counter()
        files = sum(1 for _ in table.scan().plan_files())
        done = time.perf_counter()
        return {"load_ms": (loaded - started) * 1000, "plan_ms": (done - loaded) * 1000, "files": files}

    return plan_once


IMPLEMENTATIONS = {"ours": (ours, "scan-planner"), "pyiceberg": (pyiceberg, "pyiceberg")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("implementation", choices=sorted(IMPLEMENTATIONS))
    parser.add_argument("--metadata-location", required=True)
    parser.add_argument("--repeat", type=int, default=5, help="warm plans after the cold one (default 5)")
    parser.add_argument("--budget", type=float, default=60.0, help="stop warm plans after this many seconds")
    args = parser.parse_args()
    make_plan, distribution = IMPLEMENTATIONS[args.implementation]
    result = measure(args.implementation, make_plan(args.metadata_location), args.repeat, args.budget, peak_rss_bytes)
    result.update(
        {
            "implementation": args.implementation,
            "version": importlib.metadata.version(distribution),
            "python_version": sys.version.split()[0],
            "memory_reported": "process peak RSS (VmHWM)",
        }
    )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

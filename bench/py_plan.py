"""Time one Python planner on one table: the cold plan of this fresh process, then warm repeats.

    .venv/bin/python bench/py_plan.py {ours,pyiceberg} --metadata-location LOC [--filter-json JSON]
        [--repeat 5] [--budget 60]

* ours: planner_service's ScanPlanner(FileIO()).plan(table, ScanRequest(row_filter=...)), the full
  planTasks() equivalent (files, splits, bin packing). One planner serves every repeat, so warm plans hit
  its manifest cache. The filter is read with expression_from_json, as the service reads it.
* pyiceberg: StaticTable.from_metadata(LOC).scan(row_filter=...).plan_files(), consumed fully, with the
  filter as a PyIceberg expression (bench/pyiceberg_filter.py). PyIceberg has no planTasks(): it stops at
  the file list, without splitting or packing.

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
from typing import Any

from common import Sample, measure, peak_rss_bytes


def ours(location: str, filter_json: Any) -> Callable[[], Sample]:
    from planner_service.catalog.base import load_by_metadata_location
    from planner_service.expressions.expression import TRUE
    from planner_service.expressions.expression_json import expression_from_json
    from planner_service.io.fileio import FileIO
    from planner_service.planning.planner import ScanPlanner
    from planner_service.planning.scan_request import ScanRequest

    io = FileIO()
    planner = ScanPlanner(io)
    request = ScanRequest(row_filter=TRUE if filter_json is None else expression_from_json(filter_json))

    def plan_once() -> Sample:
        started = time.perf_counter()
        table = load_by_metadata_location(io, location)
        loaded = time.perf_counter()
        plan = planner.plan(table, request)
        done = time.perf_counter()
        return {
            "load_ms": (loaded - started) * 1000,
            "plan_ms": (done - loaded) * 1000,
            "files": plan.metrics.scanned_data_files,
            "tasks": len(plan.combined or ()),
            "manifests_read": plan.metrics.total_data_manifests - plan.metrics.skipped_data_manifests,
            "stage_ms": dict(plan.metrics.stage_ms),
        }

    return plan_once


def pyiceberg(location: str, filter_json: Any) -> Callable[[], Sample]:
    from pyiceberg.expressions import AlwaysTrue, BooleanExpression
    from pyiceberg.table import StaticTable
    from pyiceberg_filter import pyiceberg_expression

    row_filter: BooleanExpression = AlwaysTrue() if filter_json is None else pyiceberg_expression(filter_json)

    def plan_once() -> Sample:
        started = time.perf_counter()
        table = StaticTable.from_metadata(location)
        loaded = time.perf_counter()
        files = sum(1 for _ in table.scan(row_filter=row_filter).plan_files())
        done = time.perf_counter()
        return {"load_ms": (loaded - started) * 1000, "plan_ms": (done - loaded) * 1000, "files": files}

    return plan_once


IMPLEMENTATIONS = {"ours": (ours, "scan-planner"), "pyiceberg": (pyiceberg, "pyiceberg")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("implementation", choices=sorted(IMPLEMENTATIONS))
    parser.add_argument("--metadata-location", required=True)
    parser.add_argument("--filter-json", help="a row filter, as a REST JSON expression (default: none)")
    parser.add_argument("--repeat", type=int, default=5, help="warm plans after the cold one (default 5)")
    parser.add_argument("--budget", type=float, default=60.0, help="stop warm plans after this many seconds")
    args = parser.parse_args()
    make_plan, distribution = IMPLEMENTATIONS[args.implementation]
    filter_json = json.loads(args.filter_json) if args.filter_json else None
    plan_once = make_plan(args.metadata_location, filter_json)
    result = measure(args.implementation, plan_once, args.repeat, args.budget, peak_rss_bytes)
    result.update(
        {
            "implementation": args.implementation,
            "filter_json": filter_json,
            "version": importlib.metadata.version(distribution),
            "python_version": sys.version.split()[0],
            "memory_reported": "process peak RSS (VmHWM)",
        }
    )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

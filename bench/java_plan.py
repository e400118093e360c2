"""Time Iceberg Java 1.10.2's planTasks() on one table: the cold plan of a fresh JVM, then warm repeats.

    <java venv python> bench/java_plan.py --metadata-location LOC [--filter-json JSON] [--repeat 5]
        [--budget 60] [--no-worker-pool] [--worker-threads N]

Runs in the pyspark venv of scripts/java_env.py and drives a bare JVM through py4j (bench/jvm.py). Each plan
loads the table afresh from its metadata file (StaticTableOperations + BaseTable, as a new query would),
then materializes `table.newScan().filter(expr).planTasks()` into a Java list, in Java: a py4j call per
task would cost more than the planning. The filter is `ExpressionParser.fromJson(--filter-json)`, parsed
once (no filter: no filter() call). Only newScan() .. the list's size() is timed; the table load is
reported apart. The JVM's start is not timed. Java's default plans manifests on its worker pool;
--no-worker-pool passes -Diceberg.scan.plan-in-worker-pool=false; --worker-threads N sizes that pool
(-Diceberg.worker.num-threads, default: the JVM's processors), to measure how Java scales. The data files
are counted once more at the end with planFiles() (untimed). Prints one JSON object on stdout; progress goes
to stderr.

Memory: the JVM's peak RSS (VmHWM of /proc/<jvm pid>/status) under a --heap limit (default 2g), and the sum
of the heap pools' peak usage (an upper bound of the peak heap in use).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from common import Sample, load_java_env, measure, peak_rss_bytes
from jvm import hadoop_file_io, jvm_pid, started_jvm


def heap_pools_peak_bytes(jvm: Any) -> int:
    pools = jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
    return sum(int(p.getPeakUsage().getUsed()) for p in pools if p.getType().name() == "HEAP")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--metadata-location", required=True)
    parser.add_argument("--filter-json", help="a row filter, as a REST JSON expression (default: none)")
    parser.add_argument("--repeat", type=int, default=5, help="warm plans after the cold one (default 5; 0: none)")
    parser.add_argument("--budget", type=float, default=60.0, help="stop warm plans after this many seconds")
    parser.add_argument("--no-worker-pool", action="store_true", help="-Diceberg.scan.plan-in-worker-pool=false")
    parser.add_argument("--worker-threads", type=int, help="-Diceberg.worker.num-threads (default: processors)")
    parser.add_argument("--heap", default="2g", help="the JVM's maximum heap, -Xmx (default 2g)")
    parser.add_argument("--jars", help="comma-separated jars (default: from scripts/java_env.py)")
    args = parser.parse_args()
    jars = args.jars.split(",") if args.jars else list(load_java_env().ensure_java_env()["jars"])
    options = ["-Diceberg.scan.plan-in-worker-pool=false"] if args.no_worker_pool else []
    if args.worker_threads:
        options.append(f"-Diceberg.worker.num-threads={args.worker_threads}")
    name = "java, no worker pool" if args.no_worker_pool else "java"
    location = args.metadata_location

    with started_jvm(jars, options, memory=args.heap) as gateway:
        jvm = gateway.jvm
        iceberg = jvm.org.apache.iceberg
        new_list = jvm.org.apache.iceberg.relocated.com.google.common.collect.Lists.newArrayList
        count = jvm.org.apache.iceberg.relocated.com.google.common.collect.Iterables.size
        pid = jvm_pid(gateway)

        def load() -> Any:
            return iceberg.BaseTable(iceberg.StaticTableOperations(location, hadoop_file_io(gateway)), location)

        row_filter = iceberg.expressions.ExpressionParser.fromJson(args.filter_json) if args.filter_json else None

        def new_scan(table: Any) -> Any:
            scan = table.newScan()
            return scan if row_filter is None else scan.filter(row_filter)

        def plan_once() -> Sample:
            started = time.perf_counter()
            table = load()
            loaded = time.perf_counter()
            tasks = new_scan(table).planTasks()
            try:
                planned = new_list(tasks).size()
            finally:
                tasks.close()
            done = time.perf_counter()
            return {"load_ms": (loaded - started) * 1000, "plan_ms": (done - loaded) * 1000, "tasks": planned}

        varying = () if args.no_worker_pool else ("tasks",)  # the pool's manifest order changes the packing
        result = measure(name, plan_once, args.repeat, args.budget, lambda: peak_rss_bytes(pid), varying)
        files = new_scan(load()).planFiles()
        try:
            result["files"] = count(files)
        finally:
            files.close()
        result.update(
            {
                "implementation": name,
                "filter_json": json.loads(args.filter_json) if args.filter_json else None,
                "filter_java": None if row_filter is None else row_filter.toString(),
                "worker_pool": not args.no_worker_pool,
                "worker_threads": args.worker_threads or "processors",
                "memory_reported": "JVM peak RSS (VmHWM); heap_pools_peak_bytes is the heap pools' peak use",
                "heap_pools_peak_bytes": heap_pools_peak_bytes(jvm),
                "max_heap": args.heap,
                "iceberg_version": jvm.org.apache.iceberg.IcebergBuild.version(),
                "java_version": jvm.java.lang.System.getProperty("java.version"),
                "java_processors": jvm.java.lang.Runtime.getRuntime().availableProcessors(),
            }
        )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

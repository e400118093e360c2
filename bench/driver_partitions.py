"""Time a Spark driver until it has its partitions: `df.rdd.getNumPartitions()` of a table read.

    <python> bench/driver_partitions.py iceberg --table-location DIR --one-id ID [--repeat 3] [--jars J,..]
    <python> bench/driver_partitions.py ours --service-url URL --table bench.t --one-id ID [--repeat 3]

`iceberg`: Spark + Iceberg Java in the driver, `spark.read.format("iceberg").load(DIR)` (the pyspark 3.5 venv
of scripts/java_env.py, with the Iceberg 1.10.2 runtime); `ours`: spark_client.plan_and_read against a
running service (the project's venv, pyspark 4). Each starts a local[2] SparkSession (not timed), then
times, in order: the first full read (`first`), --repeat more (`warm`, the median), then the selective
read `id = ID` (one data file; first and warm). With `--planning-mode distributed`, Iceberg plans on the
executors (`spark.sql.iceberg.data-planning-mode`, Iceberg's SparkDistributedDataScan). The driver's peak RSS
(its Python process and its JVM, VmHWM) is reported with the times. Prints one JSON object on stdout;
progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any


def timed(name: str, count: Callable[[], int], repeat: int) -> dict[str, Any]:
    started = time.perf_counter()
    partitions = [count()]
    first = (time.perf_counter() - started) * 1000
    warm = []
    for _ in range(repeat):
        started = time.perf_counter()
        partitions.append(count())  # Iceberg's worker pool may order manifests, and so pack, differently
        warm.append((time.perf_counter() - started) * 1000)
    print(f"[driver] {name}: {partitions} partitions, first {first:.0f} ms, warm {warm}", file=sys.stderr)
    return {
        "partitions": partitions[0],
        "partitions_seen": sorted(set(partitions)),
        "first_ms": first,
        "warm_ms": warm,
        "warm_median_ms": statistics.median(warm),
    }


def session(jars: list[str] | None, heap: str = "8g", planning_mode: str | None = None) -> Any:
    from pyspark.sql import SparkSession

    # the executors' Python is this one, as a user's would be one with the client installed (plan_and_read
    # checks that once per application, with one tiny task, before its first plan)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", heap)
        .config("spark.sql.shuffle.partitions", "2")
    )
    if jars:
        builder = builder.config("spark.jars", ",".join(jars)).config(
            "spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
        )
    if planning_mode:
        builder = builder.config("spark.sql.iceberg.data-planning-mode", planning_mode)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _peak_rss_bytes(pid: int) -> int:
    """A process's peak resident set (VmHWM), in bytes."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("implementation", choices=("iceberg", "ours"))
    parser.add_argument("--table-location", help="iceberg: the table directory")
    parser.add_argument("--jars", help="iceberg: comma-separated jars")
    parser.add_argument("--service-url", help="ours: the service")
    parser.add_argument("--table", default="bench.t", help="ours: the table's name on the service")
    parser.add_argument("--one-id", type=int, required=True, help="an id only one data file holds")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--heap", default="8g", help="the driver's heap (spark.driver.memory)")
    parser.add_argument("--planning-mode", choices=("local", "distributed"), help="iceberg: data planning mode")
    args = parser.parse_args()

    spark = session(args.jars.split(",") if args.jars else None, args.heap, args.planning_mode)
    if args.implementation == "iceberg":
        from pyspark.sql.functions import col

        def read() -> Any:
            return spark.read.format("iceberg").load(args.table_location)

        full = timed("iceberg full", lambda: read().rdd.getNumPartitions(), args.repeat)
        one = timed(
            "iceberg one file", lambda: read().filter(col("id") == args.one_id).rdd.getNumPartitions(), args.repeat
        )
        spark_version = spark.version
    else:
        from spark_client import PlannerClient, plan_and_read

        client = PlannerClient(args.service_url, timeout=600)
        full = timed(
            "ours full", lambda: plan_and_read(spark, args.table, client=client).rdd.getNumPartitions(), args.repeat
        )
        one_filter = f"id = {args.one_id}"
        one = timed(
            "ours one file",
            lambda: plan_and_read(spark, args.table, filter=one_filter, client=client).rdd.getNumPartitions(),
            args.repeat,
        )
        spark_version = spark.version
    jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    peaks = {"python": _peak_rss_bytes(os.getpid()), "jvm": _peak_rss_bytes(jvm)}
    result = {
        "implementation": args.implementation,
        "spark": spark_version,
        "full": full,
        "one": one,
        "planning_mode": args.planning_mode or "auto",
        "heap": args.heap,
        "driver_peak_rss_bytes": sum(peaks.values()),
        "driver_peak_rss_by_process": peaks,
    }
    print(json.dumps(result))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

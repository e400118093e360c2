"""Time a Spark driver until it has its partitions: `df.rdd.getNumPartitions()` of a table read.

    <python> bench/driver_partitions.py iceberg --table-location DIR --one-id ID [--repeat 3] [--jars J,..]
    <python> bench/driver_partitions.py ours --service-url URL --table bench.t --one-id ID [--repeat 3]
    <python> bench/driver_partitions.py rest --service-url URL --rest-mode server|client --one-id ID --jars J

`iceberg`: Spark + Iceberg Java in the driver, `spark.read.format("iceberg").load(DIR)` (the pyspark 3.5 venv
of scripts/java_env.py, with the Iceberg 1.10.2 runtime); `ours`: spark_client.plan_and_read against a
running service (the project's venv, pyspark 4); `rest`: Spark + Iceberg 1.11+ with Iceberg's REST catalog
at the service (`sp`, type rest, `spark.table("sp.bench.t")`), its scans planned by the service
(`--rest-mode server`) or by Iceberg in the driver (`client`, `scan-planning-mode=client`). Each starts a
local[2] SparkSession (not timed), then times, in order: the first full read (`first`), --repeat more
(`warm`, the median), then the selective read `id = ID` (one data file; first and warm), each with the
driver's CPU seconds (its Python process and JVM). With `--planning-mode distributed`, Iceberg plans on the
executors (`spark.sql.iceberg.data-planning-mode`, Iceberg's SparkDistributedDataScan). The driver's peak RSS
(its Python process and its JVM, VmHWM) is reported with the times. --profile FILE records the driver
JVM's session with JFR (`jfr print --json --events jdk.ExecutionSample FILE`). Prints one JSON object on
stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def cpu_seconds(pids: list[int]) -> float:
    """The CPU time (user + system) the processes have used so far, from /proc/PID/stat."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (the 14th and 15th fields)
    return total / ticks


def timed(name: str, count: Callable[[], int], repeat: int, pids: list[int] | None = None) -> dict[str, Any]:
    pids = pids or [os.getpid()]
    cpu, started = cpu_seconds(pids), time.perf_counter()
    partitions = [count()]
    first, first_cpu = (time.perf_counter() - started) * 1000, cpu_seconds(pids) - cpu
    warm, warm_cpu = [], []
    for _ in range(repeat):
        cpu, started = cpu_seconds(pids), time.perf_counter()
        partitions.append(count())  # Iceberg's worker pool may order manifests, and so pack, differently
        warm.append((time.perf_counter() - started) * 1000)
        warm_cpu.append(cpu_seconds(pids) - cpu)
    print(f"[driver] {name}: {partitions} partitions, first {first:.0f} ms, warm {warm}", file=sys.stderr)
    return {
        "partitions": partitions[0],
        "partitions_seen": sorted(set(partitions)),
        "first_ms": first,
        "first_cpu_s": first_cpu,
        "warm_ms": warm,
        "warm_median_ms": statistics.median(warm),
        "warm_median_cpu_s": statistics.median(warm_cpu),
    }


def session(
    jars: list[str] | None, heap: str = "8g", planning_mode: str | None = None, conf: dict[str, str] | None = None
) -> Any:
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
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
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
    parser.add_argument("implementation", choices=("iceberg", "ours", "rest"))
    parser.add_argument("--table-location", help="iceberg: the table directory")
    parser.add_argument("--jars", help="iceberg: comma-separated jars")
    parser.add_argument("--service-url", help="ours, rest: the service")
    parser.add_argument("--rest-mode", choices=("server", "client"), default="server", help="rest: who plans")
    parser.add_argument("--table", default="bench.t", help="ours: the table's name on the service")
    parser.add_argument("--one-id", type=int, required=True, help="an id only one data file holds")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--heap", default="8g", help="the driver's heap (spark.driver.memory)")
    parser.add_argument(
        "--worker-threads", type=int, help="Iceberg's worker pool (iceberg.worker.num-threads; default: the cores)"
    )
    parser.add_argument("--profile", type=Path, help="record the driver JVM with JFR into this file")
    parser.add_argument("--planning-mode", choices=("local", "distributed"), help="iceberg: data planning mode")
    args = parser.parse_args()

    conf = {}
    if args.implementation == "rest":
        catalog = "spark.sql.catalog.sp"
        conf = {catalog: "org.apache.iceberg.spark.SparkCatalog", f"{catalog}.type": "rest"}
        conf |= {f"{catalog}.uri": args.service_url, f"{catalog}.scan-planning-mode": args.rest_mode}
    options = []
    if args.worker_threads:  # (a system property, read when the pool is made: the driver JVM's options)
        options.append(f"-Diceberg.worker.num-threads={args.worker_threads}")
    if args.profile:  # a JFR recording of the driver JVM's whole session (`jfr print --events ExecutionSample`)
        options.append(f"-XX:StartFlightRecording=filename={args.profile},settings=profile")
    if options:
        conf["spark.driver.extraJavaOptions"] = " ".join(options)
    spark = session(args.jars.split(",") if args.jars else None, args.heap, args.planning_mode, conf)
    jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    pids = [os.getpid(), jvm]
    if args.implementation == "rest":
        from pyspark.sql.functions import col

        name = f"sp.{args.table}"
        full = timed(f"rest {args.rest_mode} full", lambda: spark.table(name).rdd.getNumPartitions(), args.repeat, pids)
        one = timed(
            f"rest {args.rest_mode} one file",
            lambda: spark.table(name).filter(col("id") == args.one_id).rdd.getNumPartitions(),
            args.repeat,
            pids,
        )
        spark_version = spark.version
    elif args.implementation == "iceberg":
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
    peaks = {"python": _peak_rss_bytes(os.getpid()), "jvm": _peak_rss_bytes(jvm)}
    result = {
        "implementation": args.implementation,
        "rest_mode": args.rest_mode if args.implementation == "rest" else None,
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

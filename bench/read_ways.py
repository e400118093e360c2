"""Two ways to write the same read with the PySpark client: what Spark cannot push into mapInArrow.

    .venv/bin/python bench/read_ways.py [--shapes narrow,wide] [--repeat 3] [--rows N] [--out FILE]

Spark prunes no column and pushes no aggregate into mapInArrow or a Python data source, so a count or a
projection written on the DataFrame reads every column of every row. On read_bench.py's tables (built
and cached by bench/make_read_table.py) and a `scan-planner serve` on loopback, pyspark 4 in this venv
times, each after a warm-up, the median of --repeat runs (wall and CPU of this process tree):

* count:   plan_and_read(spark, t, filter=f).count()           against aggregate(spark, t, ["count(*)"], filter=f)
* columns: plan_and_read(spark, t).select(a, b) to noop       against plan_and_read(spark, t, columns=[a, b])

with read_bench's selective filter and two columns of each shape; both ways must give the same count (and
the same columns). About 2 minutes on 2 cores with the tables cached.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import BENCH, REPO, load_java_env, progress, write_json
from make_read_table import parse_shapes
from read_bench import MASTER, SPARK_CONF, ensure_tables, tree_cpu_seconds


def timed(run: Callable[[], int], repeat: int) -> dict[str, Any]:
    run()  # warm-up
    walls, cpus, answers = [], [], set()
    for _ in range(repeat):
        cpu, started = tree_cpu_seconds(), time.perf_counter()
        answers.add(run())
        walls.append(time.perf_counter() - started)
        cpus.append(tree_cpu_seconds() - cpu)
    if len(answers) != 1:
        raise RuntimeError(f"runs disagree: {sorted(answers)}")
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus), "rows": answers.pop()}


def measure(spark: Any, url: str, described: dict[str, Any], repeat: int) -> dict[str, Any]:
    from pyspark.sql import DataFrame

    from spark_client import PlannerClient, aggregate, plan_and_read

    table = described["table"]
    row_filter = described["scans"]["selective"]["filter"]
    columns = described["scans"]["columns"]["columns"]

    def noop(df: DataFrame) -> int:
        df.write.format("noop").mode("overwrite").save()
        return len(df.columns)

    with PlannerClient(url) as client:
        ways = {
            "count, naive": lambda: plan_and_read(spark, table, filter=row_filter, client=client).count(),
            "count, aggregate()": lambda: int(
                aggregate(spark, table, ["count(*)"], filter=row_filter, client=client).collect()[0][0]
            ),
            "columns, naive": lambda: noop(plan_and_read(spark, table, client=client).select(*columns)),
            "columns, columns=": lambda: noop(plan_and_read(spark, table, columns=columns, client=client)),
        }
        out = {}
        for name, run in ways.items():
            out[name] = timed(run, repeat)
            took = f"{out[name]['wall_s']:.2f} s, {out[name]['cpu_s']:.1f} CPU-s"
            progress("read-ways", f"{described['shape']} {name}: {took}")
    for naive, right in (("count, naive", "count, aggregate()"), ("columns, naive", "columns, columns=")):
        if out[naive]["rows"] != out[right]["rows"]:
            raise RuntimeError(f"{described['shape']}: {naive} and {right} disagree")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", type=parse_shapes, default=["narrow", "wide"], help="of read_bench's shapes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, help="rows of every table (default: each shape's own)")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "read_ways.json")
    args = parser.parse_args()
    env = load_java_env().ensure_java_env()
    tables = ensure_tables(args.shapes, args.rows, env, 3600)
    warehouse = next(iter(tables.values()))["warehouse"]
    from pyspark.sql import SparkSession
    from service import served

    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = SparkSession.builder.master(MASTER).appName("read_ways")
    for key, value in SPARK_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="read-ways-") as directory:
        config = Path(directory) / "service.toml"
        config.write_text(f"allowed_roots = [{json.dumps(warehouse)}]\n")
        with served(["--warehouse", warehouse, "--config", str(config)], REPO) as service:
            for shape in args.shapes:
                results[shape] = measure(spark, service.url, tables[shape], args.repeat)
    spark.stop()
    write_json(args.out, {"spark": spark.version, "repeat": args.repeat, "results": results})
    for shape, ways in results.items():
        for name, m in ways.items():
            print(f"{shape:8} {name:20} {m['wall_s']:7.2f} s {m['cpu_s']:6.1f} CPU-s  ({m['rows']:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

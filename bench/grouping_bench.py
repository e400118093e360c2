"""A per-partition aggregation that needs no shuffle because the plan keeps the table's partitions apart
(grouping="partition", issue 25), against the same aggregation as Spark writes it (groupBy: a shuffle), in
one run on the read benchmark's narrow table (bench.reads: 43.2 M rows, 30 daily files, days(ts) partitions).

    .venv/bin/python bench/grouping_bench.py [--repeat 3] [--out bench/results/grouping.json]

* shuffle   plan_and_read(columns=[ts, amount]) .groupBy(to_date(ts)).agg(count, sum(amount)): Spark's
            partial aggregation, an exchange by day, the final aggregation;
* grouped   the plan of the same scan with grouping="partition", each task read and reduced to one row of
            (day, count, sum) where it is read (spark_client.dataframe.map_tasks, as aggregate() reads): each
            Spark partition holds one day's task(s), so a task's row is final for its day (the driver adds
            the few rows of a day split over more tasks); no exchange.
Both answers are checked equal; the median wall time of --repeat runs after a warm-up is reported.

Then an ordered write (grouping="sort-order"): the table's rows (id, ts, amount) written as Parquet files each
sorted by ts, as a job that feeds a sorted consumer (a merge, an ordered export) writes them:
* sort      plan_and_read(...).sortWithinPartitions("ts").write.parquet: Spark sorts every partition;
* ordered   plan_and_read(..., grouping="sort-order").write.parquet: the plan's tasks already read in ts
            order (bench/order_read_table.py gives the table the order its rows were written in, with
            Iceberg Java's API, once), so no sort.
Both outputs are checked: the same number of rows, every file of either sorted by ts.

And an aggregation that needs the order: each day's longest gap between consecutive events (by ts).
* window    plan_and_read(columns=[ts]), ts - lag(ts) over a window partitioned by day, ordered by ts, then
            the maximum per day: an exchange by day and a sort;
* ordered   the plan with grouping="sort-order", each task read and reduced where it is read (map_tasks) to
            (day, first ts, last ts, longest gap inside): its rows come in ts order, so the gaps are those
            of consecutive rows (a row out of order fails the run); the driver joins a day's tasks (the gap
            between one task's last ts and the next one's first). No exchange, no sort.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import REPO, progress, write_json
from make_read_table import read_described, tables_dir
from service import served


class _DayTotals:
    """What each Spark task runs: read its planned task (one day's files) and yield one row, (day, rows,
    sum of amount), in the same Python pass as the read (map_tasks: no second UDF over the rows)."""

    def __init__(self, read_schema: Any) -> None:
        self.read_schema = read_schema

    def __call__(self, payload: Any, schema: Any, storage: Any, max_rows: int) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.compute as pc

        from spark_client.partitions import read_payload

        count, total, day = 0, 0.0, None
        for batch in read_payload(payload, self.read_schema, storage, max_rows):
            if batch.num_rows:
                if day is None:
                    day = pc.cast(pc.cast(batch.column("ts")[0], pa.timestamp("us")), pa.date32()).as_py()
                count += batch.num_rows
                total += pc.sum(batch.column("amount")).as_py() or 0.0
        if day is not None:
            yield pa.RecordBatch.from_pydict({"day": [day], "rows": [count], "amount": [total]}, schema=schema)


class _DayGaps:
    """What each Spark task runs on a sort-order plan: read its task (files of one day, in ts order) and yield
    (day, first ts, last ts, longest gap between consecutive rows), in microseconds."""

    def __init__(self, read_schema: Any) -> None:
        self.read_schema = read_schema

    def __call__(self, payload: Any, schema: Any, storage: Any, max_rows: int) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa

        from spark_client.partitions import read_payload

        first = last = None
        gap = 0
        for batch in read_payload(payload, self.read_schema, storage, max_rows):
            if not batch.num_rows:
                continue
            ts = batch.column("ts").cast(pa.int64()).to_numpy()
            steps = np.diff(ts) if last is None else np.diff(ts, prepend=last)
            if len(steps) and steps.min() < 0:
                raise AssertionError("a sort-order task read a row before an earlier one")
            gap = max(gap, int(steps.max()) if len(steps) else 0)
            first = int(ts[0]) if first is None else first
            last = int(ts[-1])
        if first is not None:
            day = first // 86_400_000_000
            yield pa.RecordBatch.from_pydict(
                {"day": [day], "first": [first], "last": [last], "gap": [gap]}, schema=schema
            )


def _joined_gaps(rows: list[Any]) -> dict[int, int]:
    """Each day's longest gap from its tasks' (day, first, last, gap) rows."""
    out: dict[int, int] = {}
    by_day: dict[int, list[Any]] = {}
    for r in rows:
        by_day.setdefault(int(r[0]), []).append(r)
    for day, parts in by_day.items():
        parts.sort(key=lambda r: r[1])
        gap = max(int(r[3]) for r in parts)
        for before, after in itertools.pairwise(parts):
            gap = max(gap, int(after[1]) - int(before[2]))
        out[day] = gap
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "grouping.json")
    args = parser.parse_args()
    table = read_described(tables_dir(None), "narrow")
    if table is None:
        raise SystemExit("the narrow read table is not built: run bench/read_bench.py --shapes narrow once")
    _give_the_table_its_order(Path(table["warehouse"]))
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.types import DateType, DoubleType, LongType, StructField, StructType

    from planner_client import Scan
    from spark_client import plan_and_read
    from spark_client.dataframe import arrow_schema, map_tasks, output_schema, plan_for_spark

    os.environ["PYSPARK_PYTHON"] = (
        sys.executable
    )  # the executors' Python is this one, as a user's would have the client
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    config = REPO / "bench" / "results" / ".grouping-service.toml"
    config.write_text(f'allowed_roots = ["{table["warehouse"]}"]\n')
    try:
        with served(["--warehouse", table["warehouse"], "--config", str(config)], REPO) as service:
            url, name = service.url, table["table"]

            def shuffle() -> dict[Any, tuple[int, float]]:
                df = plan_and_read(spark, name, columns=["ts", "amount"], service_url=url)
                rows = df.groupBy(F.to_date("ts").alias("day")).agg(F.count("*"), F.sum("amount")).collect()
                return {r[0]: (int(r[1]), float(r[2])) for r in rows}

            def grouped() -> dict[Any, tuple[int, float]]:
                scan = Scan(name, columns=["ts", "amount"], grouping="partition")
                plan, service_url, token = plan_for_spark(spark, scan, "grouping-bench", None, url, None)
                read_schema = arrow_schema(output_schema(plan, ["ts", "amount"]))
                schema = StructType(
                    [
                        StructField("day", DateType()),
                        StructField("rows", LongType()),
                        StructField("amount", DoubleType()),
                    ]
                )
                df = map_tasks(spark, plan, _DayTotals(read_schema), schema, None, service_url, token)
                out: dict[Any, tuple[int, float]] = {}
                for r in df.collect():  # a row a task; a day split over more tasks adds up here
                    count, total = out.get(r[0], (0, 0.0))
                    out[r[0]] = (count + int(r[1]), total + float(r[2]))
                return out

            results: dict[str, Any] = {}
            answers = {}
            for label, run in (("shuffle", shuffle), ("grouped", grouped)):
                answers[label], results[label] = _timed(label, run, args.repeat)
            results["ordered_write"] = _ordered_write(spark, name, url, args.repeat)

            def window_gaps() -> dict[int, int]:
                from pyspark.sql import Window

                df = plan_and_read(spark, name, columns=["ts"], service_url=url)
                micros = F.unix_micros("ts")
                day = F.floor(micros / F.lit(86_400_000_000)).alias("day")
                step = micros - F.lag(micros).over(Window.partitionBy(day).orderBy(micros))
                gaps = df.select(day, step.alias("gap")).groupBy("day").agg(F.max("gap"))
                return {int(r[0]): int(r[1]) for r in gaps.collect()}

            def ordered_gaps() -> dict[int, int]:
                scan = Scan(name, columns=["ts"], grouping="sort-order")
                plan, service_url, token = plan_for_spark(spark, scan, "grouping-bench", None, url, None)
                read_schema = arrow_schema(output_schema(plan, ["ts"]))
                schema = StructType([StructField(c, LongType()) for c in ("day", "first", "last", "gap")])
                df = map_tasks(spark, plan, _DayGaps(read_schema), schema, None, service_url, token)
                return _joined_gaps(df.collect())

            gap_answers = {}
            for label, run in (("window", window_gaps), ("ordered", ordered_gaps)):
                gap_answers[label], results[f"gap_{label}"] = _timed(f"longest gap, {label}", run, args.repeat)
            assert gap_answers["window"] == gap_answers["ordered"], "the longest gaps differ"
            results["ratio_wall_window_over_ordered"] = (
                results["gap_window"]["wall_s"] / results["gap_ordered"]["wall_s"]
            )
            spark_answer, ours = answers["shuffle"], answers["grouped"]
            assert spark_answer.keys() == ours.keys(), "the two answers differ in days"
            for day, (count, total) in spark_answer.items():  # (sums in another order: equal to rounding)
                assert ours[day][0] == count and math.isclose(ours[day][1], total, rel_tol=1e-9), day
            results["days"] = len(answers["grouped"])
            results["ratio_wall_shuffle_over_grouped"] = results["shuffle"]["wall_s"] / results["grouped"]["wall_s"]
    finally:
        config.unlink(missing_ok=True)
        spark.stop()
    write_json(args.out, {"table": table["table"], "rows": table["rows"], "results": results})
    print(
        f"per-day count and sum of {table['rows']:,} rows: groupBy (shuffle) {results['shuffle']['wall_s']:.2f} s, "
        f"grouped tasks reduced where read {results['grouped']['wall_s']:.2f} s "
        f"({results['ratio_wall_shuffle_over_grouped']:.2f}x), answers equal over {results['days']} days"
    )
    written = results["ordered_write"]
    print(
        f"sorted Parquet files of {written['rows']:,} rows: sortWithinPartitions {written['sort']['wall_s']:.2f} s, "
        f"sort-order tasks {written['ordered']['wall_s']:.2f} s ({written['ratio_wall_sort_over_ordered']:.2f}x)"
    )
    print(
        f"each day's longest gap between events: window (exchange and sort) {results['gap_window']['wall_s']:.2f} s, "
        f"sort-order tasks reduced where read {results['gap_ordered']['wall_s']:.2f} s "
        f"({results['ratio_wall_window_over_ordered']:.2f}x), answers equal"
    )
    return 0


def _timed(label: str, run: Any, repeat: int) -> tuple[Any, dict[str, Any]]:
    """`run`'s answer (from a warm-up run) and the median wall time of `repeat` runs after it."""
    answer = run()
    walls = []
    for i in range(repeat):
        started = time.perf_counter()
        run()
        walls.append(time.perf_counter() - started)
        progress("grouping-bench", f"{label} {i + 1}/{repeat}: {walls[-1]:.2f} s")
    return answer, {"wall_s": statistics.median(walls), "runs_s": walls}


def _give_the_table_its_order(warehouse: Path) -> None:
    """bench/order_read_table.py in the Java venv (a metadata-only commit, once)."""
    import subprocess

    from common import load_java_env

    java = load_java_env().ensure_java_env()
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYSPARK_PYTHON", "PYTHONPATH")}
    env.update({"JAVA_HOME": str(java["java_home"]), "SPARK_LOCAL_IP": "127.0.0.1"})
    cmd = [str(java["python"]), str(REPO / "bench" / "order_read_table.py"), "--warehouse", str(warehouse)]
    out = subprocess.run([*cmd, "--jars", ",".join(java["jars"])], env=env, check=True, capture_output=True, text=True)
    progress("grouping-bench", out.stdout.strip().splitlines()[-1])


def _ordered_write(spark: Any, name: str, url: str, repeat: int) -> dict[str, Any]:
    """The table's (id, ts, amount) written as ts-sorted Parquet files, sorting or not; both outputs checked."""
    import shutil

    import pyarrow.parquet as pq

    from spark_client import plan_and_read

    columns = ["id", "ts", "amount"]
    root = REPO / "bench" / "results" / ".grouping-write"

    def sort() -> None:
        df = plan_and_read(spark, name, columns=columns, service_url=url)
        df.sortWithinPartitions("ts").write.mode("overwrite").parquet(str(root / "sort"))

    def ordered() -> None:
        df = plan_and_read(spark, name, columns=columns, grouping="sort-order", service_url=url)
        df.write.mode("overwrite").parquet(str(root / "ordered"))

    results: dict[str, Any] = {}
    try:
        for label, run in (("sort", sort), ("ordered", ordered)):
            _, results[label] = _timed(f"ordered write, {label}", run, repeat)
        counts = {}
        for label in ("sort", "ordered"):
            counts[label] = 0
            for path in sorted((root / label).glob("*.parquet")):
                ts = pq.read_table(path, columns=["ts"]).column("ts").to_numpy()
                assert (ts[1:] >= ts[:-1]).all(), f"{path} is not sorted by ts"
                counts[label] += len(ts)
        assert counts["sort"] == counts["ordered"], counts
    finally:
        shutil.rmtree(root, ignore_errors=True)
    results["rows"] = counts["ordered"]
    results["ratio_wall_sort_over_ordered"] = results["sort"]["wall_s"] / results["ordered"]["wall_s"]
    return results


if __name__ == "__main__":
    sys.exit(main())

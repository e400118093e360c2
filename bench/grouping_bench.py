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
"""

from __future__ import annotations

import argparse
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "grouping.json")
    args = parser.parse_args()
    table = read_described(tables_dir(None), "narrow")
    if table is None:
        raise SystemExit("the narrow read table is not built: run bench/read_bench.py --shapes narrow once")
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
                read_schema = arrow_schema(output_schema(plan["schema"], ["ts", "amount"]))
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
                answers[label] = run()  # warm-up (and the answer)
                walls = []
                for i in range(args.repeat):
                    started = time.perf_counter()
                    run()
                    walls.append(time.perf_counter() - started)
                    progress("grouping-bench", f"{label} {i + 1}/{args.repeat}: {walls[-1]:.2f} s")
                results[label] = {"wall_s": statistics.median(walls), "runs_s": walls}
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
    return 0


if __name__ == "__main__":
    sys.exit(main())

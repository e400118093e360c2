"""Run by test_pyspark35.py in the pyspark 3.5 venv: many reads with spark_client.plan_and_read, one Spark.

    python pyspark35_read.py REQUESTS_JSON OUT_DIR

REQUESTS_JSON is a list of {"name", "service_url", "table", "arguments"} (`arguments`: plan_and_read's
keyword arguments, JSON values); one with "aggregates" calls spark_client.aggregate instead (its row is the
read; result.json says whether Spark answers it without reading the table, "from_metadata": no Spark job
while aggregate() ran and no MapInArrow in the DataFrame's plan).
One with "shuffle_partitions" is read with spark.sql.shuffle.partitions set so (then 2 again), and records
the session's parallelism; one with "plan_only" builds the DataFrame and reads no rows.
All reads share one local[2] SparkSession (UTC, no UI), one after the other. Each read's rows, collected as Arrow (what
toArrow does on pyspark 4), become OUT_DIR/<name>.parquet (pyarrow's writer, so the Arrow types survive);
OUT_DIR/result.json records, per name, the Spark version, the DataFrame's partitions, the plan's tasks,
Spark's schema and the seconds taken, or the error the read raised (the others still run). Needs only
pyspark, pyarrow, pandas, httpx, pyroaring, fastavro and spark_client (PYTHONPATH), as a user's 3.5 cluster would.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from planner_client import plan_request
from spark_client import PlannerClient, aggregate, plan_and_read
from spark_client.dataframe import arrow_schema, spark_parallelism


def collect_arrow(df: DataFrame) -> pa.Table:
    """The DataFrame's rows as one Arrow table of Spark's Arrow types (an empty one has its schema)."""
    # a method of the classic DataFrame (pyspark 3.5's and 4's); pyspark 4's typed DataFrame API does not declare it
    collect_as_arrow = cast("Callable[[], list[pa.RecordBatch]]", df._collect_as_arrow)
    batches = collect_as_arrow()
    schema = arrow_schema(df.schema)
    return pa.Table.from_batches(batches) if batches else schema.empty_table()


def read(spark: SparkSession, request: dict[str, Any], out: Path) -> dict[str, Any]:
    shuffle = request.get("shuffle_partitions")
    if shuffle is None:
        return _read(spark, request, out)
    spark.conf.set("spark.sql.shuffle.partitions", str(shuffle))
    try:
        return {**_read(spark, request, out), "parallelism": spark_parallelism(spark)}
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "2")


def _read(spark: SparkSession, request: dict[str, Any], out: Path) -> dict[str, Any]:
    table, arguments = request["table"], request["arguments"]
    if "aggregates" in request:
        jobs = set(spark.sparkContext.statusTracker().getJobIdsForGroup())
        df = aggregate(spark, table, request["aggregates"], service_url=request["service_url"], **arguments)
        plan = df._jdf.queryExecution().executedPlan().toString()
        # no Spark job while aggregate() ran (it reads the rows at once when it reads any), no reader left
        read = jobs != set(spark.sparkContext.statusTracker().getJobIdsForGroup()) or "MapInArrow" in plan
        answer = {"spark": spark.version, "schema": df.schema.jsonValue(), "from_metadata": not read}
        return {**answer, **_written(collect_arrow(df), out / f"{request['name']}.parquet")}
    with PlannerClient(request["service_url"]) as client:
        tasks = client.plan(plan_request(table, **arguments, parallelism=spark_parallelism(spark)))["task-count"]
    df = plan_and_read(spark, table, service_url=request["service_url"], **arguments)
    result: dict[str, Any] = {
        "spark": spark.version,
        "tasks": tasks,
        "partitions": df.rdd.getNumPartitions(),
        "schema": df.schema.jsonValue(),
    }
    if request.get("plan_only"):
        return result
    try:
        rows = collect_arrow(df)
    except Exception as exc:  # the executors' error (Py4JJavaError/PythonException holds the Python one)
        return {**result, "error": f"{type(exc).__name__}: {exc}"[-4000:]}
    return {**result, **_written(rows, out / f"{request['name']}.parquet")}


def _written(rows: pa.Table, path: Path) -> dict[str, Any]:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows, path)
    return {"rows": rows.num_rows}


def main(requests_path: Path, out: Path) -> None:
    started = time.monotonic()
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("scan-planner pyspark 3.5 reads")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1000")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    results: dict[str, Any] = {}
    spark_started = time.monotonic() - started
    for request in json.loads(requests_path.read_text()):
        began = time.monotonic()
        try:
            result = read(spark, request, out)
        except Exception:  # planning or building the DataFrame failed: the test says which read
            result = {"spark": spark.version, "error": traceback.format_exc()[-4000:]}
        results[request["name"]] = {**result, "seconds": round(time.monotonic() - began, 3)}
    spark.stop()
    results_path = out / "result.json"
    results_path.write_text(json.dumps({"spark_start_seconds": round(spark_started, 3), "reads": results}, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))

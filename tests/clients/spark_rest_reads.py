"""Run by tests/rest_java in a pyspark venv of scripts/java_env.py, with an Iceberg 1.11+ runtime jar: read
the conformance read cases through Iceberg's own REST catalog client, as a Spark user configures it, with
the service as the catalog.

    python rest_reads.py --uri URL --cases CASES_JSON --out DIR --jars A.jar [--conf KEY=VALUE ...]

The catalog `sp` is `org.apache.iceberg.spark.SparkCatalog` with `type=rest` and `uri` and nothing else
(plus any --conf given, e.g. a token): whether a scan is planned by the service is up to what the service
advertises. Each case is read as tests/conformance/generate.py reads it with Spark + Iceberg 1.10.2
(`spark.read.format("iceberg")` with the snapshot and split-size options, `.where`, `.select`, a case's
"aggregates" and "limit" if it has them), one after
the other, and its rows written by Spark's Parquet writer to DIR/reads/<n>.parquet. Around each read the
service's /metrics are scraped: DIR/result.json records per case the requests the read made to each REST
route (so a test can tell a scan planned by the service from one planned in the driver) and the fields its
plan requests carried, the row count,
Spark's schema, the seconds, or the error the read raised (the other cases still run).
Needs only pyspark (the venv's) and the standard library.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import sys
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

CATALOG = "sp"
_READ_OPTIONS = {"id": "snapshot-id", "as_of": "as-of-timestamp", "branch": "branch", "tag": "tag"}
_COUNTERS = re.compile(r"^(scan_planner_requests_total|scan_planner_rest_plan_fields_total)\{(.*)\} ([0-9.e+]+)$", re.M)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def log(message: str) -> None:
    print(f"[rest-reads] {message}", file=sys.stderr, flush=True)


def start_spark(uri: str, jars: list[str], conf: dict[str, str]) -> SparkSession:
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("iceberg-rest-reads")
        .config("spark.jars", ",".join(jars))
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")  # as the reference's rows
        .config(f"spark.sql.catalog.{CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
        .config(f"spark.sql.catalog.{CATALOG}.type", "rest")
        .config(f"spark.sql.catalog.{CATALOG}.uri", uri)
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def route_counts(uri: str, headers: dict[str, str]) -> dict[str, float]:
    """The service's request counters by "METHOD route" (summed over statuses), and its REST plan requests by
    the fields they carried ("field NAME")."""
    request = urllib.request.Request(f"{uri}/metrics", headers=headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        text = answer.read().decode()
    counts: dict[str, float] = {}
    for metric, labels, value in _COUNTERS.findall(text):
        fields = dict(_LABEL.findall(labels))
        if metric == "scan_planner_requests_total":
            key = f"{fields.get('method')} {fields.get('route')}"
        else:
            key = f"field {fields.get('field')}"
        counts[key] = counts.get(key, 0.0) + float(value)
    return counts


def time_travel(spark: SparkSession, snapshot: dict[str, Any]) -> tuple[str, str]:
    """The read option for a snapshot choice: Iceberg's own on Spark 3.5; on Spark 4, where Iceberg 1.11+
    refuses them ("no longer supported"), Spark's versionAsOf (an id or a tag) and timestampAsOf."""
    kind, value = snapshot["kind"], snapshot["value"]
    if int(spark.version.split(".")[0]) < 4 or kind == "branch":
        return _READ_OPTIONS[kind], str(value)
    if kind == "as_of":  # milliseconds since the epoch, as a timestamp in the session's time zone (UTC)
        instant = dt.datetime.fromtimestamp(value / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        return "timestampAsOf", instant
    return "versionAsOf", str(value)


def spark_read(spark: SparkSession, case: dict[str, Any]) -> DataFrame:
    reader = spark.read.format("iceberg")
    snapshot = case["snapshot"]
    if snapshot["kind"] == "appends":
        reader = reader.option("start-snapshot-id", str(snapshot["start"]))
        if snapshot["end"] is not None:
            reader = reader.option("end-snapshot-id", str(snapshot["end"]))
    elif snapshot["kind"] != "current":
        reader = reader.option(*time_travel(spark, snapshot))
    if case["split_size"] is not None:
        reader = reader.option("split-size", str(case["split_size"]))
    df = reader.load(f"{CATALOG}.{case.get('namespace', 'db')}.{case['table']}")
    if case["spark_filter"] is not None:
        df = df.where(case["spark_filter"])
    df = df.select(*case["columns"]) if case["columns"] is not None else df
    if case.get("aggregates") is not None:  # e.g. ["min(id)", "count(*)"]: what Iceberg may answer from stats
        df = df.selectExpr(*case["aggregates"])
    return df.limit(case["limit"]) if case.get("limit") is not None else df


def read_one(spark: SparkSession, case: dict[str, Any], target: Path) -> dict[str, Any]:
    df = spark_read(spark, case)
    scratch = target.with_suffix(".scratch")
    df.coalesce(1).write.mode("overwrite").parquet(str(scratch))
    (part,) = scratch.glob("part-*.parquet")
    os.replace(part, target)
    shutil.rmtree(scratch)
    return {"spark_schema": df.schema.json()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--uri", required=True)
    parser.add_argument("--cases", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--jars", required=True)
    parser.add_argument("--conf", action="append", default=[], help="KEY=VALUE, a Spark conf")
    parser.add_argument("--metrics-header", action="append", default=[], help="NAME=VALUE for /metrics")
    args = parser.parse_args()
    conf = dict(item.split("=", 1) for item in args.conf)
    metrics_headers = dict(item.split("=", 1) for item in args.metrics_header)
    cases: list[dict[str, Any]] = json.loads(args.cases.read_text())
    (args.out / "reads").mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    spark = start_spark(args.uri, args.jars.split(","), conf)
    import pyspark

    log(f"Spark {spark.version} (pyspark {pyspark.__version__}) up in {time.perf_counter() - started:.1f}s")
    results: list[dict[str, Any]] = []
    for index, case in enumerate(cases):
        before = route_counts(args.uri, metrics_headers)
        began = time.perf_counter()
        target = args.out / "reads" / f"{index}.parquet"
        result: dict[str, Any] = {"id": case["id"], "path": str(target.relative_to(args.out))}
        try:
            result.update(read_one(spark, case, target))
        except Exception as err:  # recorded; the other cases still run
            result = {"id": case["id"], "error": f"{type(err).__name__}: {err}"[:4000]}
            result["trace"] = traceback.format_exc()[-4000:]
        result["seconds"] = round(time.perf_counter() - began, 3)
        after = route_counts(args.uri, metrics_headers)
        result["requests"] = {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}
        results.append(result)
        log(f"{index + 1}/{len(cases)} {case['id']}: {'error' if 'error' in result else 'read'}")
    result_json = {"spark_version": spark.version, "pyspark_version": pyspark.__version__, "cases": results}
    spark.stop()
    tmp = args.out / "result.json.tmp"
    tmp.write_text(json.dumps(result_json, indent=1))
    os.replace(tmp, args.out / "result.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

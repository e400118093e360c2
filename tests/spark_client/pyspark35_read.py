"""Run by test_pyspark35.py in the pyspark 3.5 venv: read the demo table with spark_client.plan_and_read.

    python pyspark35_read.py SERVICE_URL OUT_DIR

Each read case of CASES becomes OUT_DIR/<name>.parquet (Spark's writer); OUT_DIR/result.json records, per
case, the Spark version, the DataFrame's partitions, the plan's tasks and the schema. Needs only pyspark,
pyarrow, pandas, httpx and spark_client (PYTHONPATH), as a user's 3.5 cluster would.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from spark_client import PlannerClient, plan_and_read
from spark_client.client import plan_request

CASES: dict[str, dict[str, Any]] = {
    "all-small-splits": {"options": {"split-size": 4096}},
    "filtered-projected": {"filter": "region = 'eu' AND id < 450", "columns": ["amount", "id"]},
    "json-filter-tag": {"filter": {"type": "lt", "term": "id", "value": 120}, "ref": "first-load"},
    "empty": {"filter": "id < 0"},
}


def main(service_url: str, out: Path) -> None:
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")  # not INT96, 3.5's default
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    results = {}
    with PlannerClient(service_url) as client:
        for name, case in CASES.items():
            df = plan_and_read(spark, "demo.events", service_url=service_url, **case)
            plan = client.plan(plan_request("demo.events", **case))
            df.write.parquet(str(out / f"{name}.parquet"))
            results[name] = {"spark": spark.version, "partitions": df.rdd.getNumPartitions(),
                             "tasks": len(plan["tasks"]), "schema": df.schema.jsonValue()}  # fmt: skip
    spark.stop()
    (out / "result.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))

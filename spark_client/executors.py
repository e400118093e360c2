"""What plan_and_read needs of the Spark it runs on, checked in the driver before any task runs: a classic
SparkSession (Spark Connect has no sparkContext: the data source is the way there), and executors whose
Python can import the reader (pyarrow, pandas for mapInArrow, pyroaring, spark_client), said in the driver
with what to do, instead of a ModuleNotFoundError deep in a Python worker's traceback."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NEEDED = ("pyarrow", "pandas", "pyroaring", "spark_client")
_CHECKED: set[str] = set()  # applications whose executors were found fit
_LOCK = threading.Lock()

# The probe runs on an executor and must not need anything there: it is compiled here, outside any module,
# so that cloudpickle ships it by value (a function of spark_client would be pickled by reference, and
# unpickling it is what fails on an executor without spark_client).
_PROBE_SOURCE = """
def probe(_):
    import importlib
    import sys
    missing = []
    for name in NEEDED:
        try:
            importlib.import_module(name)
        except Exception as exc:
            missing.append(f"{name} ({type(exc).__name__}: {exc})")
    yield (sys.executable, "%d.%d" % sys.version_info[:2], missing)
"""


def _probe() -> Any:
    namespace: dict[str, Any] = {"__name__": "scan_planner_executor_probe", "NEEDED": NEEDED}
    exec(compile(_PROBE_SOURCE, "<scan-planner executor probe>", "exec"), namespace)
    return namespace["probe"]


class SparkConnectError(RuntimeError):
    """plan_and_read was given a Spark Connect session."""


class ExecutorEnvironmentError(RuntimeError):
    """The executors' Python cannot import what reading a plan needs."""


def require_classic(spark: Any, what: str) -> None:
    if not hasattr(spark, "sparkContext") or _is_connect(spark):
        raise SparkConnectError(
            f"{what} needs a classic SparkSession (it builds an RDD of the plan's tasks), and this one is a Spark "
            "Connect session, which has no sparkContext. Over Spark Connect read through the data source: "
            "spark.dataSource.register(ScanPlannerDataSource); spark.read.format('scan-planner')"
            ".option('service-url', ...).load('ns.table')"
        )


def _is_connect(spark: Any) -> bool:
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # pyspark without Spark Connect's dependencies: not a Connect session
        return False
    return isinstance(spark, ConnectSession)


def check_executors(spark: SparkSession) -> None:
    """Once per application: one tiny task on an executor imports what the reader needs; if it cannot, an
    ExecutorEnvironmentError says which packages are missing there and how to provide them."""
    sc = spark.sparkContext
    app = sc.applicationId
    with _LOCK:
        if app in _CHECKED:
            return
    executable, version, missing = sc.parallelize([0], 1).mapPartitions(_probe()).collect()[0]
    if missing:
        raise ExecutorEnvironmentError(
            f"Spark's executors cannot import what reading the plan needs: {'; '.join(missing)}. Their Python is "
            f"{executable} ({version}). Point PYSPARK_PYTHON (spark.pyspark.python) at a Python {version} with "
            "pyspark's [sql] extras, pyarrow and pyroaring installed, and ship the client "
            "(spark.sparkContext.addPyFile('dist/spark_client.zip') or --py-files), or pip install "
            "'scan-planner' on the workers"
        )
    with _LOCK:
        _CHECKED.add(app)

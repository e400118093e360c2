"""What plan_and_read needs of the Spark it runs on, checked in the driver before any task runs: a classic
SparkSession (Spark Connect has no sparkContext: the data source is the way there), and executors whose
Python has the reader's packages (environment.MAP_IN_ARROW_PACKAGES), said in the driver with what to do,
instead of a ModuleNotFoundError deep in a Python worker's traceback. The check is one tiny task per
application (environment.probe, pickled by value), run while the plan is being made; in local mode with
the driver's own Python as the executors', there is nothing to check.

In local mode with no Python chosen for the executors (neither `spark.pyspark.python` nor PYSPARK_PYTHON),
pyspark starts its workers with whatever `python3` is first on PATH: a script run as `.venv/bin/python job.py`
without an activated venv would have its tasks run by the system's Python, which lacks pyarrow. There the
executors are this very machine, so they are given the driver's interpreter, as `spark.pyspark.python`
would (local_executors_use_this_python)."""

from __future__ import annotations

import logging
import os
import sys
import threading
import weakref
from typing import TYPE_CHECKING, Any

from spark_client.environment import MAP_IN_ARROW_PACKAGES, ExecutorEnvironmentError, environment_message, probe

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_LOG = logging.getLogger("spark_client")
_CHECKED: set[str] = set()  # applications whose executors were found fit
_LOCK = threading.Lock()
_APPLICATIONS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()  # SparkContext -> its id


def application_id(sc: Any) -> str:
    """The Spark application's id, asked of the JVM once per SparkContext (two py4j calls each time else)."""
    known = _APPLICATIONS.get(sc)
    if known is None:
        known = _APPLICATIONS[sc] = str(sc.applicationId)
    return known


class SparkConnectError(RuntimeError):
    """plan_and_read was given a Spark Connect session."""


def require_classic(spark: Any, what: str) -> None:
    if not hasattr(spark, "sparkContext") or _is_connect(spark):
        raise SparkConnectError(
            f"{what} needs a classic SparkSession (it builds an RDD of the plan's tasks), and this one is a Spark "
            "Connect session, which has no sparkContext. Over Spark Connect read through the data source: "
            "spark.dataSource.register(ScanPlannerDataSource); spark.read.format('scan-planner')"
            ".option('service-url', ...).load('ns.table')"
        )


def _is_connect(spark: Any) -> bool:
    """Whether `spark` is a Spark Connect session, told by its class's module: importing
    pyspark.sql.connect to compare types is no option, since without grpc that import runs pyspark's
    doctest entry and exits a `python -c` program with status 0."""
    return any(cls.__module__.startswith("pyspark.sql.connect") for cls in type(spark).__mro__)


class ExecutorCheck:
    """The check of one application's executors, started before planning and finished after, so that its
    one tiny task runs while the plan is made (it finds the packages, it imports none)."""

    def __init__(self, spark: SparkSession) -> None:
        sc = spark.sparkContext
        self._app = application_id(sc)
        with _LOCK:
            checked = self._app in _CHECKED
        if not checked:  # (the first plan of the application: later ones make no py4j call here)
            local_executors_use_this_python(sc)
        if not checked and _driver_python_runs_the_tasks(sc):
            with _LOCK:
                _CHECKED.add(self._app)
            checked = True
        self._thread: threading.Thread | None = None
        self._result: tuple[str, str, list[str]] | None = None
        self._error: BaseException | None = None
        if not checked:
            self._thread = threading.Thread(
                target=self._run, args=(spark,), name="scan-planner-executor-check", daemon=True
            )
            self._thread.start()

    def _run(self, spark: SparkSession) -> None:
        try:
            self._result = spark.sparkContext.parallelize([0], 1).mapPartitions(probe).collect()[0]
        except BaseException as exc:  # the job itself failed: raised by finish()
            self._error = exc

    def finish(self) -> None:
        """Wait for the check; ExecutorEnvironmentError when the executors lack what reading needs."""
        if self._thread is None:
            return
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        executable, version, missing = self._result
        if missing:
            raise ExecutorEnvironmentError(environment_message(executable, version, missing, MAP_IN_ARROW_PACKAGES))
        with _LOCK:
            _CHECKED.add(self._app)


def local_executors_use_this_python(sc: Any) -> None:
    """A local master whose executors' Python nobody chose runs its Python tasks with this interpreter."""
    if not str(sc.master).startswith("local") or os.environ.get("PYSPARK_PYTHON"):
        return
    if sc.getConf().get("spark.pyspark.python") or getattr(sc, "pythonExec", None) == sys.executable:
        return
    _LOG.info(
        "local Spark: Python tasks run with this interpreter, %s, not %s (set spark.pyspark.python to choose)",
        sys.executable,
        sc.pythonExec,
    )
    sc.pythonExec = sys.executable


def _driver_python_runs_the_tasks(sc: Any) -> bool:
    """Local mode with this very interpreter as the executors' Python: what the driver imported (the reader
    is imported here already), they import. No task needed, and none delays the first plan."""
    master = str(sc.master)
    python = str(getattr(sc, "pythonExec", "") or "")
    return master.startswith("local") and os.path.abspath(python) == os.path.abspath(sys.executable)

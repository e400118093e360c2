"""What Spark's Python workers need to read a plan, said in words where they would otherwise fail with a
ModuleNotFoundError deep in a worker's traceback: which packages are missing, which Python the workers run
(PYSPARK_PYTHON) and how to ship the client.

Two places ask. plan_and_read runs one tiny task per application in the driver (executors.py: `probe`).
The data source runs no code in the driver at all, so each of its classes that travels to a Python worker
(the DataSource, its readers, its partitions: metaclass `WorkerChecked`) is pickled as a call of
`restore_class`, which finds the packages before it imports the class's module: a worker whose Python
lacks them raises ExecutorEnvironmentError, with the same text, instead of failing inside that import.

Those functions run where spark_client may be missing, so this module is pickled by value (cloudpickle's
register_pickle_by_value, done on import) and imports nothing at module level that a bare Python lacks.
"""

from __future__ import annotations

import copyreg
import importlib
import importlib.util
import sys
from abc import ABCMeta
from typing import Any

__all__ = ["MAP_IN_ARROW_PACKAGES", "READER_PACKAGES", "ExecutorEnvironmentError", "WorkerChecked"]

# The client's own packages, shipped together (dist/spark_client.zip, or the wheel)
CLIENT_PACKAGES = ("spark_client", "planner_client", "iceberg_io", "value_order", "read_restrictions")
# What reading a task imports on a worker (spark_client's reader, its deletes and its client for tasks
# fetched by id); pyroaring is for deletion vectors, fastavro for Avro data and delete files.
READER_PACKAGES = ("pyarrow", "numpy", "pyroaring", "fastavro", "httpx", *CLIENT_PACKAGES)
# ... and what pyspark's mapInArrow imports besides (plan_and_read)
MAP_IN_ARROW_PACKAGES = ("pyarrow", "pandas", "numpy", "pyroaring", "fastavro", "httpx", *CLIENT_PACKAGES)


class ExecutorEnvironmentError(RuntimeError):
    """Spark's executors (their Python) cannot import what reading a plan needs."""


def missing_packages(needed: tuple[str, ...]) -> list[str]:
    """The packages of `needed` this Python cannot import (found, not imported)."""
    missing = []
    for name in needed:
        try:
            found = importlib.util.find_spec(name) is not None
        except Exception as exc:  # a broken install: say how
            found, name = False, f"{name} ({type(exc).__name__}: {exc})"
        if not found:
            missing.append(name)
    return missing


def probe(_: Any, needed: tuple[str, ...] = MAP_IN_ARROW_PACKAGES) -> Any:
    """A mapPartitions function: this worker's Python, its version and what of `needed` it lacks."""
    yield sys.executable, _version(), missing_packages(needed)


def _version() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def environment_message(executable: str, version: str, missing: list[str], needed: tuple[str, ...]) -> str:
    """What is missing where, and what to do: the text of ExecutorEnvironmentError."""
    packages = [name for name in needed if name not in CLIENT_PACKAGES]
    return (
        f"Spark's executors cannot import what reading the plan needs: {', '.join(missing)} (not installed). "
        f"Their Python is {executable} ({version}). Point PYSPARK_PYTHON (spark.pyspark.python) at a Python "
        f"{version} with {', '.join(packages[:-1])} and {packages[-1]} installed, and ship the client "
        "(spark.sparkContext.addPyFile('dist/spark_client.zip') or --py-files), or pip install 'scan-planner' on "
        "the workers"
    )


def require_packages(needed: tuple[str, ...]) -> None:
    """ExecutorEnvironmentError when this Python lacks any of `needed`."""
    missing = missing_packages(needed)
    if missing:
        raise ExecutorEnvironmentError(environment_message(sys.executable, _version(), missing, needed))


def restore_class(module: str, qualname: str, needed: tuple[str, ...]) -> type:
    """Unpickling a WorkerChecked class: the packages first, then the class."""
    require_packages(needed)
    found: Any = importlib.import_module(module)
    for name in qualname.split("."):
        found = getattr(found, name)
    assert isinstance(found, type), f"{module}.{qualname} is not a class"
    return found


class WorkerChecked(ABCMeta):
    """The metaclass of classes that travel to Spark's Python workers: pickled as `restore_class`, so that a
    worker without the packages of their `worker_packages` (default READER_PACKAGES) says so."""


def _reduce_class(cls: WorkerChecked) -> tuple[Any, tuple[str, str, tuple[str, ...]]]:
    return restore_class, (cls.__module__, cls.__qualname__, getattr(cls, "worker_packages", READER_PACKAGES))


copyreg.pickle(WorkerChecked, _reduce_class)  # (cloudpickle consults copyreg for classes it pickles by name)


def _pickle_by_value() -> None:
    try:
        from pyspark import cloudpickle
    except ImportError:  # no pyspark here: nothing will pickle this module
        return
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]  # (unannotated)


_pickle_by_value()

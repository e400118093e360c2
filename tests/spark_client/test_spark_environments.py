"""plan_and_read on a Spark it cannot use as it is says so in the driver, with what to do: executors whose
Python cannot import the reader (a real local Spark whose PYSPARK_PYTHON is a bare venv), and a Spark Connect
session (a real local Spark Connect server), where the data source reads instead. Each runs in a process
of its own (spark_environments.py): a Python has one Spark."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.reference import REPO

pytest.importorskip("pyspark")
HERE = Path(__file__).resolve().parent


def run(mode: str, service: str, executors_python: str) -> dict[str, Any]:
    drop = {
        "SPARK_HOME",
        "PYSPARK_SUBMIT_ARGS",
        "SPARK_CONF_DIR",
        "PYTHONPATH",
        "SPARK_CONNECT_MODE_ENABLED",
        "SPARK_REMOTE",
    }
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env |= {"PYSPARK_PYTHON": executors_python, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run(
        [sys.executable, str(HERE / "spark_environments.py"), mode, service],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _says_what_to_do(message: str, python: Path, missing: str) -> None:
    """ExecutorEnvironmentError's text: what is missing, where (PYSPARK_PYTHON), and how to ship the client."""
    assert f"Spark's executors cannot import what reading the plan needs: {missing} (not installed)" in message
    assert f"Their Python is {python} " in message and "PYSPARK_PYTHON" in message and "spark_client.zip" in message


def test_executors_that_cannot_import_the_reader(demo_service: str, tmp_path: Path) -> None:
    """plan_and_read says so in the driver; the data source where Spark's Python worker first unpickles it (the
    worker that plans the read: PYSPARK_PYTHON too), not as a ModuleNotFoundError."""
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)  # the same Python, none of the reader's packages
    python = bare / "bin" / "python"
    result = run("bare-executors", demo_service, str(python))
    assert result["error"] == "ExecutorEnvironmentError", result
    _says_what_to_do(result["message"], python, "pyarrow, pandas, numpy, pyroaring, fastavro, httpx")
    assert result["source_error"] == "AnalysisException", result  # Spark's PYTHON_DATA_SOURCE_ERROR around ours
    assert "ExecutorEnvironmentError: " in result["source_message"], result
    assert "ModuleNotFoundError" not in result["source_message"], result
    _says_what_to_do(result["source_message"], python, "pyarrow, numpy, pyroaring, fastavro, httpx")


def test_the_data_source_unpickled_on_a_bare_executor(tmp_path: Path) -> None:
    """What an executor's Python worker does first with the data source's reader and partitions: unpickle them.
    A Python with only the worker's own path (pyspark.zip and py4j, as Spark puts them there) and none of the
    reader's packages raises ExecutorEnvironmentError for each; a full one gets the classes back."""
    import pyspark
    from pyspark import cloudpickle

    from iceberg_io import StorageConfig
    from spark_client.datasource import ScanPlannerDataSource, _Reader, _Task

    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    worker_path = sorted(str(z) for z in (Path(pyspark.__file__).parent / "python" / "lib").glob("*.zip"))
    assert len(worker_path) == 2, worker_path  # pyspark.zip, py4j-*-src.zip
    pickled = {
        "source": ScanPlannerDataSource,
        "reader": _Reader,
        "partition": _Task("task", StorageConfig.from_properties({"s3.region": "x"})),
    }
    for name, value in pickled.items():
        data: bytes = cloudpickle.dumps(value)  # type: ignore[no-untyped-call]  # pyspark's cloudpickle: unannotated
        restored = pickle.loads(data)  # here, with everything installed: the same
        assert restored is value if isinstance(value, type) else (type(restored), restored.value) == (_Task, "task")
        payload = tmp_path / f"{name}.pickle"
        payload.write_bytes(data)
        code = f"import pickle; pickle.loads(open({str(payload)!r}, 'rb').read())"
        env = {"PYTHONPATH": os.pathsep.join(worker_path), "PATH": os.environ.get("PATH", "")}
        proc = subprocess.run(
            [str(bare / "bin" / "python"), "-c", code],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode != 0, name
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith("spark_client.environment.ExecutorEnvironmentError: "), proc.stderr[-2000:]
        _says_what_to_do(
            last,
            bare / "bin" / "python",
            "pyarrow, numpy, pyroaring, fastavro, httpx, spark_client, planner_client, iceberg_io, value_order, "
            "read_restrictions",
        )


def test_spark_connect_reads_through_the_data_source(demo_service: str, demo_table: Any) -> None:
    pytest.importorskip("grpc", reason="Spark Connect needs pyspark[connect]")
    result = run("connect", demo_service, sys.executable)
    assert result["error"] == "SparkConnectError", result
    assert "Spark Connect session" in result["message"] and "spark.read.format('scan-planner')" in result["message"]
    assert result["rows"] == demo_table.scan().to_arrow().num_rows

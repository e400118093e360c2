"""plan_and_read on a Spark it cannot use as it is says so in the driver, with what to do: executors whose
Python cannot import the reader (a real local Spark whose PYSPARK_PYTHON is a bare venv), and a Spark Connect
session (a real local Spark Connect server), where the data source reads instead. Each runs in a process
of its own (spark_environments.py): a Python has one Spark."""

from __future__ import annotations

import json
import os
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
    drop = {"SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "PYTHONPATH", "SPARK_CONNECT_MODE_ENABLED",
            "SPARK_REMOTE"}  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env |= {"PYSPARK_PYTHON": executors_python, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, str(HERE / "spark_environments.py"), mode, service], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_executors_that_cannot_import_the_reader(demo_service: str, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)  # the same Python, none of the reader's packages
    result = run("bare-executors", demo_service, str(bare / "bin" / "python"))
    assert result["error"] == "ExecutorEnvironmentError", result
    message = result["message"]
    assert "import what reading the plan needs: pyarrow, pandas, pyroaring (not installed)" in message
    assert str(bare / "bin" / "python") in message and "PYSPARK_PYTHON" in message and "spark_client.zip" in message


def test_spark_connect_reads_through_the_data_source(demo_service: str, demo_table: Any) -> None:
    pytest.importorskip("grpc", reason="Spark Connect needs pyspark[connect]")
    result = run("connect", demo_service, sys.executable)
    assert result["error"] == "SparkConnectError", result
    assert "Spark Connect session" in result["message"] and "spark.read.format('scan-planner')" in result["message"]
    assert result["rows"] == demo_table.scan().to_arrow().num_rows

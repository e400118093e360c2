"""The README's PySpark section runs as printed against the demo service: its Python examples in this
process's Spark session, its spark-submit commands as a shell would run them."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.reference import REPO

pytest.importorskip("pyspark")
DEMO_URL = "http://127.0.0.1:8181"


def section() -> str:
    text = (REPO / "README.md").read_text()
    found = re.search(r"^## PySpark\n(.*?)(?=^## )", text, re.MULTILINE | re.DOTALL)
    assert found, "README has no '## PySpark' section"
    return found.group(1)


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", section(), re.MULTILINE | re.DOTALL)


def test_the_python_examples_run(spark: Any, demo_service: str) -> None:
    examples = blocks("python")
    assert len(examples) == 5 and all(DEMO_URL in e for e in examples)
    namespace: dict[str, Any] = {}
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            for example in examples:
                exec(compile(example.replace(DEMO_URL, demo_service), "README.md", "exec"), namespace)
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    assert namespace["spark"] is spark  # getOrCreate() found the session
    printed = out.getvalue()
    assert "|id|amount|" in printed.replace(" ", "")
    assert re.search(r"^300 \d+$", printed, re.MULTILINE)  # the tag's rows; the small splits' partitions
    assert "|count(*)|min(id)|max(ts)|" in printed.replace(" ", "")  # aggregate's one row
    scanned = re.search(r"^tasks [1-9]\d* eu rows (\d+)\nread (\d+)$", printed, re.MULTILINE)  # a Scan, twice
    assert scanned and scanned[1] == scanned[2] and int(scanned[1]) > 0, printed
    assert "BatchScan scan-planner" in printed and not re.search(r"\bFilter\b", printed)
    assert printed.strip().splitlines()[-1] == "34 1"  # eu ids below 100, one task


def test_spark_submit_runs_as_printed(demo_service: str) -> None:
    (commands,) = blocks("bash")
    port = demo_service.rsplit(":", 1)[1]
    script = "set -euo pipefail\n" + commands.replace("127.0.0.1:8181", f"127.0.0.1:{port}")
    drop = {"SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "PYSPARK_DRIVER_PYTHON", "PYSPARK_PYTHON"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"  # `python` is this venv's
    run = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-4000:])
    assert re.search(r"demo\.events: \d+ partitions \(one per planned task\), 300 rows", run.stdout), run.stdout
    assert "check every Arrow value" not in run.stderr  # the example sets the Arrow JVM options
    assert (REPO / "dist" / "spark_client.zip").exists() and list((REPO / "dist").glob("scan_planner-*.whl"))

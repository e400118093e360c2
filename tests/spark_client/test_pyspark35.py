"""plan_and_read on pyspark 3.5 (no Python data sources there): a subprocess in a small pyspark 3.5 venv
(pyspark35_env.py) reads the demo table through the service (pyspark35_read.py) and writes what it read to
Parquet; here, the rows must be PyIceberg's and each plan's tasks Spark's partitions."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from tests.conformance.reference import REPO
from tests.spark_client.conftest import rows
from tests.spark_client.pyspark35_env import ensure_pyspark35_env

HERE = Path(__file__).resolve().parent


def test_plan_and_read_on_pyspark_35(tmp_path: Path, demo_service: str, demo_table: Any) -> None:
    env35 = ensure_pyspark35_env()
    drop = {"SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "PYSPARK_DRIVER_PYTHON"}
    environment = {**{k: v for k, v in os.environ.items() if k not in drop}, "JAVA_HOME": env35.java_home,
                   "PYSPARK_PYTHON": str(env35.python), "PYTHONPATH": str(REPO)}  # fmt: skip
    run = subprocess.run([str(env35.python), str(HERE / "pyspark35_read.py"), demo_service, str(tmp_path)],
                         capture_output=True, text=True, env=environment, timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stderr[-5000:]
    results = json.loads((tmp_path / "result.json").read_text())
    assert {r["spark"] for r in results.values()} == {env35.pyspark_version} and env35.pyspark_version[:4] == "3.5."
    for name, result in results.items():
        assert result["partitions"] == result["tasks"], name
    assert results["all-small-splits"]["tasks"] > 10 and results["empty"]["tasks"] == 0

    first = demo_table.snapshot_by_name("first-load").snapshot_id
    expected = {
        "all-small-splits": demo_table.scan(),
        "filtered-projected": demo_table.scan(
            row_filter="region = 'eu' AND id < 450", selected_fields=("amount", "id")
        ),
        "json-filter-tag": demo_table.scan(row_filter="id < 120", snapshot_id=first),
        "empty": demo_table.scan(row_filter="id < 0"),
    }
    for name, scan in expected.items():
        ours = pq.read_table(tmp_path / f"{name}.parquet")
        theirs = scan.to_arrow()
        assert ours.column_names == [f["name"] for f in results[name]["schema"]["fields"]], name
        assert rows(ours) == rows(theirs.select(ours.column_names)), name
    assert results["filtered-projected"]["schema"]["fields"][1] == {
        "name": "id",
        "type": "long",
        "nullable": False,
        "metadata": {},
    }

"""Object store faults under the executors' reads: a Spark job (plan_and_read, tasks fetched by plan id)
whose executors reach S3 through tests/faulty_store.py, a share of the data files' reads faulted at random
(503 SlowDown, 500, resets, bodies cut short behind a matching Content-Length, slow answers). The S3 client
retries what it can; the reader reads a file that still fails again from its start, skipping the rows it
handed on (spark_client/reader.py, 3 reads in all); a task whose file fails every time is failed and retried by
Spark (local[2,4]: 4 attempts, as spark.task.maxFailures on a cluster). The job's rows are PyIceberg's, each
exactly once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.faulty_store import FaultyStore
from tests.spark_client.vended import KEY, REGION, SECRET, TABLE, vending_service

pytest.importorskip("pyspark")
ROOT = Path(__file__).resolve().parents[2]


def _job(service_url: str, storage: dict[str, str], out: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.spark_client.faulty_read", service_url, TABLE, json.dumps(storage), str(out)],
        cwd=ROOT,
        timeout=600,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def test_a_spark_job_reads_every_row_once_through_a_faulty_store(
    vended_catalog: str, vended_table: Any, s3_endpoint: str, tmp_path: Path
) -> None:
    expected = sorted(vended_table.scan().to_arrow().column("id").to_pylist())
    with (
        vending_service(tmp_path, vended_catalog, s3_endpoint, inline_task_limit=0) as url,
        FaultyStore(s3_endpoint.removeprefix("http://")) as store,
    ):
        storage = {
            "s3.endpoint": store.url,
            "s3.access-key-id": KEY,
            "s3.secret-access-key": SECRET,
            "s3.region": REGION,
        }
        store.chaos(0.25, seed=36, only=".parquet")
        result = _job(url, storage, tmp_path / "faulty.json")
        store.chaos(0)
    injected = {kind: n for kind, n in store.counts.items() if kind != "requests"}
    print(
        json.dumps(
            {"store requests": store.counts["requests"], "faults injected": injected}
            | result
            | {"ids": len(result.get("ids", []))}
        )
    )
    assert "error" not in result, result["error"]
    assert result["ids"] == expected  # every row, once
    assert sum(injected.values()) >= 5, injected

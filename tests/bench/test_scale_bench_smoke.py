"""bench/scale_bench.py still runs end to end on the tiny table of test_bench_smoke.py, without PyIceberg:
about 35 seconds alone (two JVMs, two Spark sessions, three services)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.bench.test_bench_smoke import FILES, MANIFESTS, REPO


def test_scale_bench_runs_and_both_drivers_get_their_partitions(tmp_path: Path) -> None:
    """bench/scale_bench.py on the tiny table: Java planTasks, the service over HTTP, Spark + Iceberg on
    pyspark 3.5 and plan_and_read on pyspark 4 in their own processes, the service's memory."""
    out = tmp_path / "scale.json"
    cmd = [sys.executable, str(REPO / "bench" / "scale_bench.py"), "--files", str(FILES), "--manifests"]
    cmd += [str(MANIFESTS), "--repeat", "1", "--cold-runs", "1", "--no-pyiceberg", "--heap", "1g", "--timeout", "300"]
    cmd += ["--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr[-5000:]}"

    results = json.loads(out.read_text())["results"]
    assert results["java_full"]["files"] == FILES and results["java_one"]["files"] == 1
    service = results["service"]
    assert service["full_by_id_tasks"] == results["spark_ours"]["full"]["partitions"] > 0
    assert service["full_body_bytes"] > service["full_wire_bytes"] > 0  # zstd
    iceberg, ours = results["spark_iceberg"], results["spark_ours"]
    assert iceberg["spark"].startswith("3.5.") and ours["spark"].startswith("4.")
    assert iceberg["one"]["partitions"] >= 1 and ours["one"]["partitions"] >= 1
    assert results["service_memory"]["peak_rss_bytes"] > results["service_memory"]["idle_rss_bytes"] > 0
    assert "Spark driver to partitions, warm" in proc.stdout

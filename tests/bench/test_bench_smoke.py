"""The planning benchmark still runs end to end, on a tiny table, so that bench/ cannot rot unnoticed.

It runs bench/plan_bench.py as a user would, on 2,000 data files in 4 manifests (its own cached table,
apart from the full-size one), with one warm repeat: about 25 seconds, most of it starting JVMs. The Java
environment is the conformance suite's (scripts/java_env.py), built on first use.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FILES, MANIFESTS = 2000, 4
IMPLEMENTATIONS = {"ours", "java", "java_no_pool", "pyiceberg"}


def test_plan_bench_runs_and_the_implementations_agree(tmp_path: Path) -> None:
    out = tmp_path / "latest.json"
    cmd = [sys.executable, str(REPO / "bench" / "plan_bench.py"), "--files", str(FILES), "--manifests"]
    cmd += [str(MANIFESTS), "--repeat", "1", "--timeout", "240", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr[-5000:]}"

    report = json.loads(out.read_text())
    assert report["problems"] == []
    assert report["table"]["data_files"] == FILES
    assert report["table"]["data_manifests"] == report["table"]["snapshots"] == MANIFESTS
    results = report["results"]
    assert set(results) == IMPLEMENTATIONS
    for name, result in results.items():
        assert result["files"] == FILES, name
        assert result["cold"]["plan_ms"] > 0 and result["warm"]["median_ms"] > 0, name
        assert result["peak_rss_bytes"] > 10 * 1024 * 1024, name
    assert results["ours"]["tasks"] == results["java_no_pool"]["tasks"] > 0
    assert results["java"]["iceberg_version"] == "1.10.2"
    assert set(report["ratios"]) == IMPLEMENTATIONS - {"ours"}
    assert "ours (scan-planner) plan()" in proc.stdout

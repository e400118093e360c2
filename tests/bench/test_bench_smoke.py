"""The benchmarks still run end to end, at a tiny size, so that bench/ cannot rot unnoticed (the planning
benchmarks here; test_scale_bench_smoke.py and test_read_bench_smoke.py the others, in modules of their own so
that parallel test workers share them out).

* bench/plan_bench.py as a user would run it, on 2,000 data files in 4 manifests (its own cached table,
  apart from the full-size one), with one warm repeat, in all three scenarios: the full scan, the
  selective id filter (20 files by their bounds) and the day filter (1 of 4 manifests by their partition
  summaries). About 25 seconds, most of it starting JVMs. The Java environment is the conformance
  suite's (scripts/java_env.py), built on first use.
* bench/service_bench.py on the demo table alone: a real `scan-planner serve`, one client for one
  second. About 5 seconds; it needs neither Java nor the bench table.
* bench/sturdy_bench.py on the same tiny table: 2 clients for 3 seconds, then a burst of 2 full plans.
* bench/access_bench.py on the same tiny table: 20 warm plans through each of five services (a few seconds).
* bench/restriction_bench.py on the same tiny table: 20 plans for each of three principals, two restricted;
  bench/enforcement_bench.py on a table of 32,000 rows: one restricted and one open read through Spark.
  About 15 seconds.
* bench/index_tier_bench.py on the same tiny table: services with and without the index's disk tier, restarted
  over it. About 20 seconds.
* bench/replica_bench.py on the same tiny table: 1 and 2 replicas behind HAProxy, 2 clients for 2 seconds
  of each load. About 15 seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FILES, MANIFESTS = 2000, 4
IMPLEMENTATIONS = {"ours", "java", "java_no_pool", "pyiceberg"}
# the scenarios' data files on the tiny table: 1% of the files by id; 1 day = 1 of the 4 manifests
EXPECTED_FILES = {"full": FILES, "ids": FILES // 100, "days": FILES // MANIFESTS}
EXPECTED_MANIFESTS = {"full": MANIFESTS, "ids": MANIFESTS, "days": 1}


def test_plan_bench_runs_and_the_implementations_agree(tmp_path: Path) -> None:
    out = tmp_path / "latest.json"
    cmd = [sys.executable, str(REPO / "bench" / "plan_bench.py"), "--files", str(FILES), "--manifests"]
    cmd += [str(MANIFESTS), "--repeat", "1", "--timeout", "240", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr[-5000:]}"

    report = json.loads(out.read_text())
    assert report["problems"] == []
    assert report["table"]["data_files"] == FILES
    assert report["table"]["data_manifests"] == MANIFESTS
    assert report["table"]["snapshots"] == 1  # bench/make_table.py commits 100 manifests a fast append
    assert list(report["scenarios"]) == ["full", "ids", "days"]
    for scenario, planned in report["scenarios"].items():
        results = planned["results"]
        assert set(results) == IMPLEMENTATIONS, scenario
        assert (planned["filter_json"] is None) == (scenario == "full")
        for name, result in results.items():
            assert result["files"] == EXPECTED_FILES[scenario], (scenario, name)
            assert result["filter_json"] == planned["filter_json"], (scenario, name)
            assert result["cold"]["plan_ms"] > 0 and result["warm"]["median_ms"] > 0, (scenario, name)
            assert result["peak_rss_bytes"] > 10 * 1024 * 1024, (scenario, name)
        assert results["ours"]["tasks"] == results["java_no_pool"]["tasks"] > 0, scenario
        assert results["ours"]["cold"]["manifests_read"] == EXPECTED_MANIFESTS[scenario]
        assert results["java"]["iceberg_version"] == "1.10.2"
        assert set(planned["ratios"]) == IMPLEMENTATIONS - {"ours"}
    assert "ours (scan-planner) plan()" in proc.stdout
    assert "== days: ts in [" in proc.stdout


def test_service_bench_runs_on_the_demo_table(tmp_path: Path) -> None:
    out = tmp_path / "service.json"
    cmd = [sys.executable, str(REPO / "bench" / "service_bench.py"), "--scenarios", "demo", "--clients", "1"]
    cmd += ["--duration", "1", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr[-5000:]}"

    report = json.loads(out.read_text())
    assert report["errors"] == 0
    assert list(report["scenarios"]) == ["demo"]
    demo = report["scenarios"]["demo"]
    assert demo["warm_up"]["files"] > 0 and demo["warm_up"]["tasks"] > 0
    [level] = demo["levels"]
    assert level["clients"] == 1 and level["errors"] == 0
    assert level["requests"] > 0 and level["requests_per_s"] > 0
    assert 0 < level["p50_ms"] <= level["p99_ms"]
    assert level["service_peak_rss_bytes"] > 10 * 1024 * 1024
    assert "demo" in proc.stdout and "req/s" in proc.stdout


def _on_the_tiny_table(script: str, out: Path, *args: str) -> Any:
    """bench/`script` on the tiny table with `args`, which must succeed; its --out JSON."""
    cmd = [sys.executable, str(REPO / "bench" / script), "--files", str(FILES), "--manifests", str(MANIFESTS)]
    cmd += [*args, "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr[-5000:]}"
    return json.loads(out.read_text())


def test_cold_stages_runs_on_the_tiny_table(tmp_path: Path) -> None:
    """bench/cold_stages.py: the cold plan, each stage alone and the inflate floor, on the tiny table."""
    results = _on_the_tiny_table("cold_stages.py", tmp_path / "stages.json", "--repeat", "1")
    assert results["plan"]["wall_s"] > 0 and "data_files" in results["plan"]["planner_stages_ms"]
    assert {"read", "inflate", "decode", "assemble", "split_and_pack", "json_inline"} <= results["stages_s"].keys()
    assert results["floor_s"]["floor_inflate_1_thread"] > 0


def test_access_bench_runs_on_the_tiny_table(tmp_path: Path) -> None:
    """bench/access_bench.py: the warm selective plan through services with and without access control
    (and a JWT of the OpenID provider on loopback)."""
    results = _on_the_tiny_table("access_bench.py", tmp_path / "access.json", "--repeat", "20", "--oidc")
    assert set(results["variants"]) == {"open", "tokens", "policy", "policy-1000", "oidc"}
    assert all(v["median_ms"] > 0 for v in results["variants"].values())


def test_restriction_bench_runs_on_the_tiny_table(tmp_path: Path) -> None:
    """bench/restriction_bench.py: plans of principals restricted two ways beside an unrestricted one."""
    results = _on_the_tiny_table("restriction_bench.py", tmp_path / "restrictions.json", "--repeat", "20")
    assert set(results["principals"]) == {"open", "partition", "stats"}
    assert all(p["median_ms"] > 0 and p["median_files"] > 0 for p in results["principals"].values())


def test_enforcement_bench_runs_on_a_tiny_table(tmp_path: Path) -> None:
    """bench/enforcement_bench.py: a restricted read and an open one of the same rows, through Spark."""
    out = tmp_path / "enforcement.json"
    cmd = [sys.executable, str(REPO / "bench" / "enforcement_bench.py"), "--rows", "32000", "--repeat", "1"]
    env = {**os.environ, "SCAN_PLANNER_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-5000:]
    results = json.loads(out.read_text())
    assert set(results["median_s"]) == {"open", "restricted"} and "enforcement" in proc.stdout


def test_index_tier_bench_runs_on_the_tiny_table(tmp_path: Path) -> None:
    """bench/index_tier_bench.py: plans after restarts from the tier beside the warm plan of one process."""
    results = _on_the_tiny_table("index_tier_bench.py", tmp_path / "index-tier.json", "--repeat", "1")
    assert results["tier_writes"] >= MANIFESTS and results["tier_hits"] >= MANIFESTS
    assert results["disk_bytes"] > results["disk_core_bytes"] > 0
    assert all(results[k] > 0 for k in ("restart_full_ms", "restart_one_ms", "second_full_ms", "off_warm_full_ms"))


def test_sturdy_bench_runs_on_the_tiny_table(tmp_path: Path) -> None:
    args = ("--clients", "2", "--seconds", "3", "--burst", "2")
    results = _on_the_tiny_table("sturdy_bench.py", tmp_path / "sturdy.json", *args)
    soak, burst = results["soak"], results["burst"]
    assert soak["errors"] == 0 and soak["requests"] > 0
    assert soak["health"]["checks"] > 0 and soak["health"]["errors"] == 0
    assert [a["status"] for a in burst["answers"]] == [200, 200]  # two plans fit the default admission
    assert all(a["bytes"] > 0 for a in burst["answers"])
    assert burst["peak_rss_mb"] > burst["idle_rss_mb"] > 0


def test_replica_bench_runs_behind_haproxy(tmp_path: Path) -> None:
    args = ("--replicas", "1,2", "--clients", "2", "--seconds", "2")
    runs = _on_the_tiny_table("replica_bench.py", tmp_path / "replicas.json", *args)["runs"]
    assert [(r["replicas"], r["load"]) for r in runs] == [(1, "small"), (1, "mixed"), (2, "small"), (2, "mixed")]
    assert all(r["errors"] == 0 and r["requests"] > 0 for r in runs)

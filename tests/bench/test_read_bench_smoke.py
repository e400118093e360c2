"""The read benchmarks still run end to end, at a tiny size:

* bench/read_bench.py on its three table shapes at 3,000 rows each (cached apart from the full-size ones),
  every engine (Spark + Iceberg, ours on pyspark 3.5 and 4), one timed run: every engine must deliver the
  rows the generator wrote, in every measurement. About 70 seconds (the tables' first build included).
* bench/read_ways.py on the same 3,000-row tables: both ways of a count and a projection, one run each.
  About 20 seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.bench.test_bench_smoke import REPO

# read_bench.py's measurements by table shape (written out here: a change to them should change this test)
READ_MEASUREMENTS = {
    "narrow": (("full", "noop"), ("selective", "noop"), ("selective", "count"), ("columns", "noop")),
    "wide": (("full", "noop"), ("selective", "noop"), ("selective", "count"), ("columns", "noop")),
    "wide_mor": (("full", "noop"), ("selective", "count")),
    "counts": (("selective", "count"),),
}


def test_read_bench_runs_and_every_engine_reads_every_row(tmp_path: Path) -> None:
    """Every shape (narrow, wide, wide_mor, counts) and measurement, each engine: the rows the generator wrote, the
    ratios to Spark + Iceberg reported; nothing else is asserted of the figures (they are not steady)."""
    out = tmp_path / "reads.json"
    cmd = [sys.executable, str(REPO / "bench" / "read_bench.py"), "--rows", "3000", "--repeat", "1"]
    cmd += ["--timeout", "600", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr[-5000:]}"

    report = json.loads(out.read_text())
    assert report["problems"] == []
    tables = report["tables"]
    assert set(tables) == {"narrow", "wide", "wide_mor", "counts"} == set(READ_MEASUREMENTS)
    assert tables["counts"]["rows"] == 3000 and len(tables["counts"]["columns"]) == 15
    assert tables["wide_mor"]["delete_files"] > 0 and tables["wide_mor"]["rows"] < tables["wide"]["rows"] == 3000
    expected = {f"{shape} {scan}/{action}" for shape, done in READ_MEASUREMENTS.items() for scan, action in done}
    assert set(report["summary"]) == expected
    for name, engines in report["summary"].items():
        assert set(engines) == {"iceberg", "ours35", "ours4"}, name
        for engine in ("ours35", "ours4"):
            assert engines[engine]["ratio_iceberg_over_ours"] > 0, (name, engine)
    assert "Spark + Iceberg / ours" in proc.stdout


def test_read_ways_runs_and_both_ways_agree(tmp_path: Path) -> None:
    out = tmp_path / "ways.json"
    cmd = [sys.executable, str(REPO / "bench" / "read_ways.py"), "--rows", "3000", "--repeat", "1", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr[-5000:]}"

    results = json.loads(out.read_text())["results"]
    assert set(results) == {"narrow", "wide"}
    for ways in results.values():
        assert set(ways) == {"count, naive", "count, aggregate()", "columns, naive", "columns, columns="}
        assert ways["count, naive"]["rows"] == ways["count, aggregate()"]["rows"] > 0
        assert all(way["wall_s"] > 0 for way in ways.values())

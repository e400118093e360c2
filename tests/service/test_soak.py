"""A short soak (tests/soak.py): four clients sending a mix of whole plans, plans by id and their tasks, and
the explorer's explained plans over every conformance table, with caches far smaller than the working set,
for 45 s. After the first 15 s (warm-up: caches filled, threads started), the service's RSS, open files
and threads stay flat and no request fails: a leak of memory, files or threads fails this test.
bench/soak_bench.py runs the same for 30 minutes."""

from __future__ import annotations

import json
from dataclasses import asdict

from planner_service.catalog.base import load_by_metadata_location
from planner_service.io.fileio import FileIO
from tests.conformance.reference import Conformance
from tests.conftest import running_service
from tests.hostile.fuzzing import service_pid
from tests.soak import soak

MIB = 1024 * 1024
SECONDS, EVERY, WARM_UP = 45, 4, 15


def _has_long_id(conformance: Conformance, name: str) -> bool:
    """Whether the table's current schema has a top-level `id` of an integer type (what the mix filters on)."""
    table = load_by_metadata_location(FileIO(), conformance.tables[name]["metadata_location"])
    return any(f.name == "id" and str(f.type) in ("int", "long") for f in table.metadata.schema.fields)


def test_mixed_load_leaks_nothing(conformance: Conformance) -> None:
    env = {"SCAN_PLANNER_CACHE_BYTES": str(2 * MIB), "SCAN_PLANNER_PLAN_CACHE_BYTES": str(MIB // 2)}
    with running_service("--warehouse", str(conformance.dir / "warehouse"), env=env) as url:
        tables = [f"db.{name}" for name in sorted(conformance.tables) if _has_long_id(conformance, name)]
        result = soak(url, service_pid(url), tables, SECONDS, EVERY)
    print(json.dumps([asdict(s) for s in result.samples]))
    assert result.failures == [], result.failures[:5]
    steady = result.after(WARM_UP)
    assert len(steady) >= 6 and all(s.requests > 0 for s in steady)
    rss = [s.rss_bytes for s in steady]
    files = [s.open_files for s in steady]
    threads = [s.threads for s in steady]
    assert max(rss) - rss[0] < 16 * MIB, [r // MIB for r in rss]
    assert max(files) - min(files) <= 8, files
    assert max(threads) - min(threads) <= 6, threads

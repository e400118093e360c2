"""Our plans against Iceberg Java 1.10.2's on seeded random table histories and requests (the differential
fuzzer; docs/development.md says how it works and how to run it long): a short tier in every run, through
the index's disk tier, and a longer one, without it, in the `long` tier; a share of the requests also compare
their task grouping and rows with Spark + Iceberg's reads, and their rows under a random read restriction with
Spark SQL's (spark_reads.py). Java's answers are recorded once per content of the generator (recorded.py); a
warm run only plans on our side. A divergence fails the test with the seed and request to rerun and shrink it
with `python -m tests.differential.run --seed S --minutes 0 --size long|short`; divergences already saved
under findings/ (fuzz.KNOWN) are counted, not failed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner_service.io.fileio import FileIO
from planner_service.planning.index_tier import IndexTier
from planner_service.planning.planner import ScanPlanner
from tests.differential.fuzz import Judged, judge
from tests.differential.recorded import Tier, load_tier

pytestmark = [pytest.mark.java, pytest.mark.spark]

SHORT = Tier("short", first_seed=1, histories=6, requests=20, size="short")
LONG = Tier("long", first_seed=100, histories=16, requests=25, size="long")


@pytest.mark.parametrize("tier", [SHORT, pytest.param(LONG, marks=pytest.mark.long)], ids=lambda t: t.name)
def test_our_plans_match_iceberg_java_on_random_histories(tier: Tier, tmp_path: Path) -> None:
    """The short run plans through the index's disk tier, with a manifest cache that holds nothing: manifests
    and snapshots come back from the tier's files between requests (the long run plans without it)."""
    recorded = load_tier(tier)
    if tier is SHORT:
        planner = ScanPlanner(FileIO(), cache_bytes=1, tier=IndexTier(tmp_path / "index", 10**10, b"d" * 32))
    else:
        planner = ScanPlanner(FileIO())
    total = Judged()
    try:
        for history in recorded:
            total.add(judge(planner, history))
    finally:
        planner.close()
    if tier is SHORT:
        assert planner.manifests.tier is not None and planner.manifests.tier.stats.hits > 0
    built = sum(1 for r in recorded if r.metadata_location is not None)
    assert built == tier.histories, "Spark refused a history's create five times"
    assert total.requests >= tier.histories * tier.requests * 0.7, "too many requests could not be resolved"
    assert total.grouped >= tier.histories * 2, "too few requests' task groups were compared with Spark's"
    assert total.read >= tier.histories, "too few requests' rows were compared with Spark's"
    assert total.restricted >= tier.histories // 2, "too few restricted reads were compared with Spark SQL's"
    found = [{k: f[k] for k in ("seed", "request_number", "finding", "request")} for f in total.findings]
    assert not found, json.dumps(found[:5], indent=1)

"""Plans from the index's disk tier equal Iceberg Java 1.10.2's, case by case, on the tables Iceberg wrote:
every case by a planner that decodes and writes the tier, then every case again by a fresh planner (a
restart, another worker) that reads each manifest from it and decodes none; and every case by a planner whose
manifest cache holds almost nothing, so that manifests go and come back from the tier between plans."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from planner_service.io.fileio import FileIO
from planner_service.planning.index_tier import IndexTier
from planner_service.planning.planner import ScanPlanner
from tests.conformance.cases import CASES
from tests.conformance.reference import Conformance
from tests.conformance.test_java_parity import _check_case

KEY = b"t" * 32


class CountingIO(FileIO):
    """FileIO that counts the manifests it reads."""

    def __init__(self) -> None:
        super().__init__()
        self.manifests: Counter[str] = Counter()

    def read_checked(self, location: str, parse, length=None):  # type: ignore[no-untyped-def]
        if length is not None:  # (a manifest: its length comes from its manifest list)
            self.manifests[location] += 1
        return super().read_checked(location, parse, length)


def _planner(io: FileIO, root: Path, cache_bytes: int = 512 * 1024**2) -> ScanPlanner:
    return ScanPlanner(io, cache_bytes=cache_bytes, threads=2, tier=IndexTier(root, 10**10, KEY))


def test_plans_read_from_the_tier_match_iceberg_java(conformance: Conformance, tmp_path: Path) -> None:
    writing = _planner(FileIO(), tmp_path)
    try:
        for case in CASES:
            _check_case(conformance, writing, case["id"])
        assert writing.manifests.tier is not None
        writing.manifests.tier.flush()
        assert writing.manifests.tier.stats.writes > 0
    finally:
        writing.close()
    io = CountingIO()
    reading = _planner(io, tmp_path)
    try:
        for case in reversed(CASES):
            _check_case(conformance, reading, case["id"])
        tier = reading.manifests.tier
        assert tier is not None and tier.stats.hits > 0 and tier.stats.rejected == 0
        # a manifest that decodes only with an error (a corrupt case) is never written: those are read again
        assert sum(io.manifests.values()) <= tier.stats.misses, io.manifests.most_common(5)
    finally:
        reading.close()


@pytest.mark.parametrize("cache_bytes", [1, 64 * 1024])
def test_plans_whose_manifests_come_back_from_the_tier_match_iceberg_java(
    conformance: Conformance, tmp_path: Path, cache_bytes: int
) -> None:
    planner = _planner(FileIO(), tmp_path, cache_bytes)
    try:
        for case in CASES:
            _check_case(conformance, planner, case["id"])
        assert planner.manifests.tier is not None
        planner.manifests.tier.flush()
        for case in CASES:
            _check_case(conformance, planner, case["id"])
        assert planner.manifests.tier.stats.hits > 0
    finally:
        planner.close()

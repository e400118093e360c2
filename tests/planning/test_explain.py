"""explain's words for a kept file and its order of files, on conformance tables planned in process: a kept
file names its evidence (the partition value that matched, the column bounds and counts that leave a match
possible, what its rows are still checked against, or the partition that decides every row), each value
read here from the table's own manifests with fastavro, not from the planner; a kept manifest names its
partition summaries as read from the manifest list. Files listed kept first are the same files, the kept
ones (in planning order) before the skipped ones, whatever the window."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import fastavro
import pytest

from planner_service.catalog.base import load_by_metadata_location
from planner_service.io.fileio import FileIO
from planner_service.planning.explain import Explain
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import scan_request
from tests.conformance.reference import Conformance

DELETED = 2  # a manifest entry's status: not a live file


@dataclass(frozen=True)
class ManifestFile:
    """A data file as its manifest entry records it: its partition and its column statistics by field id."""

    partition: dict[str, Any]
    lower: dict[int, bytes]
    upper: dict[int, bytes]
    values: dict[int, int]
    nulls: dict[int, int]


def _by_id(pairs: list[dict[str, Any]] | None) -> dict[int, Any]:
    return {pair["key"]: pair["value"] for pair in pairs or ()}


def _records(avro_file: str) -> list[dict[str, Any]]:
    with open(avro_file, "rb") as f:
        return [cast(dict[str, Any], record) for record in fastavro.reader(f)]


def _current_manifests(metadata_location: str) -> list[dict[str, Any]]:
    """The manifest list entries of the table's current snapshot."""
    meta = json.loads(Path(metadata_location).read_text())
    snapshot = next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])
    return _records(snapshot["manifest-list"])


def _live_files(metadata_location: str) -> dict[str, ManifestFile]:
    """The current snapshot's live data files, by path, as the manifests record them."""
    out = {}
    for manifest in _current_manifests(metadata_location):
        for entry in _records(manifest["manifest_path"]):
            f = entry["data_file"]
            if entry["status"] != DELETED:
                out[f["file_path"]] = ManifestFile(
                    f["partition"],
                    _by_id(f["lower_bounds"]),
                    _by_id(f["upper_bounds"]),
                    _by_id(f["value_counts"]),
                    _by_id(f["null_value_counts"]),
                )
    return out


def _long(raw: bytes) -> int:
    (value,) = struct.unpack("<q", raw)  # the spec's single-value serialization: 8 bytes, little-endian
    return int(value)


def _counted(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _id_stats(f: ManifestFile, field_id: int = 1) -> str:
    """`id: lower..upper, N values, M nulls`, from the manifest's bounds and counts of the long column id."""
    bounds = f"{_long(f.lower[field_id])}..{_long(f.upper[field_id])}"
    return f"id: {bounds}, {_counted(f.values[field_id], 'value')}, {_counted(f.nulls[field_id], 'null')}"


@pytest.fixture(scope="module")
def planner() -> Iterator[ScanPlanner]:
    planner = ScanPlanner(FileIO())
    yield planner
    planner.close()


def _explained(conformance: Conformance, planner: ScanPlanner, table: str, filter_: str) -> tuple[Explain, str]:
    location = conformance.tables[table]["metadata_location"]
    plan = planner.plan(load_by_metadata_location(planner.io, location), scan_request(filter=filter_, explain=True))
    assert plan.explain is not None
    return plan.explain, location


def test_a_kept_file_names_its_partition_and_the_bounds_left_to_check(
    conformance: Conformance, planner: ScanPlanner
) -> None:
    """identity_part is partitioned by category: a kept file of category 'a' matched by its partition value,
    and its ids (bounds and counts as its manifest entry records them) may be under 5."""
    explain, location = _explained(conformance, planner, "identity_part", "category = 'a' AND id < 5")
    recorded = _live_files(location)
    kept = [f for f in explain.data_files() if f["kept"]]
    assert kept
    for f in kept:
        entry = recorded[f["file-path"]]
        assert entry.partition == {"category": "a"}
        assert f["rule"] == "might-match"
        assert f["reason"] == (
            f"may match category = 'a' AND id < 5: partition (category = 'a'); {_id_stats(entry)}; "
            "each row is checked against id < 5"
        )


def test_a_kept_file_of_an_unpartitioned_table_names_its_bounds(conformance: Conformance, planner: ScanPlanner) -> None:
    explain, location = _explained(conformance, planner, "unpartitioned", "id < 25")
    recorded = _live_files(location)
    kept = [f for f in explain.data_files() if f["kept"]]
    assert kept and len(kept) < len(recorded)  # (some files are skipped by their bounds: the filter decides)
    for f in kept:
        entry = recorded[f["file-path"]]
        assert _long(entry.lower[1]) < 25  # what leaves a match possible
        assert f["reason"] == f"may match id < 25: {_id_stats(entry)}; each row is checked against id < 25"


def test_a_file_whose_partition_decides_every_row_says_so(conformance: Conformance, planner: ScanPlanner) -> None:
    """category = 'a' on a table partitioned by category: the residual is true, no row is checked."""
    explain, location = _explained(conformance, planner, "identity_part", "category = 'a'")
    recorded = _live_files(location)
    kept = [f for f in explain.data_files() if f["kept"]]
    assert {f["file-path"] for f in kept} == {p for p, e in recorded.items() if e.partition == {"category": "a"}}
    for f in kept:
        assert f["reason"] == (
            "every row matches category = 'a': partition (category = 'a') decides it; rows are not checked"
        )


def test_a_kept_manifest_names_its_partition_summaries(conformance: Conformance, planner: ScanPlanner) -> None:
    """The summaries of category as the manifest list records them (bounds as UTF-8, whether nulls occur)."""
    explain, location = _explained(conformance, planner, "identity_part", "category = 'a' AND id < 5")
    summaries = {}
    for m in _current_manifests(location):
        (category,) = m["partitions"]
        nulls = "may hold nulls" if category["contains_null"] else "no nulls"
        bounds = f"'{category['lower_bound'].decode()}'..'{category['upper_bound'].decode()}'"
        summaries[m["manifest_path"]] = f"partition summaries (category: {bounds}, {nulls}) may match category = 'a'"
    assert {m["manifest-path"]: m["reason"] for m in explain.manifests} == summaries

    explain, _ = _explained(conformance, planner, "identity_part", "id < 5")  # nothing said of the partition
    assert {m["reason"].split(" (")[0] for m in explain.manifests} == {"the filter sets no condition on the partition"}
    explain, _ = _explained(conformance, planner, "unpartitioned", "id < 5")
    assert {m["reason"] for m in explain.manifests} == {"unpartitioned: no partition summaries to rule it out"}


@pytest.mark.parametrize(("start", "stop"), [(0, None), (0, 3), (1, 4), (2, 7), (5, 9), (0, 1000), (40, 50)])
def test_kept_first_lists_the_kept_files_then_the_skipped(
    conformance: Conformance, planner: ScanPlanner, start: int, stop: int | None
) -> None:
    explain, _ = _explained(conformance, planner, "identity_part", "category = 'a' AND id < 5")
    every = explain.data_files()
    ordered = [f for f in every if f["kept"]] + [f for f in every if not f["kept"]]
    assert 0 < sum(f["kept"] for f in every) < len(every)
    assert explain.data_files(start, stop, kept_first=True) == ordered[start:stop]
    assert explain.data_files(start, stop) == every[start:stop]  # (planning order without kept_first)
    skipped = [f for f in every if f["rule"] == "partition-value"]
    assert explain.data_files(start, stop, "partition-value", kept_first=True) == skipped[start:stop]

"""A manifest shorter than the length its manifest list records is refused (Iceberg Java reads a manifest as
a file of that length and fails at its end): one cut at a block boundary is still valid Avro, of fewer
entries, and would otherwise plan fewer files without a word."""

from __future__ import annotations

import io

import fastavro
import pytest

from planner_service.catalog.base import load_by_metadata_location
from planner_service.errors import CorruptMetadataError
from planner_service.io.fileio import FileIO
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import scan_request
from tests.conformance.reference import Conformance


class CutFileIO(FileIO):
    """Reads `cut` as its header alone (up to the first sync marker): valid Avro of no entries, as a store
    that lost the manifest's blocks would serve it."""

    def __init__(self, cut: str) -> None:
        super().__init__()
        self.cut = cut

    def read_once(self, location: str, length: int | None = None) -> bytes:
        data = super().read_once(location, length)
        if location != self.cut:
            return data
        sync = data[-16:]  # every block ends with the file's sync marker, and so does the header
        header = data[: data.index(sync) + 16]
        assert list(fastavro.reader(io.BytesIO(header))) == [] and list(fastavro.reader(io.BytesIO(data)))
        return header


def test_a_manifest_shorter_than_recorded_is_corrupt(conformance: Conformance) -> None:
    location = conformance.tables["many_manifests"]["metadata_location"]
    planner = ScanPlanner(FileIO())
    table = load_by_metadata_location(planner.io, location)
    snapshot = table.metadata.current_snapshot
    assert snapshot is not None
    # the manifest of the most files: one read as its first entry only
    manifests = planner.manifests.manifest_list(snapshot)
    entries = {m.manifest_path: (m.added_files_count or 0) + (m.existing_files_count or 0) for m in manifests}
    target = max(entries, key=lambda p: entries[p])
    assert entries[target] > 1
    cut = ScanPlanner(CutFileIO(target))
    with pytest.raises(CorruptMetadataError, match=r"shorter than the [\d,]+ its manifest list records"):
        cut.plan(load_by_metadata_location(cut.io, location), scan_request())

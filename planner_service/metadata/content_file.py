"""Data and delete files as planning sees them (spec: "Manifests", data_file struct)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# FileContent: what a file holds (spec: data_file.content), not a manifest's (manifest_list.py)
DATA_FILE, POSITION_DELETES, EQUALITY_DELETES = 0, 1, 2
CONTENT_NAMES = {DATA_FILE: "data", POSITION_DELETES: "position-deletes", EQUALITY_DELETES: "equality-deletes"}
SPLITTABLE_FORMATS = frozenset({"PARQUET", "ORC", "AVRO"})

Stats = dict[int, Any]


@dataclass(slots=True, eq=False)  # identity equality, as Java's GenericDataFile (mergeTasks relies on it)
class ContentFile:
    content: int
    path: str
    format: str  # upper case: PARQUET, AVRO, ORC, PUFFIN
    spec_id: int
    partition: tuple[Any, ...]  # internal values in partition-spec order
    record_count: int
    file_size_in_bytes: int
    data_sequence_number: int | None
    file_sequence_number: int | None
    snapshot_id: int | None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None
    column_sizes: Stats | None = None
    value_counts: Stats | None = None
    null_value_counts: Stats | None = None
    nan_value_counts: Stats | None = None
    lower_bounds: Stats | None = None  # field id -> raw single-value bytes
    upper_bounds: Stats | None = None

    @property
    def is_dv(self) -> bool:
        return self.content == POSITION_DELETES and self.format == "PUFFIN"

    @property
    def content_size(self) -> int:
        """Bytes a reader processes (ScanTaskUtil.contentSizeInBytes): a DV's blob, else the whole file."""
        if self.is_dv and self.content_size_in_bytes is not None:
            return self.content_size_in_bytes
        return self.file_size_in_bytes

"""Content files in the Iceberg REST spec's DataFile / DeleteFile JSON forms (1.11 spelling: lower-case
content and format, partition as a list of JSON single values), one object per file. Used where files
travel one by one (the REST scan pages, delete files); /plan encodes its data files from columns."""

from __future__ import annotations

from typing import Any

from planner_service.json_text import without_nulls
from planner_service.metadata.content_file import CONTENT_NAMES, DATA_FILE, ContentFile
from planner_service.metadata.json_values import to_json_value
from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.types import Schema, StructType


class ContentFileEncoder:
    """Encodes content files; partition types are derived once per spec."""

    def __init__(
        self, specs: dict[int, PartitionSpec], schema: Schema, stats_ids: frozenset[int] | None = None
    ) -> None:
        self._types = partition_types(specs, schema)
        self._stats_ids = stats_ids  # the columns whose stats data files carry (REST stats-fields)
        self._memo: dict[int, dict[str, Any]] = {}  # id(file) -> JSON; a file split in many tasks is encoded once

    def encode(self, f: ContentFile) -> dict[str, Any]:
        out = self._memo.get(id(f))
        if out is None:
            out = self._memo[id(f)] = self._encode(f)
        return out

    def _encode(self, f: ContentFile) -> dict[str, Any]:
        data = f.content == DATA_FILE
        out = without_nulls(
            {
                "spec-id": f.spec_id,
                "content": CONTENT_NAMES[f.content],
                "file-path": f.path,
                "file-format": f.format.lower(),
                "partition": partition_json(self._types, f.spec_id, f.partition),
                "file-size-in-bytes": f.file_size_in_bytes,
                "record-count": f.record_count,
                "split-offsets": None if f.split_offsets is None else list(f.split_offsets),
                "sort-order-id": f.sort_order_id,
                "key-metadata": None if f.key_metadata is None else bytes(f.key_metadata).hex().upper(),
                "first-row-id": f.first_row_id if data else None,  # the rest: delete files only
                "equality-ids": None if data or f.equality_ids is None else list(f.equality_ids),
                "referenced-data-file": None if data else f.referenced_data_file,
                "content-offset": None if data else f.content_offset,
                "content-size-in-bytes": None if data else f.content_size_in_bytes,
                "sequence-number": f.data_sequence_number,
            }
        )
        if self._stats_ids is not None and data:
            out |= _stats_json(f, self._stats_ids)
        return out


class DeleteFileTable:
    """A response's `delete-files`: each delete file encoded once, referred to by its index."""

    def __init__(self, encoder: ContentFileEncoder) -> None:
        self._encoder = encoder
        self._index: dict[int, int] = {}  # id(delete file) -> its index in `files`
        self.files: list[dict[str, Any]] = []

    def ref(self, d: ContentFile) -> int:
        index = self._index.get(id(d))
        if index is None:
            index = self._index[id(d)] = len(self.files)
            self.files.append(self._encoder.encode(d))
        return index


_STATS_JSON = (
    ("value-counts", "value_counts", False),
    ("null-value-counts", "null_value_counts", False),
    ("nan-value-counts", "nan_value_counts", False),
    ("lower-bounds", "lower_bounds", True),
    ("upper-bounds", "upper_bounds", True),
)


def _stats_json(f: ContentFile, ids: frozenset[int]) -> dict[str, Any]:
    """The file's column stats for `ids`, as ContentFileParser writes a file that includeColumnStats kept
    them for: {"keys": [...], "values": [...]} maps, bounds as the upper-case hex of their bytes."""
    out: dict[str, Any] = {}
    for key, attribute, binary in _STATS_JSON:
        stats = getattr(f, attribute)
        if stats is None:
            continue
        kept = sorted(i for i in stats if i in ids)
        values = [bytes(stats[i]).hex().upper() if binary else stats[i] for i in kept]
        out[key] = {"keys": kept, "values": values}
    return out


def partition_types(specs: dict[int, PartitionSpec], schema: Schema) -> dict[int, StructType]:
    return {spec_id: spec.partition_type(schema) for spec_id, spec in specs.items()}


def partition_json(types: dict[int, StructType], spec_id: int, values: tuple[Any, ...]) -> list[Any]:
    """A partition tuple (internal values) as the spec's JSON list of single values."""
    ptype = types.get(spec_id, StructType(()))
    return [to_json_value(fld.type, v) for fld, v in zip(ptype.fields, values, strict=False)]

"""Manifest lists: one ManifestFile per manifest of a snapshot (spec: "Manifest Lists")."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import fastavro

from planner_service.errors import CorruptMetadataError
from planner_service.io.fileio import MAX_INFLATED_BYTES
from planner_service.metadata.avro_columns import AvroError, Container, read_container
from planner_service.metadata.avro_schema import names_by_field_id, record_of

# ManifestContent: what a manifest lists (spec: manifest_file.content), not a file's (content_file.py)
DATA_MANIFEST, DELETE_MANIFEST = 0, 1


@dataclass(frozen=True, slots=True)
class FieldSummary:
    contains_null: bool
    contains_nan: bool | None
    lower_bound: bytes | None
    upper_bound: bytes | None


@dataclass(frozen=True, slots=True)
class ManifestFile:
    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    content: int  # DATA_MANIFEST or DELETE_MANIFEST
    sequence_number: int  # 0 for v1 manifest lists
    min_sequence_number: int
    added_snapshot_id: int | None
    added_files_count: int | None
    existing_files_count: int | None
    deleted_files_count: int | None
    added_rows_count: int | None
    existing_rows_count: int | None
    deleted_rows_count: int | None
    partitions: tuple[FieldSummary, ...] | None
    key_metadata: bytes | None = None
    first_row_id: int | None = None

    @property
    def has_added_or_existing_files(self) -> bool:
        """Java: a null count means "may have files" (GenericManifestFile.hasAddedFiles/hasExistingFiles)."""
        added = self.added_files_count is None or self.added_files_count > 0
        existing = self.existing_files_count is None or self.existing_files_count > 0
        return added or existing


def read_manifest_list(data: bytes, location: str, max_inflated: int = MAX_INFLATED_BYTES) -> list[ManifestFile]:
    """The manifest list's ManifestFiles. Its blocks inflate into at most `max_inflated` bytes in all, and
    each must hold exactly the records it declares (avro_columns.read_container, then record by record)."""
    try:
        container = read_container(data, max_inflated)
        schema = container.schema
        records = _records(container, fastavro.parse_schema(schema))
    except (AvroError, ValueError) as exc:
        raise CorruptMetadataError(f"Cannot decode manifest list {location}: {exc}") from None
    except Exception as exc:  # fastavro raises many kinds on garbage input
        raise CorruptMetadataError(f"Cannot decode manifest list {location}: {type(exc).__name__}: {exc}") from None
    names = names_by_field_id(schema)
    summary_names: dict[int, str] = {}
    if 507 in names:
        part_field = next(f for f in schema["fields"] if f["name"] == names[507])
        summary_names = _summary_names(part_field["type"])
    try:
        manifests = [_manifest_file(r, names, summary_names) for r in records]
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptMetadataError(f"Invalid manifest list {location}: missing or bad field {exc}") from None
    for m in manifests:
        problem = manifest_problem(m)
        if problem is not None:
            raise CorruptMetadataError(f"Invalid manifest list {location}: {problem}")
    return manifests


_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_INTS = ("partition_spec_id", "added_files_count", "existing_files_count", "deleted_files_count")
_COUNTS = (
    "added_files_count",
    "existing_files_count",
    "deleted_files_count",
    "added_rows_count",
    "existing_rows_count",
    "deleted_rows_count",
)


def manifest_problem(m: ManifestFile) -> str | None:
    """What makes a manifest list's record impossible, or None: an empty path, a negative length, count or
    sequence number, a minimum sequence number above the manifest's own, an unknown content code. Java
    reads such records as they are (a negative added_files_count makes it skip the manifest's new files)."""
    if not m.manifest_path:
        return "a record has an empty manifest_path"
    named = f"manifest {m.manifest_path} has"
    if m.content not in (DATA_MANIFEST, DELETE_MANIFEST):
        return f"{named} content {m.content}, neither data (0) nor deletes (1)"
    if m.key_metadata is not None:
        return f"manifest {m.manifest_path} is encrypted (key_metadata), which this service cannot read"
    if m.manifest_length < 0:
        return f"{named} manifest_length {m.manifest_length}"
    for name in _INTS:  # Avro ints: fastavro reads any varint, Java refuses one past 32 bits
        value = getattr(m, name)
        if value is not None and not _INT_MIN <= value <= _INT_MAX:
            return f"{named} {name} {value}, out of an int's range"
    for name in _COUNTS:
        value = getattr(m, name)
        if value is not None and value < 0:
            return f"{named} {name} {value}"
    if m.sequence_number < 0 or m.min_sequence_number < 0:
        return f"{named} sequence_number {m.sequence_number}, min_sequence_number {m.min_sequence_number}"
    if m.min_sequence_number > m.sequence_number:
        return f"{named} min_sequence_number {m.min_sequence_number} above its sequence_number {m.sequence_number}"
    return None


def _records(container: Container, schema: Any) -> list[Any]:
    """Each block's records: as many as it declares (each takes a byte at least), and nothing left after."""
    out: list[Any] = []
    for block, count in container.blocks:
        if count < 0 or count > len(block):
            raise AvroError(f"a block of {len(block):,} bytes declares {count:,} records")
        stream = io.BytesIO(block)
        out.extend(fastavro.schemaless_reader(stream, schema, None) for _ in range(count))
        if stream.tell() != len(block):
            raise AvroError(f"a block's records end {len(block) - stream.tell():,} bytes before the block does")
    return out


def _summary_names(part_type: object) -> dict[int, str]:
    # partitions: ["null", {"type": "array", "items": record}] or the array itself
    branches = part_type if isinstance(part_type, list) else [part_type]
    for b in branches:
        if isinstance(b, dict) and b.get("type") == "array":
            rec = record_of(b["items"])
            if rec is not None:
                return names_by_field_id(rec)
    return {}


def _manifest_file(rec: dict[str, Any], names: dict[int, str], summary_names: dict[int, str]) -> ManifestFile:
    def get(field_id: int) -> Any:
        return rec.get(names[field_id]) if field_id in names else None

    parts = get(507)
    summaries = None
    if parts is not None:
        summaries = tuple(
            FieldSummary(
                contains_null=bool(p.get(summary_names.get(509, "contains_null"))),
                contains_nan=p.get(summary_names.get(518, "contains_nan")),
                lower_bound=p.get(summary_names.get(510, "lower_bound")),
                upper_bound=p.get(summary_names.get(511, "upper_bound")),
            )
            for p in parts
        )
    path = get(500)
    if not isinstance(path, str):
        raise TypeError("manifest_path")
    return ManifestFile(
        manifest_path=path,
        manifest_length=int(get(501)),
        partition_spec_id=int(get(502) or 0),
        content=int(get(517) or DATA_MANIFEST),
        sequence_number=int(get(515) or 0),  # absent in v1: sequence number 0
        min_sequence_number=int(get(516) or 0),
        added_snapshot_id=get(503),
        added_files_count=get(504),
        existing_files_count=get(505),
        deleted_files_count=get(506),
        added_rows_count=get(512),
        existing_rows_count=get(513),
        deleted_rows_count=get(514),
        partitions=summaries,
        key_metadata=get(519),
        first_row_id=get(520),
    )

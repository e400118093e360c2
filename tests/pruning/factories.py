"""Inputs of the pruning evaluators, built as Iceberg Java's tests build theirs.

Java's TestHelpers.TestManifestFile / TestFieldSummary become `manifest()` / `summary()`; TestDataFile
becomes `data_file()`, and `stats_columns()` lays several of them out as the columnar statistics the
planner prunes a manifest's files with: one row per file, `record_count` and the five statistics maps as
the list<struct<key, value>> columns of the decoded manifest (metadata/file_index.py CANONICAL_SCHEMA).

Bounds are written in Iceberg's single-value binary form (spec Appendix D) by the small encoders here,
not by the planner's own conversions, so that an encoding bug cannot hide behind a matching decoding bug.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import polars as pl

from planner_service.metadata.file_index import CANONICAL_SCHEMA, STATS_COLUMNS
from planner_service.metadata.manifest_list import DATA_MANIFEST, FieldSummary, ManifestFile
from planner_service.metadata.partitioning import PARTITION_DATA_ID_START, PartitionField, PartitionSpec, Transform
from planner_service.metadata.stats_columns import StatsColumns
from planner_service.metadata.types import IcebergType, NestedField, PrimitiveType, Schema, StructType

# -- schemas and specs ------------------------------------------------------------------------------------


def required(field_id: int, name: str, typ: str | IcebergType) -> NestedField:
    return NestedField(field_id, name, PrimitiveType(typ) if isinstance(typ, str) else typ, True)


def optional(field_id: int, name: str, typ: str | IcebergType) -> NestedField:
    return NestedField(field_id, name, PrimitiveType(typ) if isinstance(typ, str) else typ, False)


def struct_of(*fields: NestedField) -> StructType:
    return StructType(tuple(fields))


def schema(*fields: NestedField) -> Schema:
    return Schema(0, StructType(tuple(fields)))


def identity_spec(table_schema: Schema, *names: str, spec_id: int = 0) -> PartitionSpec:
    """PartitionSpec.builderFor(schema).identity(name)...: partition field ids from 1000, named as the column."""
    fields = []
    for position, name in enumerate(names):
        source = table_schema.find_field_by_name(name)
        assert source is not None, name
        fields.append(PartitionField(source.field_id, PARTITION_DATA_ID_START + position, name, Transform("identity")))
    return PartitionSpec(spec_id, tuple(fields))


# -- single-value binary form (spec Appendix D; Java Conversions.toByteBuffer) ------------------------------


def int_bytes(value: int) -> bytes:
    return struct.pack("<i", value)


def long_bytes(value: int) -> bytes:
    return struct.pack("<q", value)


def float_bytes(value: float) -> bytes:
    return struct.pack("<f", value)


def double_bytes(value: float) -> bytes:
    return struct.pack("<d", value)


def str_bytes(value: str) -> bytes:
    return value.encode("utf-8")


# -- manifest summaries (TestHelpers.TestFieldSummary, TestManifestFile) -----------------------------------


def summary(
    contains_null: bool, lower: bytes | None = None, upper: bytes | None = None, contains_nan: bool | None = None
) -> FieldSummary:
    return FieldSummary(contains_null, contains_nan, lower, upper)


def manifest(
    partitions: tuple[FieldSummary, ...] | None,
    added_files: int | None = 5,
    existing_files: int | None = 10,
    deleted_files: int | None = 0,
    spec_id: int = 0,
) -> ManifestFile:
    """A data manifest as Java's `new TestManifestFile(path, 1024, specId, snapshotId, added, existing,
    deleted, partitions, keyMetadata)`."""
    return ManifestFile(
        manifest_path="manifest-list.avro",
        manifest_length=1024,
        partition_spec_id=spec_id,
        content=DATA_MANIFEST,
        sequence_number=1,
        min_sequence_number=1,
        added_snapshot_id=1,
        added_files_count=added_files,
        existing_files_count=existing_files,
        deleted_files_count=deleted_files,
        added_rows_count=None,
        existing_rows_count=None,
        deleted_rows_count=None,
        partitions=partitions,
    )


# -- per-file column statistics (TestHelpers.TestDataFile) -------------------------------------------------

Counts = dict[int, int]
Bounds = dict[int, bytes]


@dataclass(frozen=True)
class FileStats:
    """One data file's statistics; a map that is None is absent (Java: `file.valueCounts() == null`)."""

    record_count: int
    value_counts: Counts | None = None
    null_value_counts: Counts | None = None
    nan_value_counts: Counts | None = None
    lower_bounds: Bounds | None = None
    upper_bounds: Bounds | None = None


def data_file(
    record_count: int,
    value_counts: Counts | None = None,
    null_value_counts: Counts | None = None,
    nan_value_counts: Counts | None = None,
    lower_bounds: Bounds | None = None,
    upper_bounds: Bounds | None = None,
) -> FileStats:
    """Java's `new TestDataFile(path, Row.of(), recordCount, valueCounts, nullCounts, nanCounts, lower, upper)`."""
    return FileStats(record_count, value_counts, null_value_counts, nan_value_counts, lower_bounds, upper_bounds)


def _map(entries: Counts | Bounds | None) -> list[dict[str, object]] | None:
    return None if entries is None else [{"key": k, "value": v} for k, v in entries.items()]


def stats_frame(*files: FileStats) -> pl.DataFrame:
    """The files' record counts and statistics maps, one row each, typed as a decoded manifest's columns."""
    columns = ("record_count", *STATS_COLUMNS)
    data = {
        "record_count": [f.record_count for f in files],
        **{name: [_map(getattr(f, name)) for f in files] for name in STATS_COLUMNS},
    }
    return pl.DataFrame(data, schema={name: CANONICAL_SCHEMA[name] for name in columns})


def stats_columns(*files: FileStats) -> StatsColumns:
    """What InclusiveMetricsEvaluator.eval takes: the statistics of `files`, in that order."""
    return StatsColumns(stats_frame(*files))

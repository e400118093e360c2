"""Data and delete files for the delete-index tests, after Iceberg Java's TestBase and
DeleteFileIndexTestBase: a table (id int, data string) bucketed by data into 16, FILE_A..FILE_C in
buckets 0..2, and delete files given a data sequence number as Java's `withDataSequenceNumber` does."""

from __future__ import annotations

import struct

from planner_service.metadata.content_file import DATA_FILE, EQUALITY_DELETES, POSITION_DELETES, ContentFile
from planner_service.metadata.partitioning import PartitionField, PartitionSpec, Transform
from planner_service.metadata.types import NestedField, PrimitiveType, Schema, StructType

FILE_PATH_ID = 2147483546  # the position-delete files' file_path column (spec: reserved field ids)

SCHEMA = Schema(
    0,
    StructType(
        (NestedField(3, "id", PrimitiveType("int"), True), NestedField(4, "data", PrimitiveType("string"), True))
    ),
)


def bucket_spec(spec_id: int = 0) -> PartitionSpec:
    """TestBase.SPEC: PartitionSpec.builderFor(SCHEMA).bucket("data", 16)."""
    return PartitionSpec(spec_id, (PartitionField(4, 1000, "data_bucket", Transform("bucket", 16)),))


def unpartitioned(spec_id: int = 0) -> PartitionSpec:
    return PartitionSpec(spec_id, ())


Stats = dict[int, int] | None
Bounds = dict[int, bytes] | None


def data_file(
    path: str,
    partition: tuple[object, ...] = (),
    spec_id: int = 0,
    seq: int = 0,
    value_counts: Stats = None,
    null_value_counts: Stats = None,
    lower_bounds: Bounds = None,
    upper_bounds: Bounds = None,
) -> ContentFile:
    """A data file whose entry has data sequence number `seq` (the one forDataFile is given)."""
    f = ContentFile(DATA_FILE, path, "PARQUET", spec_id, partition, 1, 10, seq, seq, 1)
    f.value_counts, f.null_value_counts, f.lower_bounds, f.upper_bounds = (
        value_counts,
        null_value_counts,
        lower_bounds,
        upper_bounds,
    )
    return f


def pos_deletes(
    path: str,
    partition: tuple[object, ...] = (),
    spec_id: int = 0,
    seq: int = 1,
    referenced_data_file: str | None = None,
    lower_bounds: Bounds = None,
    upper_bounds: Bounds = None,
) -> ContentFile:
    f = ContentFile(POSITION_DELETES, path, "PARQUET", spec_id, partition, 1, 10, seq, seq, 1)
    f.referenced_data_file = referenced_data_file
    f.lower_bounds, f.upper_bounds = lower_bounds, upper_bounds
    return f


def eq_deletes(
    path: str,
    partition: tuple[object, ...] = (),
    spec_id: int = 0,
    seq: int = 1,
    equality_ids: tuple[int, ...] | None = None,
    value_counts: Stats = None,
    null_value_counts: Stats = None,
    lower_bounds: Bounds = None,
    upper_bounds: Bounds = None,
) -> ContentFile:
    f = ContentFile(EQUALITY_DELETES, path, "PARQUET", spec_id, partition, 1, 10, seq, seq, 1)
    f.equality_ids = equality_ids
    f.value_counts, f.null_value_counts, f.lower_bounds, f.upper_bounds = (
        value_counts,
        null_value_counts,
        lower_bounds,
        upper_bounds,
    )
    return f


def dv(data: ContentFile, seq: int = 1, path: str | None = None) -> ContentFile:
    """A deletion vector of `data` (FileGenerationUtil.generateDV): Puffin, in the data file's partition."""
    f = ContentFile(
        POSITION_DELETES, path or f"{data.path}-dv.puffin", "PUFFIN", data.spec_id, data.partition, 1, 10, seq, seq, 1
    )
    f.referenced_data_file = data.path
    f.content_offset, f.content_size_in_bytes = 4, 6
    return f


def int_bytes(value: int) -> bytes:
    return struct.pack("<i", value)


def str_bytes(value: str) -> bytes:
    return value.encode("utf-8")


def paths(files: list[ContentFile]) -> list[str]:
    return [f.path for f in files]

"""Partition values as a manifest's Avro schema types them: decimals (and uuids) to Iceberg's internal values,
also when the schema refers to a named type it defined before, and a field typed "null" (a void field of a
dropped column) as None in its place. Both found by the differential fuzzer (tests/differential)."""

from __future__ import annotations

import io
from decimal import Decimal
from typing import Any

import fastavro

from planner_service.metadata.manifest import live_entries, read_manifest
from planner_service.metadata.manifest_list import ManifestFile


def _manifest(partition_fields: list[dict[str, Any]], partition: dict[str, Any]) -> bytes:
    data_file = {
        "type": "record",
        "name": "r2",
        "fields": [
            {"name": "file_path", "type": "string", "field-id": 100},
            {"name": "file_format", "type": "string", "field-id": 101},
            {
                "name": "partition",
                "type": {"type": "record", "name": "r102", "fields": partition_fields},
                "field-id": 102,
            },
            {"name": "record_count", "type": "long", "field-id": 103},
            {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
        ],
    }
    schema = {
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            {"name": "status", "type": "int", "field-id": 0},
            {"name": "snapshot_id", "type": ["null", "long"], "field-id": 1},
            {"name": "data_file", "type": data_file, "field-id": 2},
        ],
    }
    entry = {
        "status": 1,
        "snapshot_id": 1,
        "data_file": {
            "file_path": "f.parquet",
            "file_format": "PARQUET",
            "partition": partition,
            "record_count": 1,
            "file_size_in_bytes": 1,
        },
    }
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [entry])
    return out.getvalue()


def _partitions(data: bytes) -> list[Any]:
    manifest = ManifestFile("m.avro", len(data), 0, 0, 1, 1, 1, 1, 0, 0, 1, 0, 0, None)
    (index,) = live_entries([read_manifest(data, manifest, "m.avro")])
    return [values for _, values in index.partitions]


def test_a_decimal_partition_that_refers_to_a_named_fixed_is_a_decimal() -> None:
    """What Iceberg Java writes for truncate(2, c1) and identity(c1) of a decimal(9, 2) column."""
    decimal: dict[str, Any] = {
        "type": "fixed",
        "name": "decimal_9_2",
        "size": 4,
        "logicalType": "decimal",
        "precision": 9,
        "scale": 2,
    }
    fields: list[dict[str, Any]] = [
        {"name": "c1_trunc", "type": ["null", decimal], "default": None, "field-id": 1000},
        {"name": "c1", "type": ["null", "decimal_9_2"], "default": None, "field-id": 1001},
    ]
    data = _manifest(fields, {"c1_trunc": Decimal("-7.08"), "c1": Decimal("-7.08")})
    assert _partitions(data) == [(Decimal("-7.08"), Decimal("-7.08"))]


def test_a_partition_field_typed_null_is_none_in_its_place() -> None:
    """What Iceberg Java writes for a v1 spec's void field whose source column was dropped (its type is unknown)."""
    only: list[dict[str, Any]] = [{"name": "c2", "type": "null", "default": None, "field-id": 1000}]
    assert _partitions(_manifest(only, {"c2": None})) == [(None,)]
    decimal = {"type": "fixed", "name": "decimal_9_2", "size": 4, "logicalType": "decimal", "precision": 9, "scale": 2}
    mixed: list[dict[str, Any]] = [
        {"name": "c2", "type": "null", "default": None, "field-id": 1000},
        {"name": "d", "type": ["null", decimal], "default": None, "field-id": 1001},
    ]
    assert _partitions(_manifest(mixed, {"c2": None, "d": Decimal("1.25")})) == [(None, Decimal("1.25"))]

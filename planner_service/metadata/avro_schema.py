"""Reading Iceberg Avro files by field id: writers name fields differently across versions (v1
`added_data_files_count` vs v2 `added_files_count`), but the field ids are fixed by the spec."""

from __future__ import annotations

from typing import Any


def names_by_field_id(record_schema: dict[str, Any]) -> dict[int, str]:
    """Field id -> Avro field name for one record schema (fields without an id are skipped)."""
    out = {}
    for f in record_schema.get("fields", []):
        fid = f.get("field-id")
        if fid is not None:
            out[int(fid)] = f["name"]
    return out


def record_of(field_type: Any) -> dict[str, Any] | None:
    """The record schema inside a field type, unwrapping ["null", record] unions."""
    if isinstance(field_type, dict) and field_type.get("type") == "record":
        return field_type
    if isinstance(field_type, list):
        for branch in field_type:
            rec = record_of(branch)
            if rec is not None:
                return rec
    return None

"""Manifest Avro schemas Java cannot read: checked once per schema, before a manifest is decoded."""

from __future__ import annotations

from typing import Any

import orjson

from planner_service.metadata.avro_columns import AvroError, resolved_schema

_MAP_FIELD_IDS = frozenset({108, 109, 110, 125, 128, 137})  # data_file's maps: column sizes, counts, bounds
_SCHEMA_PROBLEMS: dict[str, str | None] = {}


def schema_problem(schema_text: str) -> str | None:
    """What makes a manifest's Avro schema one Java cannot read, or None (remembered per schema): a record
    field without a name or a type, a data_file map that is neither an Avro map nor an array marked
    logicalType "map" (Iceberg's form of a map with int keys)."""
    if schema_text not in _SCHEMA_PROBLEMS:
        try:
            _SCHEMA_PROBLEMS[schema_text] = _walk_schema(resolved_schema(schema_text))
        except orjson.JSONDecodeError as exc:
            _SCHEMA_PROBLEMS[schema_text] = f"is no JSON: {exc}"
        except AvroError as exc:  # (names that do not resolve, a recursive type, too large once expanded)
            _SCHEMA_PROBLEMS[schema_text] = f"is not one Avro reads: {exc}"
    return _SCHEMA_PROBLEMS[schema_text]


def _walk_schema(root: Any) -> str | None:
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if node.get("type") == "record":
                fields = node.get("fields")
                if not isinstance(node.get("name"), str):
                    return "has a record without a name"
                if not isinstance(fields, list):
                    return f"has a record {node.get('name')!r:.40} without fields"
                for f in fields:
                    if not isinstance(f, dict) or not isinstance(f.get("name"), str) or "type" not in f:
                        return f"has a field without a name or a type in record {node.get('name')!r:.40}"
                    if f.get("field-id") in _MAP_FIELD_IDS and not _is_map(f["type"]):
                        return f"has field {f['name']!r:.40} (id {f['field-id']}), which is not a map"
                    stack.append(f["type"])
            else:
                stack.extend(v for k, v in node.items() if k in ("type", "items", "values"))
    return None


def _is_map(typ: Any) -> bool:
    branches = [b for b in (typ if isinstance(typ, list) else [typ]) if b != "null"]
    return (
        len(branches) == 1
        and isinstance(branches[0], dict)
        and (
            branches[0].get("type") == "map"
            or (branches[0].get("type") == "array" and branches[0].get("logicalType") == "map")
        )
    )

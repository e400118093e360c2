"""Columns of a Parquet file -> the columns of the scan's schema, matched by Iceberg field id.

Iceberg reads by field id, never by name or position (spec, "Column Projection"), so a column renamed since
the file was written is still found, one added later reads as nulls, one dropped is ignored, and
reordered columns land in the schema's order. Types are widened as the spec's promotions allow (int ->
long, float -> double, decimal(P, S) -> decimal(P', S) with P' > P).

Where the ids come from, as Iceberg Java's ReadConf decides: the file's own (Parquet field_id); for a file
with none at all, the table's name mapping (schema.name-mapping.default: a field takes the id of the
mapping entry one of whose names it has; a field with no entry has no id and is never read); with no
mapping either, top-level columns take ids 1, 2, ... by position (ParquetSchemaUtil.addFallbackIds).

Identity-partition values replace their source columns (Java's PartitionUtil.constantsMap, which the
Spark reader uses): a column in `constants` is never read from the file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from spark_client.schema import FIELD_ID, arrow_type, field_id


class SchemaMismatch(ValueError):
    """A file column cannot be read as the scan's type (not an allowed promotion)."""


# --- Ids for a file's columns -------------------------------------------------------------------------------


def has_ids(schema: pa.Schema) -> bool:
    return any(field_id(f) is not None for f in _walk(list(schema)))


def _walk(fields: list[pa.Field]) -> Iterator[pa.Field]:
    for f in fields:
        yield f
        yield from _walk(_children(f.type))


def _children(typ: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(typ):
        return [typ.field(i) for i in range(typ.num_fields)]
    if pa.types.is_map(typ):
        return [typ.key_field, typ.item_field]
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        return [typ.value_field]
    return []


def with_ids(schema: pa.Schema, name_mapping: list[dict[str, Any]] | None) -> pa.Schema:
    """The file's Arrow schema with an Iceberg id on every field that has one (see the module docstring)."""
    if has_ids(schema):
        return schema
    if name_mapping is not None:
        return pa.schema([_mapped(f, name_mapping) for f in schema], metadata=schema.metadata)
    return pa.schema(
        [f.with_metadata({**(f.metadata or {}), FIELD_ID: str(i + 1).encode()}) for i, f in enumerate(schema)],
        metadata=schema.metadata,
    )


def _mapped(field: pa.Field, entries: list[dict[str, Any]], role: str | None = None) -> pa.Field:
    """`field` with the id of its name-mapping entry among `entries` (a list element, map key or value is
    also found by its role when the file names it otherwise, e.g. a legacy two-level list)."""
    entry = next((e for e in entries if field.name in e.get("names", ())), None)
    if entry is None and role is not None:
        entry = next((e for e in entries if role in e.get("names", ())), None)
    if entry is None:
        return field  # unmapped: no id, never read
    nested = entry.get("fields") or []
    typ = field.type
    if pa.types.is_struct(typ):
        typ = pa.struct([_mapped(c, nested) for c in _children(typ)])
    elif pa.types.is_map(typ):
        typ = pa.map_(_mapped(typ.key_field, nested, "key"), _mapped(typ.item_field, nested, "value"))
    elif pa.types.is_list(typ):
        typ = pa.list_(_mapped(typ.value_field, nested, "element"))
    elif pa.types.is_large_list(typ):
        typ = pa.large_list(_mapped(typ.value_field, nested, "element"))
    metadata = {**(field.metadata or {}), FIELD_ID: str(entry["field-id"]).encode()}
    return pa.field(field.name, typ, field.nullable, metadata)


def find_by_id(fields: list[pa.Field], wanted: int) -> list[int] | None:
    """The path (child indices through structs) to the field with id `wanted`, or None."""
    for i, f in enumerate(fields):
        if field_id(f) == wanted:
            return [i]
        if pa.types.is_struct(f.type):
            sub = find_by_id(_children(f.type), wanted)
            if sub is not None:
                return [i, *sub]
    return None


# --- Converting the file's arrays ----------------------------------------------------------------------------


def project_struct(
    arrays: list[pa.Array],
    file_fields: list[pa.Field],
    fields: list[dict[str, Any]],
    length: int,
    constants: Mapping[int, pa.Scalar],
) -> list[pa.Array]:
    """The arrays of Iceberg struct fields `fields`, from a struct's `arrays` with their (id-bearing) fields."""
    by_id = {field_id(f): i for i, f in enumerate(file_fields) if field_id(f) is not None}
    out = []
    for f in fields:
        target = arrow_type(f["type"])
        if f["id"] in constants:
            out.append(_constant(constants[f["id"]], target, length))
        elif f["id"] in by_id:
            i = by_id[f["id"]]
            out.append(convert(arrays[i], file_fields[i].type, f["type"], constants, f["name"]))
        else:
            out.append(pa.nulls(length, target))  # not in this file: added later (spec: read as null)
    return out


def _presence(typ: Any, file_fields: list[pa.Field], constants: Mapping[int, pa.Scalar]) -> str | None:
    """What decides whether a struct read from a file is present, as Iceberg's Parquet readers decide it: the
    first of its fields (depth first, in the scan's order) that is read as a constant ("constant": an identity
    partition's source, so the struct is never null) or found in the file ("file": the file's own nulls);
    None when no field is either, and the struct reads as null."""
    by_id = {field_id(f): f for f in file_fields if field_id(f) is not None}
    for f in typ["fields"]:
        if f["id"] in constants:
            return "constant"
        found = by_id.get(f["id"])
        if found is None:
            continue
        if isinstance(f["type"], dict) and f["type"]["type"] == "struct" and pa.types.is_struct(found.type):
            nested = _presence(f["type"], _children(found.type), constants)
            if nested is not None:
                return nested
            continue
        return "file"
    return None


def _constant(value: pa.Scalar, target: pa.DataType, length: int) -> pa.Array:
    scalar = value if value.type == target else value.cast(target)
    return pa.repeat(scalar, length)


def convert(
    array: pa.Array, file_type: pa.DataType, typ: Any, constants: Mapping[int, pa.Scalar], name: str
) -> pa.Array:
    """One file array as the Iceberg type `typ` (arrow_type(typ) exactly), nested fields matched by id."""
    target = arrow_type(typ)
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    if isinstance(typ, str):
        return array if array.type == target else _promote(array, target, name)
    mask = array.is_null() if array.null_count else None
    kind = typ["type"]
    if kind == "struct" and pa.types.is_struct(file_type):
        file_fields = _children(file_type)
        children = [array.field(i) for i in range(len(file_fields))]
        arrays = project_struct(children, file_fields, typ["fields"], len(array), constants)
        presence = _presence(typ, file_fields, constants)
        if presence == "constant":
            mask = None
        elif presence is None:
            mask = pa.repeat(pa.scalar(True), len(array))
        return pa.StructArray.from_arrays(arrays, fields=list(target), mask=mask)
    if kind == "list" and (pa.types.is_list(file_type) or pa.types.is_large_list(file_type)):
        values = convert(array.values, file_type.value_type, typ["element"], constants, f"{name}.element")
        offsets = array.offsets if pa.types.is_list(file_type) else array.offsets.cast(pa.int32())
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if kind == "map" and pa.types.is_map(file_type):
        keys = convert(array.keys, file_type.key_type, typ["key"], constants, f"{name}.key")
        items = convert(array.items, file_type.item_type, typ["value"], constants, f"{name}.value")
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=target, mask=mask)
    raise SchemaMismatch(f"Column {name!r}: the file has {file_type}, the scan reads {kind}")


def _promote(array: pa.Array, target: pa.DataType, name: str) -> pa.Array:
    """Iceberg's type promotions, plus what is the same Iceberg type in Arrow (string / large_string,
    a timestamp's unit or zone spelling as the Parquet reader gives it, INT96 timestamps)."""
    source = array.type
    allowed = (
        (pa.types.is_integer(source) and pa.types.is_integer(target) and source.bit_width <= target.bit_width)
        or (pa.types.is_floating(source) and pa.types.is_floating(target) and source.bit_width <= target.bit_width)
        or (pa.types.is_decimal(source) and pa.types.is_decimal(target) and source.scale == target.scale)
        or (_string_like(source) and _string_like(target))
        or (
            pa.types.is_timestamp(source)
            and pa.types.is_timestamp(target)
            # a zone-less timestamp under a timestamptz column comes from a file Iceberg did not write: INT96
            # (Spark's and Hive's default), whose values are UTC instants, as Iceberg Java reads them
            and (source.tz is None or target.tz is not None)
        )
        or (pa.types.is_date(source) and pa.types.is_date(target))
        or (pa.types.is_time(source) and pa.types.is_time(target))
        or (pa.types.is_fixed_size_binary(source) and pa.types.is_fixed_size_binary(target))
        or (pa.types.is_null(source))
    )
    if not allowed:
        raise SchemaMismatch(f"Column {name!r}: cannot read the file's {source} as {target}")
    return array.cast(target)


def _string_like(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)
    )

"""Iceberg schema JSON (the /plan response's "schema") -> Arrow schema and Spark schema.

Arrow: each field carries its Iceberg field id as Parquet does (field metadata PARQUET:field_id), and
required fields are non-nullable. The mapping follows Iceberg's own Arrow conversion (iceberg-arrow
ArrowSchemaUtil, PyIceberg schema_to_pyarrow): time is time64[us], timestamp timestamp[us] without a zone,
timestamptz timestamp[us, tz=UTC], uuid and fixed[L] fixed_size_binary, decimal(P, S) decimal128.

Spark follows Iceberg's Spark conversion (TypeToSparkType), which these columns must match to reach a
DataFrame: timestamptz -> TimestampType, timestamp -> TimestampNTZType, uuid -> StringType (Iceberg's Spark
reader returns uuids as strings), fixed/binary -> BinaryType. Two types Spark 3.5/4.x cannot hold, where
Iceberg's Spark conversion throws, are given a lossless stand-in here instead, and `to_spark_batch` converts
the batches to it: time -> LongType (microseconds since midnight), and timestamp_ns / timestamptz_ns ->
the microsecond timestamp types (truncated to microseconds, Spark's precision).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Collection
from typing import Any

import pyarrow as pa

FIELD_ID = b"PARQUET:field_id"

_PRIMITIVES: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "timestamp": pa.timestamp("us"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
    "timestamp_ns": pa.timestamp("ns"),
    "timestamptz_ns": pa.timestamp("ns", tz="UTC"),
    "string": pa.string(),
    "uuid": pa.binary(16),
    "binary": pa.binary(),
    "unknown": pa.null(),
}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)", re.ASCII)
_FIXED = re.compile(r"fixed\[\s*(\d+)\s*\]", re.ASCII)


class UnsupportedType(ValueError):
    """An Iceberg type this reader cannot represent (variant, geometry, geography)."""


def _id_metadata(field_id: int) -> dict[bytes, bytes]:
    return {FIELD_ID: str(field_id).encode()}


def field_id(field: pa.Field) -> int | None:
    """The Iceberg field id an Arrow field carries (as Parquet's field_id), if any."""
    raw = (field.metadata or {}).get(FIELD_ID)
    return int(raw) if raw is not None else None


def arrow_type(typ: Any) -> pa.DataType:
    """One Iceberg type (a primitive name or a struct / list / map object) as an Arrow type."""
    if isinstance(typ, str):
        if typ in _PRIMITIVES:
            return _PRIMITIVES[typ]
        if m := _DECIMAL.fullmatch(typ):
            return pa.decimal128(int(m[1]), int(m[2]))
        if m := _FIXED.fullmatch(typ):
            return pa.binary(int(m[1]))
        raise UnsupportedType(f"Iceberg type {typ!r} has no Arrow mapping in this reader")
    kind = typ.get("type")
    if kind == "struct":
        return pa.struct([arrow_field(f) for f in typ["fields"]])
    if kind == "list":
        element = pa.field("element", arrow_type(typ["element"]), not typ["element-required"])
        return pa.list_(element.with_metadata(_id_metadata(typ["element-id"])))
    if kind == "map":
        key = pa.field("key", arrow_type(typ["key"]), False, _id_metadata(typ["key-id"]))
        value = pa.field("value", arrow_type(typ["value"]), not typ["value-required"], _id_metadata(typ["value-id"]))
        return pa.map_(key, value)
    raise UnsupportedType(f"Iceberg type {typ!r} has no Arrow mapping in this reader")


def arrow_field(field: dict[str, Any]) -> pa.Field:
    return pa.field(field["name"], arrow_type(field["type"]), not field["required"], _id_metadata(field["id"]))


def arrow_schema(schema: dict[str, Any]) -> pa.Schema:
    """The Arrow schema of an Iceberg schema JSON: read_task yields batches of exactly this schema."""
    return pa.schema([arrow_field(f) for f in schema["fields"]])


def fields_by_id(schema: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Every field of an Iceberg schema JSON, nested ones included, by id: {"name", "type", "required"}."""
    out: dict[int, dict[str, Any]] = {}

    def visit(typ: Any) -> None:
        if isinstance(typ, str):
            return
        if typ["type"] == "struct":
            for f in typ["fields"]:
                out[f["id"]] = f
                visit(f["type"])
        elif typ["type"] == "list":
            out[typ["element-id"]] = {"name": "element", "type": typ["element"], "required": typ["element-required"]}
            visit(typ["element"])
        elif typ["type"] == "map":
            out[typ["key-id"]] = {"name": "key", "type": typ["key"], "required": True}
            out[typ["value-id"]] = {"name": "value", "type": typ["value"], "required": typ["value-required"]}
            visit(typ["key"])
            visit(typ["value"])

    visit(schema)
    return out


# --- Spark -------------------------------------------------------------------------------------------------

_SPARK_DDL = {
    "boolean": "BOOLEAN",
    "int": "INT",
    "long": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "date": "DATE",
    "time": "BIGINT",  # Spark has no TIME type: microseconds since midnight
    "timestamp": "TIMESTAMP_NTZ",
    "timestamptz": "TIMESTAMP",
    "timestamp_ns": "TIMESTAMP_NTZ",  # Spark keeps microseconds: truncated
    "timestamptz_ns": "TIMESTAMP",
    "string": "STRING",
    "uuid": "STRING",  # as Iceberg's Spark reader returns it
    "binary": "BINARY",
    "unknown": "VOID",
}


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def spark_type_ddl(typ: Any) -> str:
    if isinstance(typ, str):
        if typ in _SPARK_DDL:
            return _SPARK_DDL[typ]
        if m := _DECIMAL.fullmatch(typ):
            return f"DECIMAL({m[1]},{m[2]})"
        if _FIXED.fullmatch(typ):
            return "BINARY"
        raise UnsupportedType(f"Iceberg type {typ!r} has no Spark mapping")
    kind = typ["type"]
    if kind == "struct":
        return "STRUCT<" + ", ".join(_field_ddl(f, ": ") for f in typ["fields"]) + ">"
    if kind == "list":
        return f"ARRAY<{spark_type_ddl(typ['element'])}>"
    if kind == "map":
        return f"MAP<{spark_type_ddl(typ['key'])}, {spark_type_ddl(typ['value'])}>"
    raise UnsupportedType(f"Iceberg type {typ!r} has no Spark mapping")


def _field_ddl(field: dict[str, Any], sep: str) -> str:
    return f"{_quote(field['name'])}{sep}{spark_type_ddl(field['type'])}" + (" NOT NULL" if field["required"] else "")


def spark_ddl(schema: dict[str, Any]) -> str:
    """The Spark DDL of an Iceberg schema JSON, e.g. "`id` BIGINT NOT NULL, `tags` ARRAY<STRING>".

    DDL cannot say that list elements or map values are non-null; spark_schema() can.
    """
    return ", ".join(_field_ddl(f, " ") for f in schema["fields"])


def spark_schema(schema: dict[str, Any], non_null: Collection[int] = ()) -> Any:
    """The pyspark StructType of an Iceberg schema JSON (pyspark is imported only here): a field is nullable
    unless it is required or, at the top level, its id is one of `non_null` (the plan's non-null-field-ids)."""
    from pyspark.sql import types as T

    primitives = {
        "BOOLEAN": T.BooleanType,
        "INT": T.IntegerType,
        "BIGINT": T.LongType,
        "FLOAT": T.FloatType,
        "DOUBLE": T.DoubleType,
        "DATE": T.DateType,
        "TIMESTAMP": T.TimestampType,
        "TIMESTAMP_NTZ": T.TimestampNTZType,
        "STRING": T.StringType,
        "BINARY": T.BinaryType,
        "VOID": T.NullType,
    }

    def convert(typ: Any, top: bool = False) -> Any:
        if isinstance(typ, str):
            if m := _DECIMAL.fullmatch(typ):
                return T.DecimalType(int(m[1]), int(m[2]))
            return primitives[spark_type_ddl(typ)]()
        if typ["type"] == "struct":
            return T.StructType(
                [
                    T.StructField(
                        f["name"], convert(f["type"]), not (f["required"] or (top and f.get("id") in non_null))
                    )
                    for f in typ["fields"]
                ]
            )
        if typ["type"] == "list":
            return T.ArrayType(convert(typ["element"]), not typ["element-required"])
        return T.MapType(convert(typ["key"]), convert(typ["value"]), not typ["value-required"])

    return convert({"type": "struct", "fields": schema["fields"]}, top=True)


def spark_arrow_type(typ: Any) -> pa.DataType:
    """The Arrow type Spark expects for a column of this Iceberg type (its Arrow conversion of spark_schema)."""
    if isinstance(typ, str):
        if typ == "time":
            return pa.int64()
        if typ in ("timestamp_ns", "timestamptz_ns"):
            return pa.timestamp("us", tz="UTC" if typ == "timestamptz_ns" else None)
        if typ == "uuid":
            return pa.string()
        if _FIXED.fullmatch(typ):
            return pa.binary()
        return arrow_type(typ)
    if typ["type"] == "struct":
        return pa.struct([pa.field(f["name"], spark_arrow_type(f["type"]), not f["required"]) for f in typ["fields"]])
    if typ["type"] == "list":
        return pa.list_(pa.field("element", spark_arrow_type(typ["element"]), not typ["element-required"]))
    key = pa.field("key", spark_arrow_type(typ["key"]), False)
    return pa.map_(key, pa.field("value", spark_arrow_type(typ["value"]), not typ["value-required"]))


def to_spark_batch(batch: pa.RecordBatch, schema: dict[str, Any]) -> pa.RecordBatch:
    """A read_task batch (of some of `schema`'s top-level columns) with the types Spark takes: time as int64
    µs, ns timestamps truncated to µs, uuid as its canonical string, fixed as binary."""
    if not batch.num_columns:
        return batch  # rows without columns (counted): from_arrays would lose their number
    types = {f["name"]: f["type"] for f in schema["fields"]}  # the batch holds some of the schema's columns
    names = batch.schema.names
    return pa.RecordBatch.from_arrays(
        [_to_spark(c, types[n]) for c, n in zip(batch.columns, names, strict=True)], names=names
    )


def _to_spark(array: pa.Array, typ: Any) -> pa.Array:
    target = spark_arrow_type(typ)
    if array.type == target:
        return array
    if typ == "uuid":
        return pa.array([None if v is None else str(uuid.UUID(bytes=v)) for v in array.to_pylist()], pa.string())
    # time64 -> int64 keeps the microseconds; ns -> us truncates; fixed -> binary; nested: field by field
    return array.cast(target, safe=False)

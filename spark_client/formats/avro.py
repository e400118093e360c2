"""Avro data and delete files through fastavro, read as Iceberg Java reads them.

The Arrow schema comes from the file's Avro schema, whose fields carry Iceberg's ids (`field-id`, and
`element-id`, `key-id`, `value-id` on arrays and maps) as Iceberg's AvroSchemaUtil writes them: null
unions are optional fields; logical types give date, time-micros, timestamp-micros (timestamptz when
`adjust-to-utc` is true, as Iceberg reads it), the nanosecond ones, decimal (on fixed or bytes) and uuid;
an array of key/value records with logicalType `map` is a map with non-string keys; a named type used again
(Iceberg's writer names decimals, fixeds, uuids, structs' and maps' records) is read by its definition
(iceberg_io/avro_names.py). Records are decoded by fastavro and laid out column by column.

Which blocks a task reads: Avro files are split at any byte (they have no split offsets); Avro's reader,
given [start, start + length), syncs to the first sync marker at or after `start` and reads blocks until
the one whose preceding marker lies past the range (DataFileReader.sync and pastSync). So each block
belongs to the one range that holds the sync marker before it (for the first block, the header's).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any

import fastavro
import pyarrow as pa

from iceberg_io import StorageConfig, open_input_file
from iceberg_io.avro_names import AvroNameError, resolved
from spark_client.formats import Bounds, RowRange, ranges_at
from spark_client.schema import FIELD_ID

__all__ = ["AvroFile", "arrow_field_of"]

SYNC_SIZE = 16


class UnsupportedAvroSchema(ValueError):
    """An Avro schema this reader has no Arrow form for (names the file)."""


class AvroFile:
    """One Avro file, its blocks located once (their bytes are read again for the ranges a task reads)."""

    def __init__(self, location: str, storage: StorageConfig, urls: Mapping[str, str] | None = None) -> None:
        self.location = location
        self._open = partial(open_input_file, location, storage, urls)
        with self._open() as f:
            reader = fastavro.block_reader(f)
            schema = reader.writer_schema
            # (the position of the sync marker before the block, its rows), for every block
            self._blocks = [(block.offset - SYNC_SIZE, block.num_records) for block in reader]
        try:
            fields = schema["fields"] if isinstance(schema, dict) and schema.get("type") == "record" else None
            if fields is None:
                raise UnsupportedAvroSchema("not a record")
            self.schema = pa.schema([arrow_field_of(f) for f in resolved(schema)["fields"]])
        except (UnsupportedAvroSchema, AvroNameError) as exc:
            raise UnsupportedAvroSchema(f"Cannot read the Avro file {location}: {exc}") from None

    def ranges(self, start: int, length: int) -> list[RowRange]:
        return ranges_at(self._blocks, start, length)

    def bounds(self, rows: RowRange, path: list[str]) -> Bounds | None:
        return None

    def read(self, rows: RowRange, columns: list[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        records = self._records({rows.index})
        batch = self._batch(records, columns)
        for start in range(0, batch.num_rows, batch_size):
            yield batch.slice(start, batch_size)

    def read_all(self, columns: list[str]) -> pa.Table:
        return pa.Table.from_batches([self._batch(self._records(None), columns)])

    def close(self) -> None:
        """Nothing stays open: each read opens and closes the file."""

    def _records(self, blocks: set[int] | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        with self._open() as f:
            for i, block in enumerate(fastavro.block_reader(f)):
                if blocks is None or i in blocks:
                    out.extend(record for record in block if isinstance(record, dict))
        return out

    def _batch(self, records: list[dict[str, Any]], columns: list[str]) -> pa.RecordBatch:
        fields = [self.schema.field(name) for name in columns]
        arrays = [_array([r.get(f.name) for r in records], f.type) for f in fields]
        if not arrays:
            return pa.record_batch({"n": pa.nulls(len(records))}).select([])
        return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def _array(values: list[Any], typ: pa.DataType) -> pa.Array:
    return pa.array([_python(v, typ) for v in values] if _needs_conversion(typ) else values, typ)


def _needs_conversion(typ: pa.DataType) -> bool:
    if pa.types.is_fixed_size_binary(typ) or pa.types.is_map(typ):
        return True
    if pa.types.is_struct(typ):
        return any(_needs_conversion(typ.field(i).type) for i in range(typ.num_fields))
    if pa.types.is_list(typ):
        return _needs_conversion(typ.value_type)
    return False


def _python(value: Any, typ: pa.DataType) -> Any:
    """fastavro's value as pyarrow takes it: uuid as bytes, a map as (key, value) pairs."""
    if value is None:
        return None
    if pa.types.is_fixed_size_binary(typ):
        return value.bytes if isinstance(value, uuid.UUID) else value
    if pa.types.is_map(typ):
        pairs = value.items() if isinstance(value, dict) else ((e["key"], e["value"]) for e in value)
        return [(_python(k, typ.key_type), _python(v, typ.item_type)) for k, v in pairs]
    if pa.types.is_struct(typ):
        return {
            typ.field(i).name: _python(value.get(typ.field(i).name), typ.field(i).type) for i in range(typ.num_fields)
        }
    if pa.types.is_list(typ):
        return [_python(v, typ.value_type) for v in value]
    return value


# --- Avro schema -> Arrow, with Iceberg's ids (AvroSchemaUtil's conventions) ------------------------------


def arrow_field_of(field: dict[str, Any]) -> pa.Field:
    """The Arrow field of an Avro record field, with its `field-id` as PARQUET:field_id."""
    typ, nullable = _unwrap(field["type"])
    return _field(field["name"], _arrow(typ), nullable, field.get("field-id"))


def _field(name: str, typ: pa.DataType, nullable: bool, field_id: Any) -> pa.Field:
    metadata = {FIELD_ID: str(field_id).encode()} if field_id is not None else None
    return pa.field(name, typ, nullable, metadata)


def _unwrap(typ: Any) -> tuple[Any, bool]:
    """A type and whether it is optional: Iceberg writes optional as a union of null and one type."""
    if isinstance(typ, list):
        others = [t for t in typ if t != "null"]
        if len(others) != 1:
            raise UnsupportedAvroSchema(f"a union of {typ} (Iceberg writes only [null, type])")
        return others[0], len(others) < len(typ)
    return typ, False


def _arrow(typ: Any) -> pa.DataType:
    if isinstance(typ, str):
        return _primitive(typ, None)
    kind, logical = typ.get("type"), typ.get("logicalType")
    if kind == "record":
        return pa.struct([arrow_field_of(f) for f in typ["fields"]])
    if kind == "array":
        items, nullable = _unwrap(typ["items"])
        if logical == "map" and isinstance(items, dict) and items.get("type") == "record":
            key, value = items["fields"][0], items["fields"][1]
            key_type, _ = _unwrap(key["type"])
            value_type, value_nullable = _unwrap(value["type"])
            return pa.map_(
                _field("key", _arrow(key_type), False, key.get("field-id")),
                _field("value", _arrow(value_type), value_nullable, value.get("field-id")),
            )
        return pa.list_(_field("element", _arrow(items), nullable, typ.get("element-id")))
    if kind == "map":
        values, nullable = _unwrap(typ["values"])
        return pa.map_(
            _field("key", pa.string(), False, typ.get("key-id")),
            _field("value", _arrow(values), nullable, typ.get("value-id")),
        )
    if kind == "fixed":
        if logical == "decimal":
            return pa.decimal128(typ["precision"], typ.get("scale", 0))
        return pa.binary(typ["size"])
    if kind == "enum":
        return pa.string()
    return _primitive(kind, typ)


def _primitive(kind: str, typ: dict[str, Any] | None) -> pa.DataType:
    logical = (typ or {}).get("logicalType")
    if kind == "int":
        return pa.date32() if logical == "date" else pa.int32()
    if kind == "long":
        if logical in ("timestamp-micros", "timestamp-nanos"):
            unit = "us" if logical == "timestamp-micros" else "ns"
            return pa.timestamp(unit, tz="UTC" if (typ or {}).get("adjust-to-utc", True) else None)
        if logical in ("local-timestamp-micros", "local-timestamp-nanos"):
            return pa.timestamp("us" if logical == "local-timestamp-micros" else "ns")
        return pa.time64("us") if logical == "time-micros" else pa.int64()
    if kind == "bytes":
        if logical == "decimal" and typ is not None:
            return pa.decimal128(typ["precision"], typ.get("scale", 0))
        return pa.binary()
    simple = {"boolean": pa.bool_(), "float": pa.float32(), "double": pa.float64(), "string": pa.string()}
    if kind in simple:
        return simple[kind]
    raise UnsupportedAvroSchema(f"the Avro type {typ or kind!r}")

"""ORC data and delete files through pyarrow.orc, read as Iceberg Java reads them.

Field ids: Iceberg writes each ORC type's id as the type attribute `iceberg.id` (with `iceberg.required`,
`iceberg.long-type`, `iceberg.binary-type` ...), which pyarrow gives as field metadata (Arrow PR #35499);
they become PARQUET:field_id here, so projection.py matches ORC columns as Parquet ones. A file without
them falls back to the table's name mapping (projection.with_ids), as Iceberg's ORC reader does.

Which stripes a task reads: Iceberg records an ORC file's stripe offsets as its split offsets, and ORC's
reader, given a byte range, reads the stripes whose offset lies in it (ORC's RecordReaderImpl), so each
stripe belongs to exactly one range of any cut of the file. The offsets come from the file's footer
(StripeInformation), which pyarrow hands over serialized (ORCReader.serialized_file_tail); the few protobuf
fields needed are decoded here. Stripes carry no statistics pyarrow exposes: filters are applied to rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pyarrow as pa
import pyarrow.orc as orc

from iceberg_io import StorageConfig, open_input_file
from spark_client.formats import Bounds, RowRange, ranges_at
from spark_client.schema import FIELD_ID

__all__ = ["OrcFile", "stripe_offsets"]

ICEBERG_ID = b"iceberg.id"


class CorruptOrcFile(ValueError):
    """An ORC file whose footer does not decode (names the file)."""


class OrcFile:
    """One ORC file, its tail read once."""

    def __init__(self, location: str, storage: StorageConfig, urls: Mapping[str, str] | None = None) -> None:
        self.location = location
        self._source = open_input_file(location, storage, urls)
        self._file = orc.ORCFile(self._source)
        self.schema: pa.Schema = pa.schema([_with_field_id(f) for f in self._file.schema])
        self._stripes = stripe_offsets(self._file.reader.serialized_file_tail(), location)

    def ranges(self, start: int, length: int) -> list[RowRange]:
        return ranges_at(self._stripes, start, length)

    def bounds(self, rows: RowRange, path: list[str]) -> Bounds | None:
        return None

    def read(self, rows: RowRange, columns: list[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        stripe = self._file.read_stripe(rows.index, columns=columns)
        for start in range(0, stripe.num_rows, batch_size):
            yield stripe.slice(start, batch_size)

    def read_all(self, columns: list[str]) -> pa.Table:
        return self._file.read(columns=columns)

    def close(self) -> None:
        self._source.close()


def _with_field_id(field: pa.Field) -> pa.Field:
    """`field` (and its children) with PARQUET:field_id from ORC's iceberg.id attribute."""
    typ = field.type
    if pa.types.is_struct(typ):
        typ = pa.struct([_with_field_id(typ.field(i)) for i in range(typ.num_fields)])
    elif pa.types.is_map(typ):
        typ = pa.map_(_with_field_id(typ.key_field), _with_field_id(typ.item_field))
    elif pa.types.is_list(typ):
        typ = pa.list_(_with_field_id(typ.value_field))
    elif pa.types.is_large_list(typ):
        typ = pa.large_list(_with_field_id(typ.value_field))
    metadata = dict(field.metadata or {})
    if ICEBERG_ID in metadata:
        metadata[FIELD_ID] = metadata[ICEBERG_ID]
    return pa.field(field.name, typ, field.nullable, metadata or None)


# --- The footer's stripes (orc_proto.proto: FileTail.footer, Footer.stripes) ------------------------------


def stripe_offsets(tail: bytes, location: str = "<orc>") -> list[tuple[int, int]]:
    """(offset, number of rows) of each stripe, in file order, from a serialized ORC FileTail."""
    try:
        footer = _only(_fields(tail), 2)  # FileTail.footer
        if footer is None:
            raise CorruptOrcFile(f"ORC file {location} has no footer")
        out = []
        for number, value in _fields(footer):
            if number == 3:  # Footer.stripes: StripeInformation
                stripe = dict(_fields(value))  # type: ignore[arg-type]
                out.append((int(stripe.get(1, 0)), int(stripe.get(5, 0))))  # offset, numberOfRows
        return out
    except (IndexError, ValueError) as exc:
        raise CorruptOrcFile(f"ORC file {location}: its footer does not decode ({exc})") from None


def _only(fields: list[tuple[int, int | bytes]], number: int) -> bytes | None:
    values = [v for n, v in fields if n == number]
    return values[0] if values and isinstance(values[0], bytes) else None


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """A protobuf message's fields: (number, varint value or length-delimited bytes); fixed ones skipped."""
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            out.append((number, value))
        elif wire == 2:
            size, i = _varint(data, i)
            if i + size > len(data):
                raise ValueError("a field runs past the message")
            out.append((number, data[i : i + size]))
            i += size
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire}")
    return out


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i += 1
        if byte < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise ValueError("a varint longer than 10 bytes")

"""Avro container files read into Arrow columns, one column per selected field, by a compiled decoder.

The container (magic, metadata, sync marker, then blocks of records, each compressed by the file's codec)
is parsed here; the records themselves are decoded by planner_service/csrc/avro_columns.c, which walks
the writer schema compiled into a program (`compile_schema`) and appends each selected field's values to
flat buffers without the GIL. Those buffers become Arrow arrays without a copy. Fields not selected are
skipped, never materialized (a manifest's column_sizes, for instance).

Selection is by a path of Iceberg field ids: `(2, 100)` is data_file.file_path of a manifest entry. A
selected field comes out whole, in its Avro form: records as structs, arrays as lists, Iceberg's maps
(arrays of key/value records) as lists of structs; int and long values stay the numbers they are
(dates as days, timestamps as microseconds, Iceberg's internal form), decimals and fixed as binary.

A map of int keys and long values can come out reduced instead (`zero_keys`): per record, a bitmap of the
keys whose values are all 0, as fixed-size binary (little-endian 64-bit words). The null counts of a
manifest entry become the columns its file proves null-free, without a list of entries.
"""

from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
from isal import isal_zlib

from iceberg_io.avro_names import AvroNameError, resolved
from planner_service import _kernels
from planner_service.io.fileio import MAX_INFLATED_BYTES

FieldPath = tuple[int, ...]

# node types and column kinds, as planner_service/csrc/avro_columns.c numbers them
_NULL, _BOOL, _INT, _LONG, _FLOAT, _DOUBLE, _BYTES, _STRING, _FIXED, _RECORD, _ARRAY, _MAP, _UNION, _ENUM = range(14)
_U8, _I32, _I64, _F32, _F64, _BIN, _LIST, _MASK = range(8)
_ZERO_KEYS = -1  # (a _Field's type: a map reduced to a bitmap of its keys with value 0)
MAX_MASK_WORDS = 1024  # as the decoder allows: keys below 65,536
_PRIMITIVES = {
    "null": _NULL,
    "boolean": _BOOL,
    "int": _INT,
    "long": _LONG,
    "float": _FLOAT,
    "double": _DOUBLE,
    "bytes": _BYTES,
    "string": _STRING,
}
_KIND = {
    _BOOL: _U8,
    _INT: _I32,
    _ENUM: _I32,
    _LONG: _I64,
    _FLOAT: _F32,
    _DOUBLE: _F64,
    _BYTES: _BIN,
    _STRING: _BIN,
    _FIXED: _BIN,
    _ARRAY: _LIST,
    _MAP: _LIST,
    _UNION: _I32,
    _ZERO_KEYS: _MASK,
}
_ARROW = {
    _BOOL: pa.bool_(),
    _INT: pa.int32(),
    _ENUM: pa.int32(),
    _LONG: pa.int64(),
    _FLOAT: pa.float32(),
    _DOUBLE: pa.float64(),
    _BYTES: pa.large_binary(),
    _STRING: pa.large_string(),
    _FIXED: pa.large_binary(),
}
_MAX_DEPTH = 32  # Iceberg's schemas nest a handful of levels; the decoder itself stops at 64


class AvroError(ValueError):
    """The file is not a readable Avro container, or its records do not match its schema."""


@dataclass(frozen=True)
class Container:
    meta: dict[str, str]  # the header's metadata; "avro.schema" is the writer schema
    blocks: list[tuple[bytes, int]]  # (decompressed records, record count)

    @property
    def schema_text(self) -> str:
        return self.meta["avro.schema"]

    @property
    def schema(self) -> Any:
        return orjson.loads(self.schema_text)

    @property
    def record_count(self) -> int:
        return sum(count for _, count in self.blocks)


def read_container(data: bytes, max_inflated: int = MAX_INFLATED_BYTES) -> Container:
    """Parse an Avro object container file and decompress its blocks (null, deflate, snappy, zstandard), all
    of them together into at most `max_inflated` bytes: a block that would inflate past what is left is
    refused as it inflates (a compression bomb costs the limit, not what it claims)."""
    try:
        header, _, framed = _kernels.avro_framing(data)
    except ValueError as exc:
        raise AvroError(str(exc)) from None
    meta = {key.decode("utf-8", "replace"): value.decode("utf-8", "replace") for key, value in header}
    if not _valid_schema(meta.get("avro.schema")):
        raise AvroError("the header has no valid avro.schema")
    decompress = _decompressor(meta.get("avro.codec", "null"))
    view = memoryview(data)
    blocks, left = [], max_inflated
    for count, start, size in framed:
        try:
            block = decompress(view[start : start + size], left)
        except _TooLarge:
            raise AvroError(
                f"its blocks inflate past {max_inflated:,} bytes (the max_inflated_bytes setting)"
            ) from None
        left -= len(block)
        blocks.append((block, count))
    return Container(meta, blocks)


@functools.lru_cache(maxsize=256)
def _valid_schema(text: str | None) -> bool:
    """Whether a header's schema text is JSON (kept per text: a table's manifests share a handful)."""
    try:
        return text is not None and orjson.loads(text) is not None
    except orjson.JSONDecodeError:
        return False


@dataclass(frozen=True)
class Program:
    """A writer schema compiled for the decoder, with the fields it outputs."""

    nodes: bytes  # int32 (type, output, a, b) per node
    children: bytes  # int32 node numbers
    kinds: bytes  # int32 column kind per output slot
    fields: dict[FieldPath, _Field]  # each selected field present in the schema: how to assemble it
    plain_fixed: bool = False  # the schema has a fixed without a logical type (see compile_schema)


@dataclass(frozen=True)
class _Field:
    """How to make one Arrow array from output columns: a tree that mirrors the field's Avro type."""

    type: int
    column: int | None  # its own output slot (leaves, arrays, maps, and unions that hold a record)
    arrow: pa.DataType | None = None
    children: tuple[tuple[str, _Field], ...] = ()  # record fields; a list's or union's single child
    null_branch: int | None = None  # unions: the branch that is null


@functools.lru_cache(maxsize=256)
def compile_schema(
    schema_text: str,
    select: frozenset[FieldPath],
    fixed_as_bytes: bool = False,
    zero_keys: tuple[FieldPath, int] | None = None,
) -> Program:
    """Compile a record schema (its JSON text), outputting the fields at the `select` paths (those it has).
    `fixed_as_bytes`: read a fixed without a logical type as Avro bytes (a length, then the value), the way
    Iceberg Java 1.10 writes and reads one. `zero_keys` (a selected path, a width in 64-bit words): that
    field, a map of int keys to long values, comes out as a bitmap per record of the keys below 64 x width
    whose values are all 0 (left out when the field is not such a map). Kept per schema: a table's
    manifests share a handful of them."""
    return _Compiler(select, fixed_as_bytes, zero_keys).compile(resolved_schema(schema_text))


@functools.lru_cache(maxsize=256)
def resolved_schema(schema_text: str) -> Any:
    """A writer schema (its JSON text) parsed, each named type's references by its definition
    (iceberg_io/avro_names.py): what every reader of the schema walks, made once per schema and shared (read
    it, never change it). AvroError when its names do not resolve; orjson.JSONDecodeError for no JSON."""
    try:
        return resolved(orjson.loads(schema_text))
    except AvroNameError as exc:
        raise AvroError(str(exc)) from None


def decode(program: Program, blocks: list[tuple[bytes, int]]) -> dict[FieldPath, pa.Array]:
    """The selected fields of every record in `blocks` (of containers with the program's schema), one
    Arrow array each."""
    try:
        columns = _kernels.decode_avro(program.nodes, program.children, program.kinds, blocks)
    except ValueError as exc:
        raise AvroError(str(exc)) from None
    records = sum(count for _, count in blocks)
    return {path: _assemble(f, columns, records) for path, f in program.fields.items()}


# -- the compiler ------------------------------------------------------------------------------------


class _Compiler:
    def __init__(
        self, select: frozenset[FieldPath], fixed_as_bytes: bool = False, zero_keys: tuple[FieldPath, int] | None = None
    ) -> None:
        self.select = select
        self.fixed_as_bytes = fixed_as_bytes
        self.zero_keys = zero_keys
        self.plain_fixed = False
        self.nodes: list[tuple[int, int, int, int]] = []
        self.children: list[int] = []
        self.kinds: list[int] = []
        self.fields: dict[FieldPath, _Field] = {}

    def compile(self, schema: Any) -> Program:
        if not (isinstance(schema, dict) and schema.get("type") == "record"):
            raise AvroError("the schema is not a record")
        self._node(schema, (), None, 0)
        return Program(
            np.asarray(self.nodes, dtype=np.int32).tobytes(),
            np.asarray(self.children, dtype=np.int32).tobytes(),
            np.asarray(self.kinds, dtype=np.int32).tobytes(),
            self.fields,
            self.plain_fixed,
        )

    def _node(self, schema: Any, path: FieldPath, out: _Field | None, depth: int) -> tuple[int, _Field | None]:
        """Add the node for `schema`; `path` is its field path (for selection), `out` whether it is output
        (inside a selected field). Returns the node number and, when output, how to assemble it."""
        if depth > _MAX_DEPTH:
            raise AvroError("the schema nests too deeply")
        number = len(self.nodes)
        self.nodes.append((0, -1, 0, 0))
        typ = schema if isinstance(schema, str) else schema.get("type") if isinstance(schema, dict) else None
        if isinstance(schema, list):
            return number, self._union(number, schema, path, out is not None, depth)
        if isinstance(typ, dict | list):  # {"type": {...}}: a wrapped type
            node, field = self._node(typ, path, out, depth + 1)
            self.nodes[number] = (_RECORD, -1, len(self.children), 1)
            self.children.append(node)
            return number, field
        if typ == "null":
            self.nodes[number] = (_NULL, -1, 0, 0)
            return number, None
        if typ in _PRIMITIVES:
            return number, self._leaf(number, _PRIMITIVES[str(typ)], out is not None)
        if typ == "fixed":
            size = schema.get("size")
            if not isinstance(size, int) or size < 0:
                raise AvroError("a fixed type without a valid size")
            if "logicalType" not in schema:  # (decimals and uuids are written as the spec says)
                self.plain_fixed = True
                if self.fixed_as_bytes:
                    return number, self._leaf(number, _BYTES, out is not None)
            return number, self._leaf(number, _FIXED, out is not None, size)
        if typ == "enum":
            return number, self._leaf(number, _ENUM, out is not None)
        if typ == "record":
            return number, self._record(number, schema, path, out is not None, depth)
        if typ in ("array", "map"):
            return number, self._repeated(number, schema, path, out is not None, depth)
        raise AvroError(f"an unknown Avro type {typ!r}")

    def _output(self, typ: int) -> int:
        self.kinds.append(_KIND[typ])
        return len(self.kinds) - 1

    def _leaf(self, number: int, typ: int, output: bool, size: int = 0) -> _Field | None:
        column = self._output(typ) if output else -1
        self.nodes[number] = (typ, column, size, 0)
        return _Field(typ, column, _ARROW[typ]) if output else None

    def _record(self, number: int, schema: dict[str, Any], path: FieldPath, output: bool, depth: int) -> _Field | None:
        fields = schema.get("fields")
        if not isinstance(fields, list):
            raise AvroError("a record without fields")
        nodes, out = [], []
        for f in fields:
            if not isinstance(f, dict) or "type" not in f:
                raise AvroError("a record field without a type")
            fid = f.get("field-id")
            sub = (*path, int(fid)) if isinstance(fid, int) else None
            selected = sub is not None and sub in self.select
            node, field = self._node(f["type"], sub or (), _MARK if output or selected else None, depth + 1)
            nodes.append(node)
            if output and field is not None:
                out.append((str(f.get("name")), field))
            if selected and sub is not None and field is not None and not output:
                self.fields[sub] = field
        start = len(self.children)
        self.children.extend(nodes)
        self.nodes[number] = (_RECORD, -1, start, len(nodes))
        return _Field(_RECORD, None, children=tuple(out)) if output else None

    def _repeated(
        self, number: int, schema: dict[str, Any], path: FieldPath, output: bool, depth: int
    ) -> _Field | None:
        mark = _MARK if output else None
        if schema["type"] == "array" and output and self.zero_keys is not None and path == self.zero_keys[0]:
            return self._zero_keys(number, schema, depth)
        if schema["type"] == "array":
            item, field = self._node(schema.get("items"), (), mark, depth + 1)
            column = self._output(_ARRAY) if output else -1
            self.nodes[number] = (_ARRAY, column, item, 0)
            return _Field(_ARRAY, column, children=(("element", field),)) if output and field else None
        key, key_field = self._node("string", (), mark, depth + 1)
        value, value_field = self._node(schema.get("values"), (), mark, depth + 1)
        column = self._output(_MAP) if output else -1
        self.nodes[number] = (_MAP, column, key, value)
        if not (output and key_field and value_field):
            return None
        entry = _Field(_RECORD, None, children=(("key", key_field), ("value", value_field)))
        return _Field(_MAP, column, children=(("entries", entry),))

    def _zero_keys(self, number: int, schema: dict[str, Any], depth: int) -> _Field | None:
        """An Iceberg map of int keys and long values (an array of key/value records) as its zero-keys
        bitmap; any other shape is left out (it proves nothing)."""
        assert self.zero_keys is not None
        words = self.zero_keys[1]
        item, _ = self._node(schema.get("items"), (), None, depth + 1)
        typ, _, start, fields = self.nodes[item]
        shape = [self.nodes[self.children[start + i]][:2] for i in range(fields)] if typ == _RECORD else []
        if shape != [(_INT, -1), (_LONG, -1)] or not 0 < words <= MAX_MASK_WORDS:
            self.nodes[number] = (_ARRAY, -1, item, 0)
            return None
        column = self._output(_ZERO_KEYS)
        self.nodes[number] = (_ARRAY, column, item, words)
        return _Field(_ZERO_KEYS, column, pa.binary(8 * words))

    def _union(self, number: int, branches: list[Any], path: FieldPath, output: bool, depth: int) -> _Field | None:
        compiled = [self._node(b, path, _MARK if output else None, depth + 1) for b in branches]
        nulls = [i for i, (node, _) in enumerate(compiled) if self.nodes[node][0] == _NULL]
        values = [(i, f) for i, (_, f) in enumerate(compiled) if i not in nulls]
        start = len(self.children)
        self.children.extend(node for node, _ in compiled)
        if not output:
            self.nodes[number] = (_UNION, -1, start, len(branches))
            return None
        if len(values) == 1 and values[0][1] is None and self.zero_keys and path == self.zero_keys[0]:
            self.nodes[number] = (_UNION, -1, start, len(branches))  # not a map of zero keys: left out
            return None
        if len(values) != 1 or values[0][1] is None:
            raise AvroError("a selected field is a union of more than one non-null type")
        value = values[0][1]
        # a union over a record needs its branch numbers for the record's validity; leaves and lists carry theirs
        column = self._output(_UNION) if value.type == _RECORD else -1
        self.nodes[number] = (_UNION, column, start, len(branches))
        if column < 0:
            return value
        return _Field(_UNION, column, children=(("value", value),), null_branch=nulls[0] if nulls else None)


_MARK = _Field(_NULL, None)  # "inside a selected field": its nodes are output


# -- assembling Arrow arrays -------------------------------------------------------------------------


def _assemble(f: _Field, columns: list[tuple[Any, Any, Any, int, int]], length: int) -> pa.Array:
    """The array of field `f` from the decoded columns; `length`: how many values it has."""
    if f.type == _RECORD:
        if not f.children:  # an empty record (an unpartitioned table's partition)
            return pa.Array.from_buffers(pa.struct([]), length, [None], children=[])
        arrays = [_assemble(child, columns, length) for _, child in f.children]
        return pa.StructArray.from_arrays(arrays, names=[name for name, _ in f.children])
    assert f.column is not None
    valid, values, offsets, count, nulls = columns[f.column]
    assert count == length
    validity = pa.py_buffer(valid) if valid is not None else None
    if f.type == _UNION:  # a nullable record: valid where the union did not take its null branch
        inner = _assemble(f.children[0][1], columns, length)
        branch = np.frombuffer(values or b"", dtype=np.int32)
        mask = numpy_array(branch == f.null_branch) if f.null_branch is not None else None
        return pa.StructArray.from_arrays(inner.flatten(), fields=list(inner.type), mask=mask)
    if f.type in (_ARRAY, _MAP):
        items = int(np.frombuffer(offsets, dtype=np.int64)[-1])
        item = _assemble(f.children[0][1], columns, items)
        typ = pa.large_list(pa.field(f.children[0][0], item.type))
        return pa.Array.from_buffers(typ, length, [validity, pa.py_buffer(offsets)], nulls, children=[item])
    if f.type == _ZERO_KEYS:
        return pa.Array.from_buffers(f.arrow, length, [validity, pa.py_buffer(values)], nulls)
    if f.type == _BOOL:
        flags = np.frombuffer(values or b"", dtype=np.bool_)
        return numpy_array(flags, None if valid is None else ~_unpack(valid, length))
    assert f.arrow is not None
    buffers = [validity, pa.py_buffer(values)]
    if offsets is not None:
        buffers.insert(1, pa.py_buffer(offsets))
    array = pa.Array.from_buffers(f.arrow, length, buffers, nulls)
    if f.type == _STRING:
        try:
            array.validate(full=True)  # UTF-8
        except pa.ArrowInvalid:
            raise AvroError("a string is not valid UTF-8") from None
    return array


def numpy_array(values: np.ndarray[Any, Any], nulls: np.ndarray[Any, Any] | None = None) -> pa.Array:
    """A numpy array (numbers or booleans; `nulls` marks missing values) as an Arrow array, built from
    its buffers: pa.array() would first import pandas (0.2 s and 36 MB) to ask whether it is a Series."""
    values = np.ascontiguousarray(values)
    validity = None
    if nulls is not None and nulls.any():
        validity = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
    if values.dtype == np.bool_:
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), len(values), [validity, data])
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [validity, pa.py_buffer(values)])


def numpy_of(array: pa.Array) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any] | None]:
    """A fixed-width Arrow array's values (zero where missing) and which are missing (None: none are)."""
    validity, data = array.buffers()[:2]
    dtype = array.type.to_pandas_dtype() if not pa.types.is_null(array.type) else np.int64
    if data is None:
        return np.zeros(len(array), dtype=dtype), np.ones(len(array), dtype=bool)
    values = np.frombuffer(data, dtype=dtype, count=len(array) + array.offset)[array.offset :]
    if validity is None or array.null_count == 0:
        return values, None
    bits = np.unpackbits(np.frombuffer(validity, np.uint8), count=len(array) + array.offset, bitorder="little")
    missing = ~bits[array.offset :].astype(bool)
    return np.where(missing, 0, values), missing


def _unpack(bitmap: bytes, length: int) -> np.ndarray[Any, np.dtype[np.bool_]]:
    return np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), count=length, bitorder="little").astype(bool)


class _TooLarge(Exception):
    """A block inflates past what is left of its file's limit."""


def _decompressor(codec: str) -> Any:
    """(block, the most bytes it may inflate to) -> its bytes, for the file's codec."""
    if codec == "null":
        return _stored
    if codec == "deflate":
        return _inflate
    if codec == "zstandard":
        return _unzstd
    if codec == "snappy":
        return _unsnappy
    raise AvroError(f"an unsupported codec {codec!r} (null, deflate, snappy and zstandard are)")


def _stored(block: memoryview, limit: int) -> bytes:
    if len(block) > limit:
        raise _TooLarge
    return bytes(block)


def _inflate(block: memoryview, limit: int) -> bytes:
    """Raw deflate, by ISA-L (about 1.5x zlib's speed here), stopped one byte past `limit`."""
    try:
        inflater = isal_zlib.decompressobj(-15)
        out = inflater.decompress(block, limit + 1)
    except Exception as exc:  # isal_zlib.error, which its stubs do not type as an exception class
        raise AvroError(f"a block does not inflate: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise _TooLarge
    if not inflater.eof:
        raise AvroError("a block does not inflate: its deflate stream ends early")
    return bytes(out)


def _unzstd(block: memoryview, limit: int) -> bytes:
    """Zstandard frames, read through a stream so that a frame claiming any size costs at most `limit`."""
    import zstandard

    chunks, total = [], 0
    try:
        with zstandard.ZstdDecompressor().stream_reader(bytes(block), read_across_frames=True) as reader:
            while chunk := reader.read(min(1 << 20, limit + 1 - total)):
                chunks.append(chunk)
                total += len(chunk)
                if total > limit:
                    raise _TooLarge
    except zstandard.ZstdError as exc:
        raise AvroError(f"a block does not decompress: {exc}") from None
    return b"".join(chunks)


def _unsnappy(block: memoryview, limit: int) -> bytes:
    """Snappy blocks end with the CRC-32 of the uncompressed data (big-endian); the compressed data starts
    with the uncompressed length as a varint, checked against `limit` before anything is allocated."""
    body, crc = bytes(block[:-4]), bytes(block[-4:])
    length = shift = 0
    for byte in body[:5]:
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    if length > limit:
        raise _TooLarge
    try:
        out = pa.decompress(body, decompressed_size=length, codec="snappy", asbytes=True)
    except (pa.ArrowException, ValueError) as exc:
        raise AvroError(f"a block does not decompress: {exc}") from None
    if len(crc) != 4 or zlib.crc32(out) != int.from_bytes(crc, "big"):
        raise AvroError("a snappy block fails its checksum")
    return bytes(out)

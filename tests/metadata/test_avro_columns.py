"""The compiled Avro decoder against files fastavro writes: every type, unions and nulls, nested records,
arrays and maps, every codec planning meets; and damaged files fail with AvroError, never a crash."""

from __future__ import annotations

import io
import json
import zlib
from typing import Any

import fastavro
import pytest

from planner_service.metadata.avro_columns import AvroError, compile_schema, decode, read_container

SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "b", "type": "boolean", "field-id": 1},
        {"name": "i", "type": ["null", "int"], "field-id": 2},
        {"name": "l", "type": "long", "field-id": 3},
        {"name": "f", "type": "float", "field-id": 4},
        {"name": "d", "type": ["double", "null"], "field-id": 5},
        {"name": "s", "type": ["null", "string"], "field-id": 6},
        {"name": "by", "type": "bytes", "field-id": 7},
        {"name": "fx", "type": ["null", {"type": "fixed", "name": "f16", "size": 16}], "field-id": 8},
        {"name": "skipped", "type": {"type": "map", "values": ["null", "long"]}, "field-id": 9},
        {
            "name": "rec",
            "field-id": 10,
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "inner",
                    "fields": [
                        {"name": "x", "type": ["null", "long"], "field-id": 11},
                        {"name": "y", "type": "string", "field-id": 12},
                    ],
                },
            ],
        },
        {
            "name": "kv",  # an Iceberg map: an array of key/value records
            "field-id": 13,
            "type": [
                "null",
                {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "k13_v14",
                        "fields": [
                            {"name": "key", "type": "int", "field-id": 14},
                            {"name": "value", "type": "bytes", "field-id": 15},
                        ],
                    },
                },
            ],
        },
        {"name": "m", "type": {"type": "map", "values": "int"}, "field-id": 16},
        {"name": "e", "type": {"type": "enum", "name": "color", "symbols": ["R", "G"]}, "field-id": 17},
        {"name": "again", "type": "inner", "field-id": 18},  # a named type used twice
        {"name": "nested", "type": {"type": "array", "items": {"type": "array", "items": "long"}}, "field-id": 19},
    ],
}
ALL = frozenset((i,) for i in range(1, 20) if i not in (9, 11, 12, 14, 15))


def _record(i: int) -> dict[str, Any]:
    """Record i; every third one with nulls wherever the schema allows them."""
    nulls = i % 3 == 0
    return {
        "b": i % 2 == 0,
        "i": None if nulls else i - 5,
        "l": -(2**62) + i,
        "f": 1.5 * i,
        "d": None if nulls else i / 7,
        "s": None if nulls else f"s{i}-é",
        "by": bytes([i % 256]) * (i % 4),
        "fx": None if nulls else bytes(range(i, i + 16)),
        "skipped": {"a": i, "b": None},
        "rec": None if nulls else {"x": None if i % 2 else i, "y": f"y{i}"},
        "kv": None if nulls else [{"key": k, "value": bytes([k])} for k in range(i % 4)],
        "m": {f"k{k}": k for k in range(i % 3)},
        "e": "RG"[i % 2],
        "again": {"x": i, "y": ""},
        "nested": [[i, i + 1], []] if i % 2 else [],
    }


def _write(records: list[dict[str, Any]], codec: str = "null", block: int = 7) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(SCHEMA), records, codec=codec, sync_interval=block * 40)
    return out.getvalue()


def _decode(data: bytes, select: frozenset[tuple[int, ...]] = ALL) -> dict[tuple[int, ...], list[Any]]:
    container = read_container(data)
    program = compile_schema(container.schema_text, select)
    return {path: array.to_pylist() for path, array in decode(program, container.blocks).items()}


def _expected(record: dict[str, Any], name: str) -> Any:
    value = record[name]
    if name == "m":
        return [{"key": k, "value": v} for k, v in value.items()]
    if name == "e":
        return "RG".index(value)
    return value


FIELDS = {f["field-id"]: f["name"] for f in SCHEMA["fields"]}


@pytest.mark.parametrize("codec", ["null", "deflate", "snappy", "zstandard"])
def test_every_type_decodes_as_fastavro_reads_it(codec: str) -> None:
    records = [_record(i) for i in range(50)]
    data = _write(records, codec)
    assert list(fastavro.reader(io.BytesIO(data))) == [fastavro_normal(r) for r in records]
    columns = _decode(data)
    for (fid,), values in columns.items():
        name = FIELDS[fid]
        expected = [_expected(r, name) for r in records]
        if name == "f":
            assert values == pytest.approx(expected)
        else:
            assert values == expected, name
    assert set(columns) == ALL


def fastavro_normal(record: dict[str, Any]) -> dict[str, Any]:
    """What fastavro reads back (floats through float32, enums as symbols)."""
    import numpy as np

    return record | {"f": float(np.float32(record["f"]))}


def test_selection_by_field_id_path_and_skipped_fields() -> None:
    records = [_record(i) for i in range(10)]
    columns = _decode(_write(records), frozenset({(10, 12), (3,), (99,)}))
    assert set(columns) == {(10, 12), (3,)}  # a path the schema lacks is not there
    assert columns[(10, 12)] == [None if r["rec"] is None else r["rec"]["y"] for r in records]


def test_empty_file_and_empty_record() -> None:
    assert _decode(_write([])) == {path: [] for path in ALL}
    schema = {
        "type": "record",
        "name": "e",
        "fields": [{"name": "p", "field-id": 1, "type": {"type": "record", "name": "p", "fields": []}}],
    }
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [{"p": {}}] * 3)
    container = read_container(out.getvalue())
    assert (
        decode(compile_schema(container.schema_text, frozenset({(1,)})), container.blocks)[(1,)].to_pylist() == [{}] * 3
    )


def _blocks(data: bytes) -> tuple[int, int]:
    """(offset of the first block's records, their length) in a null-codec file."""
    container = read_container(data)
    raw, _ = container.blocks[0]
    start = data.index(raw)
    return start, len(raw)


@pytest.mark.parametrize(
    "damage",
    ["truncated", "garbage records", "bad sync", "bad magic", "long varint", "bad union", "trailing bytes"],
)
def test_damaged_files_fail_with_avro_error(damage: str) -> None:
    data = bytearray(_write([_record(i) for i in range(20)]))
    start, length = _blocks(bytes(data))
    if damage == "truncated":
        data = data[: start + length // 2]
    elif damage == "garbage records":
        data[start : start + length] = bytes([0xFF]) * length
    elif damage == "bad sync":
        data[-1] ^= 0xFF
    elif damage == "bad magic":
        data[0:4] = b"Obj\x02"
    elif damage == "long varint":
        data[start + 1 : start + 12] = b"\xff" * 11  # field "i"'s union branch, then "l"
    elif damage == "bad union":
        data[start + 1] = 0x08  # branch 4 of a two-branch union
    elif damage == "trailing bytes":
        container = read_container(bytes(data))
        raw, count = container.blocks[0]
        with pytest.raises(AvroError, match="end before the block"):
            decode(compile_schema(container.schema_text, ALL), [(raw + b"\x00", count)])
        return
    with pytest.raises(AvroError):
        _decode(bytes(data))


def test_bad_deflate_block_and_unknown_codec() -> None:
    data = bytearray(_write([_record(i) for i in range(5)], "deflate"))
    container = read_container(bytes(data))
    compressed = zlib.compress(container.blocks[0][0])[2:-4]
    at = bytes(data).index(compressed[:16])
    data[at : at + 8] = b"\xff" * 8
    with pytest.raises(AvroError):
        _decode(bytes(data))
    header = json.dumps(SCHEMA).encode()
    assert b"avro.codec" in bytes(data)
    with pytest.raises(AvroError, match="unsupported codec"):
        read_container(bytes(data).replace(b"\x0edeflate", b"\x0ebrotlix", 1))
    assert header  # the schema text itself is read from the header


def test_a_wrong_program_is_refused_not_run() -> None:
    from planner_service import _kernels

    container = read_container(_write([_record(1)]))
    program = compile_schema(container.schema_text, ALL)
    with pytest.raises(ValueError, match="decode_avro"):
        _kernels.decode_avro(program.nodes, b"\xff\xff\xff\x7f", program.kinds, container.blocks)


def test_each_field_alone_decodes_as_with_all_others() -> None:
    """A field decoded with every other one skipped (the skipping path: flat varint runs, records of
    leaves, nested arrays, maps, unions) gives what decoding everything gives."""
    data = _write([_record(i) for i in range(60)], block=9)
    every = _decode(data)
    for path in ALL:
        assert _decode(data, frozenset({path})) == {path: every[path]}, FIELDS[path[0]]
    assert _decode(data, frozenset({(10, 12)}))[(10, 12)] == [r and r["y"] for r in every[(10,)]]


def test_damage_in_a_skipped_field_still_fails() -> None:
    data = bytearray(_write([_record(i) for i in range(20)]))
    start, _ = _blocks(bytes(data))
    data[start + 1 : start + 12] = b"\xff" * 11  # field "i" (skipped below): an 11-byte varint
    with pytest.raises(AvroError, match="longer than 10 bytes"):
        _decode(bytes(data), frozenset({(7,)}))


def _zigzag(*values: int) -> bytes:
    out = bytearray()
    for v in values:
        n = (v << 1) ^ (v >> 63)
        while n > 0x7F:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        out.append(n)
    return bytes(out)


def test_array_blocks_that_give_their_byte_size() -> None:
    """Avro writers may write an array block as a negative count and its size in bytes: decoded item by
    item when selected, jumped over when skipped."""
    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "a", "type": {"type": "array", "items": "long"}, "field-id": 1},
            {"name": "z", "type": "long", "field-id": 2},
        ],
    }
    items = _zigzag(1, 300)
    raw = _zigzag(-2, len(items)) + items + _zigzag(1) + _zigzag(-7) + _zigzag(0) + _zigzag(5)
    text = json.dumps(schema)
    for select, expected in [
        (frozenset({(1,), (2,)}), {(1,): [[1, 300, -7]], (2,): [5]}),
        (frozenset({(2,)}), {(2,): [5]}),
    ]:
        got = decode(compile_schema(text, select), [(raw, 1)])
        assert {path: array.to_pylist() for path, array in got.items()} == expected
    lying = _zigzag(-2, 99) + items + _zigzag(0) + _zigzag(5)  # a block size past the end of the block
    with pytest.raises(AvroError, match="past the end"):
        decode(compile_schema(text, frozenset({(2,)})), [(lying, 1)])


def test_a_plain_fixed_as_iceberg_java_110_writes_it() -> None:
    """Iceberg Java 1.10 writes a fixed without a logical type (a fixed partition value) as Avro bytes, its
    length first, and reads it back so: `fixed_as_bytes` reads it; the spec's reading refuses it (the block's
    datums no longer end at its end). Decimals and uuids in fixed keep the spec's encoding."""
    fixed = {"type": "fixed", "name": "fixed_2", "size": 2}
    declared = {"type": "record", "name": "p", "fields": [{"name": "part", "type": ["null", fixed], "field-id": 1}]}
    written = {**declared, "fields": [{"name": "part", "type": ["null", "bytes"], "field-id": 1}]}
    values = [b"\x0a\x0b", None, b"\xff\xff", b"\x00\xff"]
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(written), [{"part": v} for v in values])
    blocks = read_container(out.getvalue()).blocks
    text = json.dumps(declared)
    spec = compile_schema(text, frozenset({(1,)}))
    assert spec.plain_fixed
    with pytest.raises(AvroError):
        decode(spec, blocks)
    assert decode(compile_schema(text, frozenset({(1,)}), fixed_as_bytes=True), blocks)[(1,)].to_pylist() == values
    decimal = {**fixed, "name": "decimal_9_2", "size": 4, "logicalType": "decimal", "precision": 9, "scale": 2}
    with_decimal = {**declared, "fields": [{"name": "d", "type": ["null", decimal], "field-id": 1}]}
    assert not compile_schema(json.dumps(with_decimal), frozenset({(1,)})).plain_fixed

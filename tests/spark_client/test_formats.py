"""ORC and Avro files the conformance tables do not cover: files without Iceberg's ids (name mapping), the
Avro forms Spark never writes (uuid, time, maps with non-string keys), damaged footers, unknown formats.
The expected rows are the ones written, as the spec maps them (Iceberg's AvroSchemaUtil and ORC type
attributes)."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from iceberg_io import StorageConfig
from spark_client.formats import RowRange, UnsupportedFileFormat, open_data_file
from spark_client.formats.orc import CorruptOrcFile, stripe_offsets
from spark_client.formats.parquet import ParquetFile, dictionary_columns
from tests.conformance.reference import Conformance
from tests.spark_client.plans import field, file_task, plan, read_all, schema


def test_an_unknown_format_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFileFormat, match=r"Cannot read .*x\.lance: lance files are not supported"):
        open_data_file(str(tmp_path / "x.lance"), "lance", StorageConfig())


def test_a_damaged_orc_footer_is_named() -> None:
    with pytest.raises(CorruptOrcFile, match=r"t\.orc: its footer does not decode"):
        stripe_offsets(b"\x12\xff\xff", "t.orc")


def test_dictionary_encoded_strings_read_as_a_plain_read_gives_them(conformance: Conformance) -> None:
    """Data files Iceberg Java wrote (parquet-mr, v1 pages): a string or binary column all of whose chunks
    list only dictionary encodings is read as Arrow dictionaries and decoded; every column of every row
    group reads exactly as pyarrow's plain read gives it (values, nulls, types, field ids), and columns
    with plain pages are not read as dictionaries."""
    files = sorted((conformance.dir / "warehouse").rglob("*.parquet"))[:300]
    dictionary, plain = 0, 0
    for path in files:
        metadata = pq.read_metadata(path)
        listed = dictionary_columns(metadata)
        for g in range(metadata.num_row_groups):
            for i in range(metadata.num_columns):
                chunk = metadata.row_group(g).column(i)
                if chunk.physical_type == "BYTE_ARRAY" and "." not in chunk.path_in_schema:
                    in_dictionary = chunk.path_in_schema in listed
                    assert not (in_dictionary and "PLAIN" in chunk.encodings), (path, chunk.path_in_schema)
                    dictionary += in_dictionary
                    plain += not in_dictionary
        ours = ParquetFile(str(path), StorageConfig())
        names = ours.schema.names
        assert ours.schema.equals(
            pq.ParquetFile(path, coerce_int96_timestamp_unit="us").schema_arrow, check_metadata=True
        )
        first_row = 0
        for g in range(metadata.num_row_groups):
            rows = RowRange(g, first_row, metadata.row_group(g).num_rows)
            first_row += rows.num_rows
            got = pa.Table.from_batches(list(ours.read(rows, names, 1000)), ours.schema)
            want = pq.ParquetFile(path, coerce_int96_timestamp_unit="us").read_row_group(g, columns=names)
            assert _same(got, want), (path, g)
        whole = pq.read_table(path, columns=names, coerce_int96_timestamp_unit="us")
        assert _same(ours.read_all(names), whole), path
    assert dictionary and plain, (dictionary, plain)  # both kinds of chunk were read


def _same(got: pa.Table, want: pa.Table) -> bool:
    """Equal schemas (field ids included) and values (NaN equal to NaN: repr compares them)."""
    return got.schema.equals(want.schema, check_metadata=True) and repr(got.to_pylist()) == repr(want.to_pylist())


def test_orc_without_ids_reads_by_the_name_mapping(tmp_path: Path) -> None:
    """An ORC file another writer made (no iceberg.id attributes): columns found by the table's name
    mapping, renamed since (`label` was `name`), a column it lacks read as null."""
    path = tmp_path / "f.orc"
    orc.write_table(pa.table({"id": [1, 2, 3], "name": ["a", "b", None]}), str(path))
    s = schema(field(1, "id", "long"), field(2, "label", "string"), field(3, "extra", "string"))
    mapping = [{"field-id": 1, "names": ["id"]}, {"field-id": 2, "names": ["name", "label"]}]
    task = {**file_task(str(path), file_format="orc")}
    out = read_all(plan(s, [[task]], name_mapping=mapping))
    assert out.to_pylist() == [
        {"id": 1, "label": "a", "extra": None},
        {"id": 2, "label": "b", "extra": None},
        {"id": 3, "label": None, "extra": None},
    ]


AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "table",
    "fields": [
        {"name": "id", "type": "long", "field-id": 1},
        {
            "name": "u",
            "type": ["null", {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}],
            "default": None,
            "field-id": 2,
        },
        {"name": "t", "type": ["null", {"type": "long", "logicalType": "time-micros"}], "default": None, "field-id": 3},
        {
            "name": "ts",
            "type": {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": False},
            "field-id": 4,
        },
        {
            "name": "m",
            "type": [
                "null",
                {
                    "type": "array",
                    "logicalType": "map",
                    "items": {
                        "type": "record",
                        "name": "k5_v6",
                        "fields": [
                            {"name": "key", "type": "int", "field-id": 5},
                            {"name": "value", "type": ["null", "string"], "default": None, "field-id": 6},
                        ],
                    },
                },
            ],
            "default": None,
            "field-id": 7,
        },
    ],
}
ICEBERG = schema(
    field(1, "id", "long", required=True),
    field(2, "u", "uuid"),
    field(3, "t", "time"),
    field(4, "ts", "timestamp", required=True),
    field(
        7, "m", {"type": "map", "key-id": 5, "key": "int", "value-id": 6, "value": "string", "value-required": False}
    ),
)


def test_avro_types_spark_does_not_write(tmp_path: Path) -> None:
    u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    records = [
        {
            "id": 1,
            "u": u.bytes,
            "t": dt.time(10, 15, 30, 5),
            "ts": dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC),
            "m": [{"key": 3, "value": "c"}, {"key": -1, "value": None}],
        },
        {"id": 2, "u": None, "t": None, "ts": dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC), "m": None},
    ]
    path = tmp_path / "f.avro"
    with open(path, "wb") as out:
        fastavro.writer(out, AVRO_SCHEMA, records, sync_interval=16)  # a block per record
    rows = read_all(plan(ICEBERG, [[file_task(str(path), file_format="avro")]])).to_pylist()
    assert rows == [
        {
            "id": 1,
            "u": u.bytes,
            "t": dt.time(10, 15, 30, 5),
            "ts": dt.datetime(2024, 1, 1, 12),
            "m": [(3, "c"), (-1, None)],
        },
        {"id": 2, "u": None, "t": None, "ts": dt.datetime(1969, 12, 31, 23, 59, 59, 999999), "m": None},
    ]


def test_avro_blocks_split_by_their_sync_markers(tmp_path: Path) -> None:
    """Cut anywhere, the tasks of an Avro file read each block once: the one whose range holds the sync
    marker before it (Avro's DataFileReader.sync / pastSync)."""
    path = tmp_path / "f.avro"
    records = [
        {"id": i, "u": None, "t": None, "ts": dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "m": None} for i in range(200)
    ]
    with open(path, "wb") as out:
        fastavro.writer(out, AVRO_SCHEMA, records, sync_interval=64)
    size = path.stat().st_size
    for split in (1, 17, 100, 1000, size):
        tasks = [
            [file_task(str(path), start, min(split, size - start), file_format="avro")]
            for start in range(0, size, split)
        ]
        ids = read_all(plan(ICEBERG, tasks)).column("id").to_pylist()
        assert sorted(ids) == list(range(200)), split


def _optional(name: str, typ: Any, field_id: int) -> dict[str, Any]:
    return {"name": name, "type": ["null", typ], "default": None, "field-id": field_id}


# Iceberg's AvroSchemaUtil names what it writes and defines each name once: a second decimal(5, 1) column,
# a second fixed(3), a second uuid, a decimal inside a struct and inside a list refer to the first by name
NAMED_SCHEMA = {
    "type": "record",
    "name": "table",
    "fields": [
        {"name": "id", "type": "long", "field-id": 1},
        _optional(
            "d1",
            {"type": "fixed", "name": "decimal_5_1", "size": 3, "logicalType": "decimal", "precision": 5, "scale": 1},
            2,
        ),
        _optional("d2", "decimal_5_1", 3),
        _optional("f1", {"type": "fixed", "name": "fixed_3", "size": 3}, 4),
        _optional("f2", "fixed_3", 5),
        _optional("u1", {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}, 6),
        _optional("u2", "uuid_fixed", 7),
        _optional("s", {"type": "record", "name": "r8", "fields": [_optional("d", "decimal_5_1", 9)]}, 8),
        _optional("l", {"type": "array", "items": ["null", "decimal_5_1"], "element-id": 11}, 10),
        _optional("s2", "r8", 12),
    ],
}
NAMED_ICEBERG = schema(
    field(1, "id", "long", required=True),
    field(2, "d1", "decimal(5, 1)"),
    field(3, "d2", "decimal(5, 1)"),
    field(4, "f1", "fixed[3]"),
    field(5, "f2", "fixed[3]"),
    field(6, "u1", "uuid"),
    field(7, "u2", "uuid"),
    field(8, "s", {"type": "struct", "fields": [field(9, "d", "decimal(5, 1)")]}),
    field(10, "l", {"type": "list", "element-id": 11, "element": "decimal(5, 1)", "element-required": False}),
    field(12, "s2", {"type": "struct", "fields": [field(9, "d", "decimal(5, 1)")]}),
)


def test_avro_named_types_defined_once_are_read_where_they_are_named_again(tmp_path: Path) -> None:
    """The differential fuzzer's finding (seed 612034): two decimal(5, 1) columns of an Avro data file, the
    second naming the fixed the first defined (Avro spec, "Names"); and every other type Iceberg's writer
    names, used twice. The rows are the ones written."""
    u, v = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), uuid.UUID("0f4bc2d5-8c2a-4a56-9a0e-3a1f2f2f8d10")
    written = {
        "id": 1,
        "d1": Decimal("264.8"),
        "d2": Decimal("-0.1"),
        "f1": b"abc",
        "f2": b"xyz",
        "u1": u.bytes,
        "u2": v.bytes,
        "s": {"d": Decimal("9999.9")},
        "l": [Decimal("1.5"), None],
        "s2": {"d": None},
    }
    empty = {"id": 2, **{k: None for k in written if k != "id"}}
    path = tmp_path / "named.avro"
    with open(path, "wb") as out:
        fastavro.writer(out, fastavro.parse_schema(NAMED_SCHEMA), [written, empty])
    rows = read_all(plan(NAMED_ICEBERG, [[file_task(str(path), file_format="avro")]])).to_pylist()
    assert rows == [written, empty]

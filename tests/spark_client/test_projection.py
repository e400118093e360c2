"""Columns matched by field id, name mapping for files without ids, promotions and partition values."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_client.projection import SchemaMismatch, with_ids
from spark_client.schema import field_id
from tests.spark_client.plans import field, file_task, plan, read_all, schema, write, write_rows

NESTED = {"type": "struct", "fields": [field(11, "a", "int"), field(12, "b", "string")]}
TAGS = {"type": "list", "element-id": 21, "element": "string", "element-required": False}
PROPS = {"type": "map", "key-id": 31, "key": "string", "value-id": 32, "value": "long", "value-required": False}


def no_ids(path: Path) -> str:
    """A file as plain Spark or Hive writes it: no field ids, its own column order, an extra column."""
    table = pa.table(
        {
            "score": [0.5, 1.5],
            "id": pa.array([1, 2], pa.int32()),
            "info": pa.array([{"a": 1, "b": "x"}, None], pa.struct([("a", pa.int32()), ("b", pa.string())])),
            "tags": [["t"], None],
            "props": pa.array([[("k", 1)], []], pa.map_(pa.string(), pa.int64())),
            "extra": ["e1", "e2"],
        }
    )
    return write(path, table)


MAPPING = [
    {"field-id": 1, "names": ["id"]},
    {"field-id": 3, "names": ["score", "points"]},  # renamed to points: the mapping keeps the old name
    {"field-id": 4, "names": ["info"], "fields": [{"field-id": 11, "names": ["a"]}, {"field-id": 12, "names": ["b"]}]},
    {"field-id": 5, "names": ["tags"], "fields": [{"field-id": 21, "names": ["element"]}]},
    {
        "field-id": 6,
        "names": ["props"],
        "fields": [{"field-id": 31, "names": ["key"]}, {"field-id": 32, "names": ["value"]}],
    },
]
MAPPED = schema(
    field(1, "id", "long"),
    field(3, "points", "double"),
    field(4, "info", NESTED),
    field(5, "tags", TAGS),
    field(6, "props", PROPS),
    field(7, "added", "string"),
)


def test_a_file_without_ids_is_read_through_the_name_mapping(tmp_path: Path) -> None:
    path = no_ids(tmp_path / "f.parquet")
    table = read_all(plan(MAPPED, [[file_task(path)]], name_mapping=MAPPING))
    assert table.to_pylist() == [
        {"id": 1, "points": 0.5, "info": {"a": 1, "b": "x"}, "tags": ["t"], "props": [("k", 1)], "added": None},
        {"id": 2, "points": 1.5, "info": None, "tags": None, "props": [], "added": None},
    ]


def test_mapping_assigns_ids_and_leaves_unmapped_columns_without(tmp_path: Path) -> None:
    physical = pq.ParquetFile(no_ids(tmp_path / "f.parquet")).schema_arrow
    mapped = with_ids(physical, MAPPING)
    assert [field_id(f) for f in mapped] == [3, 1, 4, 5, 6, None]
    assert [field_id(f) for f in mapped.field("info").type] == [11, 12]
    assert field_id(mapped.field("tags").type.value_field) == 21
    assert (field_id(mapped.field("props").type.key_field), field_id(mapped.field("props").type.item_field)) == (31, 32)


def test_without_ids_or_mapping_top_level_columns_take_their_position(tmp_path: Path) -> None:
    physical = pq.ParquetFile(no_ids(tmp_path / "f.parquet")).schema_arrow
    assert [field_id(f) for f in with_ids(physical, None)] == [1, 2, 3, 4, 5, 6]
    fallback = schema(field(1, "score", "double"), field(2, "id", "long"), field(6, "extra", "string"))
    table = read_all(plan(fallback, [[file_task(str(tmp_path / "f.parquet"))]]))
    assert table.to_pylist() == [{"score": 0.5, "id": 1, "extra": "e1"}, {"score": 1.5, "id": 2, "extra": "e2"}]


def test_renamed_reordered_added_dropped_and_promoted(tmp_path: Path) -> None:
    old = schema(
        field(1, "id", "int"),
        field(2, "gone", "string"),
        field(3, "f", "float"),
        field(4, "dec", "decimal(5,2)"),
        field(5, "st", {"type": "struct", "fields": [field(11, "x", "int"), field(12, "y", "string")]}),
    )
    path = write_rows(
        tmp_path / "f.parquet",
        old,
        {
            "id": [1, 2],
            "gone": ["g", "h"],
            "f": [1.5, None],
            "dec": [Decimal("1.25"), None],
            "st": [{"x": 1, "y": "a"}, {"x": None, "y": "b"}],
        },
    )
    new = schema(
        field(5, "st", {"type": "struct", "fields": [field(12, "why", "string"), field(13, "z", "long")]}),
        field(4, "dec", "decimal(9,2)"),
        field(3, "f", "double"),
        field(1, "key", "long"),
        field(6, "added", "date"),
    )
    table = read_all(plan(new, [[file_task(path)]]))
    assert table.schema.types == [
        pa.struct([pa.field("why", pa.string()), pa.field("z", pa.int64())]),
        pa.decimal128(9, 2),
        pa.float64(),
        pa.int64(),
        pa.date32(),
    ]
    assert table.to_pylist() == [
        {"st": {"why": "a", "z": None}, "dec": Decimal("1.25"), "f": 1.5, "key": 1, "added": None},
        {"st": {"why": "b", "z": None}, "dec": None, "f": None, "key": 2, "added": None},
    ]


def test_a_narrowing_is_refused_naming_the_column(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "f.parquet", schema(field(1, "n", "long")), {"n": [1]})
    with pytest.raises(SchemaMismatch, match="'n'"):
        read_all(plan(schema(field(1, "n", "int")), [[file_task(path)]]))


PARTITION_TYPES: list[tuple[str, Any, Any]] = [
    ("boolean", True, True),
    ("int", -5, -5),
    ("long", 9_000_000_000, 9_000_000_000),
    ("float", 1.5, 1.5),
    ("double", -0.25, -0.25),
    ("decimal(9,2)", "-0.50", Decimal("-0.50")),
    ("date", "1969-12-31", dt.date(1969, 12, 31)),
    ("time", "10:15:30.000001", dt.time(10, 15, 30, 1)),
    ("timestamp", "1969-12-31T23:59:59.999999", dt.datetime(1969, 12, 31, 23, 59, 59, 999999)),
    ("timestamptz", "2024-02-29T12:00:00.000001+00:00", dt.datetime(2024, 2, 29, 12, 0, 0, 1, tzinfo=dt.UTC)),
    ("timestamp_ns", "2024-01-01T00:00:00.123456789", 1704067200123456789),  # compared as int64 nanoseconds
    ("string", "a/b c=d", "a/b c=d"),
    ("uuid", "f79c3e09-677c-4bbd-a479-3f349cb785e7", uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7").bytes),
    ("fixed[2]", "00FF", b"\x00\xff"),
    ("binary", "CAFE", b"\xca\xfe"),
    ("long", None, None),
]


@pytest.mark.parametrize(("typ", "value", "expected"), PARTITION_TYPES)
def test_identity_partition_values_replace_their_source_column(
    tmp_path: Path, typ: str, value: Any, expected: Any
) -> None:
    """The file has no `p` column at all (as files added from Hive partitions): the partition says it."""
    path = write_rows(tmp_path / "f.parquet", schema(field(1, "id", "long")), {"id": [1, 2]})
    s = schema(field(1, "id", "long"), field(2, "p", typ))
    spec = {"spec-id": 3, "fields": [{"name": "p", "transform": "identity", "source-id": 2, "field-id": 1000}]}
    table = read_all(plan(s, [[file_task(path, partition=[value], spec_id=3)]], specs=[spec]))
    column = table.column("p")
    if pa.types.is_timestamp(column.type) and column.type.unit == "ns":
        column = column.cast(pa.int64())  # datetime has no nanoseconds (to_pylist would need pandas)
    assert column.to_pylist() == [expected, expected]


def test_partition_values_win_over_the_files_column(tmp_path: Path) -> None:
    s = schema(field(1, "id", "long"), field(2, "cat", "string"))
    path = write_rows(tmp_path / "f.parquet", s, {"id": [1], "cat": ["in-file"]})
    specs = [
        {"spec-id": 0, "fields": [{"name": "cat", "transform": "identity", "source-id": 2, "field-id": 1000}]},
        {"spec-id": 1, "fields": [{"name": "id_b", "transform": "bucket[4]", "source-id": 1, "field-id": 1001}]},
    ]
    tasks = [[file_task(path, partition=["from-partition"])], [file_task(path, partition=[3], spec_id=1)]]
    table = read_all(plan(s, tasks, specs=specs))
    assert table.column("cat").to_pylist() == ["from-partition", "in-file"]  # only identity transforms count


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        # Iceberg's Parquet readers (ParquetValueReaders.StructReader) take a struct's presence from its first
        # field, in the scan's order, that is a constant or a file column; a constant is always present.
        ([field(11, "p", "int"), field(12, "b", "string")], [{"p": 7, "b": "x"}, {"p": 7, "b": None}]),
        ([field(12, "b", "string"), field(11, "p", "int")], [{"b": "x", "p": 7}, None]),
        ([field(13, "added", "string"), field(11, "p", "int")], [{"added": None, "p": 7}, {"added": None, "p": 7}]),
        ([field(13, "added", "string"), field(12, "b", "string")], [{"added": None, "b": "x"}, None]),
    ],
)
def test_a_null_struct_holding_a_partition_constant(
    tmp_path: Path, fields: list[dict[str, Any]], expected: list[Any]
) -> None:
    file_schema = schema(field(1, "id", "long"), field(2, "s", {"type": "struct", "fields": fields}))
    written = schema(
        field(1, "id", "long"),
        field(2, "s", {"type": "struct", "fields": [f for f in fields if f["id"] != 13]}),
    )
    path = write_rows(tmp_path / "f.parquet", written, {"id": [1, 2], "s": [{"p": 7, "b": "x"}, None]})
    spec = {"spec-id": 3, "fields": [{"name": "p", "transform": "identity", "source-id": 11, "field-id": 1000}]}
    table = read_all(plan(file_schema, [[file_task(path, partition=[7], spec_id=3)]], specs=[spec]))
    assert table.column("s").to_pylist() == expected


def test_types_spark_cannot_write(tmp_path: Path) -> None:
    s = schema(
        field(1, "u", "uuid"), field(2, "fx", "fixed[3]"), field(3, "t", "time"), field(4, "ns", "timestamptz_ns")
    )
    values = {
        "u": [uuid.UUID(int=1).bytes, None],
        "fx": [b"abc", None],
        "t": [dt.time(1, 2, 3, 4), None],
        "ns": pa.array([1_000_000_001, None], pa.timestamp("ns", "UTC")),
    }
    table = read_all(plan(s, [[file_task(write_rows(tmp_path / "f.parquet", s, values))]]))
    assert table.column("ns").cast(pa.int64()).to_pylist() == [1_000_000_001, None]  # no pandas needed
    assert table.drop_columns(["ns"]).to_pydict() == {k: v for k, v in values.items() if k != "ns"}


def test_int96_timestamps_read_as_timestamptz(tmp_path: Path) -> None:
    """Spark's and Hive's default timestamp encoding, in files added to a table (add_files, migrate)."""
    instants = [dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC), None]
    path = tmp_path / "int96.parquet"
    pq.write_table(pa.table({"ts": pa.array(instants, pa.timestamp("us"))}), path, use_deprecated_int96_timestamps=True)
    table = read_all(plan(schema(field(1, "ts", "timestamptz")), [[file_task(str(path))]]))
    assert table.column("ts").to_pylist() == instants

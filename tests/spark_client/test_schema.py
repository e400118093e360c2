"""Iceberg schema JSON -> Arrow (with field ids) and -> Spark; and reading from S3."""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from spark_client import read_task
from spark_client.schema import (
    UnsupportedType,
    arrow_schema,
    arrow_type,
    field_id,
    spark_arrow_type,
    spark_ddl,
    spark_schema,
    to_spark_batch,
)
from tests.spark_client.plans import field, file_task, plan, schema, write_rows

LIST = {"type": "list", "element-id": 3, "element": "string", "element-required": True}
MAP = {"type": "map", "key-id": 4, "key": "string", "value-id": 5, "value": "int", "value-required": False}
STRUCT = {"type": "struct", "fields": [field(6, "x", "int", required=True), field(7, "y", LIST)]}

TYPES: list[tuple[Any, pa.DataType, str]] = [
    ("boolean", pa.bool_(), "BOOLEAN"),
    ("int", pa.int32(), "INT"),
    ("long", pa.int64(), "BIGINT"),
    ("float", pa.float32(), "FLOAT"),
    ("double", pa.float64(), "DOUBLE"),
    ("decimal(9, 2)", pa.decimal128(9, 2), "DECIMAL(9,2)"),
    ("decimal(38,10)", pa.decimal128(38, 10), "DECIMAL(38,10)"),
    ("date", pa.date32(), "DATE"),
    ("time", pa.time64("us"), "BIGINT"),
    ("timestamp", pa.timestamp("us"), "TIMESTAMP_NTZ"),
    ("timestamptz", pa.timestamp("us", tz="UTC"), "TIMESTAMP"),
    ("timestamp_ns", pa.timestamp("ns"), "TIMESTAMP_NTZ"),
    ("timestamptz_ns", pa.timestamp("ns", tz="UTC"), "TIMESTAMP"),
    ("string", pa.string(), "STRING"),
    ("uuid", pa.binary(16), "STRING"),
    ("fixed[7]", pa.binary(7), "BINARY"),
    ("binary", pa.binary(), "BINARY"),
    (LIST, pa.list_(pa.field("element", pa.string(), False)), "ARRAY<STRING>"),
    (MAP, pa.map_(pa.string(), pa.int32()), "MAP<STRING, INT>"),
    (
        STRUCT,
        pa.struct([pa.field("x", pa.int32(), False), pa.field("y", pa.list_(pa.field("element", pa.string(), False)))]),
        "STRUCT<`x`: INT NOT NULL, `y`: ARRAY<STRING>>",
    ),
]


@pytest.mark.parametrize(("typ", "arrow", "ddl"), TYPES, ids=[str(t[0]) for t in TYPES])
def test_type_mapping(typ: Any, arrow: pa.DataType, ddl: str) -> None:
    assert arrow_type(typ) == arrow
    assert spark_ddl(schema(field(1, "c", typ))) == f"`c` {ddl}"


def test_field_ids_travel_as_parquet_field_ids_at_every_level() -> None:
    s = arrow_schema(schema(field(1, "s", STRUCT, required=True), field(2, "m", MAP)))
    assert [field_id(f) for f in s] == [1, 2]
    assert not s.field("s").nullable and s.field("m").nullable
    struct = s.field("s").type
    assert [field_id(f) for f in struct] == [6, 7]
    assert field_id(struct.field("y").type.value_field) == 3
    assert (field_id(s.field("m").type.key_field), field_id(s.field("m").type.item_field)) == (4, 5)


@pytest.mark.parametrize("typ", ["variant", "geometry", "decimal(9)", {"type": "union"}])
def test_unsupported_types_are_named(typ: Any) -> None:
    with pytest.raises(UnsupportedType, match="has no"):
        arrow_type(typ)


def test_spark_ddl_quotes_names() -> None:
    assert spark_ddl(schema(field(1, "we`ird name", "int", required=True))) == "`we``ird name` INT NOT NULL"


def test_spark_struct_type() -> None:
    types = pytest.importorskip("pyspark.sql.types")
    s = spark_schema(
        schema(
            field(1, "id", "long", required=True),
            field(2, "s", STRUCT),
            field(3, "m", MAP),
            field(4, "d", "decimal(38,10)"),
            field(5, "u", "uuid"),
            field(6, "t", "time"),
        )
    )
    assert s == types.StructType(
        [
            types.StructField("id", types.LongType(), False),
            types.StructField(
                "s",
                types.StructType(
                    [
                        types.StructField("x", types.IntegerType(), False),
                        types.StructField("y", types.ArrayType(types.StringType(), False)),
                    ]
                ),
            ),
            types.StructField("m", types.MapType(types.StringType(), types.IntegerType(), True)),
            types.StructField("d", types.DecimalType(38, 10)),
            types.StructField("u", types.StringType()),
            types.StructField("t", types.LongType()),
        ]
    )


def test_batches_for_spark_convert_what_spark_cannot_hold() -> None:
    s = schema(field(1, "u", "uuid"), field(2, "t", "time"), field(3, "fx", "fixed[2]"), field(4, "ns", "timestamp_ns"))
    u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    columns = {
        "u": pa.array([u.bytes, None], pa.binary(16)),
        "t": pa.array([dt.time(0, 0, 1), None], pa.time64("us")),
        "fx": pa.array([b"ab", None], pa.binary(2)),
        "ns": pa.array([1001, None], pa.timestamp("ns")),  # built from ints: datetime has no nanoseconds
    }
    target = arrow_schema(s)
    arrays = [c.cast(t) for c, t in zip(columns.values(), target.types, strict=True)]
    batch = pa.RecordBatch.from_arrays(arrays, schema=target)
    out = to_spark_batch(batch, s)
    assert out.schema.types == [spark_arrow_type(f["type"]) for f in s["fields"]]
    assert out.to_pylist() == [
        {"u": str(u), "t": 1_000_000, "fx": b"ab", "ns": dt.datetime(1970, 1, 1, 0, 0, 0, 1)},
        {"u": None, "t": None, "fx": None, "ns": None},
    ]


def test_reads_from_s3(tmp_path: Path, s3_endpoint: str) -> None:
    storage = {
        "s3.endpoint": s3_endpoint,
        "s3.access-key-id": "k",
        "s3.secret-access-key": "s",
        "s3.region": "us-east-1",
    }
    fs = pafs.S3FileSystem(
        endpoint_override=s3_endpoint.split("://")[1],
        scheme="http",
        access_key="k",
        secret_key="s",
        region="us-east-1",
        allow_bucket_creation=True,
    )
    fs.create_dir("reader-bucket")
    s = schema(field(1, "id", "long"))
    local = write_rows(tmp_path / "f.parquet", s, {"id": [1, 2, 3]})
    pafs.copy_files(local, "reader-bucket/t/f.parquet", destination_filesystem=fs)
    task = file_task(local)
    task["data-file"]["file-path"] = "s3a://reader-bucket/t/f.parquet"
    p = plan(s, [[task]])
    batches = list(read_task(p["tasks"][0], p, storage))
    assert [b.column("id").to_pylist() for b in batches] == [[1, 2, 3]]

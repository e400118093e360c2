"""aggregate()'s reads: each task aggregated where it is read, Spark combining one partial row per task,
held to Spark's own aggregates over the same rows (the reference: nulls, NaN, null structs, empty tasks,
strings by bytes), and reading only the columns the aggregates name."""

from __future__ import annotations

import math
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_client.aggregates import DRIVER_READ_BYTES, read_aggregates
from spark_client.schema import arrow_schema, spark_schema
from tests.spark_client.plans import field, file_task, plan, schema, wire, write

pytest.importorskip("pyspark")

S = schema(
    field(1, "id", "long", required=True),
    field(2, "f", "double"),
    field(3, "s", "string"),
    field(4, "st", {"type": "struct", "fields": [field(5, "x", "int")]}),
    field(6, "d", "decimal(9,2)"),
)
FILES: list[dict[str, list[Any]]] = [  # three tasks: NaN beside numbers and nulls; nothing but nulls; no NaN
    {
        "id": [1, 2, 3],
        "f": [1.0, math.nan, None],
        "s": ["b", None, "a"],
        "st": [{"x": 1}, None, {"x": None}],
        "d": ["1.50", None, "-2.00"],
    },
    {"id": [4, 5], "f": [None, None], "s": [None, None], "st": [None, None], "d": [None, None]},
    {"id": [6, 7], "f": [-1.0, 2.5], "s": ["é", "z"], "st": [{"x": 7}, {"x": -3}], "d": ["0.01", "9.99"]},
]
NAMES = [
    "count(*)",
    "count(f)",
    "max(f)",
    "min(f)",
    "min(s)",
    "max(s)",
    "count(st.x)",
    "min(st.x)",
    "max(d)",
    "count(st)",
]


def rows(columns: dict[str, list[Any]]) -> pa.Table:

    values = {**columns, "d": [None if v is None else Decimal(v) for v in columns["d"]]}
    return pa.table(values, schema=arrow_schema(S))


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    return [write(tmp_path / f"{i}.parquet", rows(columns)) for i, columns in enumerate(FILES)]


def plain(values: list[Any]) -> list[Any]:
    return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in values]


@pytest.mark.parametrize("driver_read_bytes", [0, DRIVER_READ_BYTES], ids=["spark-job", "in-driver"])
def test_partials_combine_to_sparks_aggregates(spark: Any, files: list[str], driver_read_bytes: int) -> None:
    from pyspark.sql import functions as F

    p = wire(plan(S, [[file_task(f)] for f in files]))
    aggregated = read_aggregates(spark, p, NAMES, None, "http://unused", None, driver_read_bytes=driver_read_bytes)
    ours = aggregated.collect()[0]
    whole = pa.concat_tables([rows(columns) for columns in FILES])
    as_rows = [tuple(row.values()) for row in whole.to_pylist()]  # (not pandas: it makes null doubles NaN)
    reference = (
        spark.createDataFrame(as_rows, spark_schema(S))
        .agg(
            F.count(F.lit(1)),
            F.count("f"),
            F.max("f"),
            F.min("f"),
            F.min("s"),
            F.max("s"),
            F.count("st.x"),
            F.min("st.x"),
            F.max("d"),
            F.count("st"),
        )
        .collect()[0]
    )
    assert plain(list(ours)) == plain(list(reference))
    assert plain(list(ours)) == [7, 4, "NaN", -1.0, "a", "é", 3, -3, Decimal("9.99"), 4]


def test_no_tasks_count_zero(spark: Any) -> None:
    empty = wire(plan(S, []))
    assert list(read_aggregates(spark, empty, ["count(*)", "max(id)"], None, "http://unused", None).collect()[0]) == [
        0,
        None,
    ]


def test_only_the_named_columns_are_read(spark: Any, files: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark runs the tasks in its Python workers, so the columns are observed on a task read in this process."""
    from spark_client.partial_aggregates import AggregateColumn, PartialAggregates
    from spark_client.partitions import expand_tasks

    read: list[list[str]] = []
    original = pq.ParquetFile.iter_batches

    def spy(this: pq.ParquetFile, *args: Any, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        read.append(list(kwargs["columns"]))
        return original(this, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    payload = expand_tasks(wire(plan(S, [[file_task(files[0])]])))[0]
    read_schema = pa.schema([arrow_schema(S).field("s")])
    partials = PartialAggregates([AggregateColumn("count"), AggregateColumn("max", ("s",))], read_schema, 1024)
    (batch,) = partials(payload, read_schema, None, 1024)
    assert batch.to_pylist() == [{"p0": 3, "p1": "b"}]
    assert read == [["s"]]
    read.clear()
    count_only = PartialAggregates([AggregateColumn("count")], pa.schema([]), 1024)
    (batch,) = count_only(payload, pa.schema([]), None, 1024)
    assert batch.to_pylist() == [{"p0": 3}] and read == []  # counted from the footer

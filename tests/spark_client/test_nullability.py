"""Nullability from the plan: plan_and_read declares non-nullable the columns the plan knows to hold no null
(required, or a null count of 0 in every planned file's manifest entry), and the reader refuses a batch that
proves the metadata wrong. Each table here was written by Iceberg Java (the conformance warehouse) and its
rows are Spark + Iceberg's; the lying table is planted (a file swapped under its manifest entry).

Every conformance read also checks its declared columns against Iceberg Java's own null counts
(compare.assert_nullability); these name the cases the rule turns on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_client import plan_and_read
from tests.conformance.reference import Conformance
from tests.conftest import running_service
from tests.spark_client.compare import assert_spark_read_matches, rows

pytest.importorskip("pyspark")

# (table, column, declared non-nullable, why), each read in full
CASES = [
    ("metrics_modes", "id", True, "optional, full metrics, no null in any file"),
    ("metrics_modes", "c", True, "metrics mode counts: a null count of 0 in every file"),
    ("metrics_modes", "n", False, "metrics mode none: no null count, so nothing known"),
    ("fixed_types", "id", True, "optional, no null in either file"),
    ("fixed_types", "fx", False, "a null in one of the two files"),
    ("fixed_types", "part", False, "the identity partition's source column, with a null partition"),
    ("schema_evolution", "label", True, "renamed since some files were written: same field id, no null"),
    ("schema_evolution", "extra", False, "added after some files were written: those files give no count"),
    ("name_mapped", "category", False, "identity partition source, files added without the column"),
    ("name_mapped", "info", False, "a struct: its files count its fields' nulls, not its own"),
]


@pytest.mark.parametrize(("table", "column", "non_null", "why"), CASES, ids=[f"{t}.{c}" for t, c, _, _ in CASES])
def test_declared_nullability(
    spark: Any, conformance: Conformance, conformance_service: str, table: str, column: str, non_null: bool, why: str
) -> None:
    case = conformance.read(f"{table}/full")
    df = plan_and_read(spark, f"db.{table}", service_url=conformance_service)
    assert df.schema[column].nullable is not non_null, why
    assert_spark_read_matches(case, df.schema, df.toArrow(), pq.read_table(conformance.dir / case["path"]))


def test_nested_fields_keep_their_required_flags(
    spark: Any, conformance: Conformance, conformance_service: str
) -> None:
    """A struct's fields are declared as the schema says, whatever their null counts."""
    df = plan_and_read(spark, "db.name_mapped", service_url=conformance_service)
    info: Any = df.schema["info"].dataType
    assert [f.nullable for f in info.fields] == [True, True]
    expected = pq.read_table(conformance.dir / conformance.read("name_mapped/full")["path"])
    assert rows(df.toArrow()) == rows(expected)


def test_table_nullability_declares_only_the_required_columns(
    spark: Any, conformance: Conformance, conformance_service: str
) -> None:
    """nullability="table": Spark + Iceberg's own schema, nullability included."""
    from pyspark.sql.types import StructType

    case = conformance.read("metrics_modes/full")
    df = plan_and_read(spark, "db.metrics_modes", service_url=conformance_service, nullability="table")
    assert df.schema == StructType.fromJson(json.loads(case["spark_schema"]))
    with pytest.raises(ValueError, match="nullability"):
        plan_and_read(spark, "db.metrics_modes", service_url=conformance_service, nullability="maybe")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def lying_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """db.lies (a warehouse of its own, Hadoop layout): two files written by PyIceberg, whose manifest entries
    give `v` a null count of 0; then the second file is swapped for one with a null in `v` (same field ids,
    one row group). Returns the warehouse and the swapped file."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    root = tmp_path_factory.mktemp("lies")
    warehouse, location = root / "warehouse", root / "warehouse" / "db" / "lies"
    catalog = SqlCatalog("lies", uri=f"sqlite:///{root / 'catalog.db'}", warehouse=f"file://{warehouse}")
    catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "v", LongType(), required=False))
    table = catalog.create_table("db.lies", schema, location=f"file://{location}")
    arrow = pa.schema([pa.field("id", pa.int64(), False), pa.field("v", pa.int64())])
    table.append(pa.table({"id": [1, 2], "v": [10, 20]}, schema=arrow))
    table.append(pa.table({"id": [3, 4], "v": [30, 40]}, schema=arrow))
    files = [task.file.file_path for task in table.scan().plan_files()]
    swapped = Path(max(files, key=lambda p: pq.read_table(p.removeprefix("file://")).column("id")[0].as_py())[7:])
    ids = pq.read_schema(swapped)
    pq.write_table(pa.table({"id": [3, 4], "v": [30, None]}, schema=ids), swapped)
    metadata = Path(table.metadata_location.removeprefix("file://"))
    shutil.copy(metadata, location / "metadata" / "v1.metadata.json")  # the Hadoop layout the service reads
    (location / "metadata" / "version-hint.text").write_text("1")
    return str(warehouse), swapped


def test_a_file_whose_metadata_lies_is_refused(spark: Any, lying_table: tuple[str, Path]) -> None:
    """A null in a column its manifest entry counts none of fails the task, naming the file and the column;
    read with the table's nullability, the same rows read as they are."""
    warehouse, swapped = lying_table
    with running_service("--warehouse", warehouse) as url:
        df = plan_and_read(spark, "db.lies", service_url=url)
        assert not df.schema["v"].nullable
        with pytest.raises(Exception, match=r"column 'v' holds 1 null") as failure:
            df.collect()
        assert str(swapped) in str(failure.value)
        honest = plan_and_read(spark, "db.lies", service_url=url, nullability="table")
        assert honest.schema["v"].nullable
        assert sorted((r.id, r.v) for r in honest.collect()) == [(1, 10), (2, 20), (3, 30), (4, None)]

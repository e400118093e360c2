"""Comparing our reads with Spark + Iceberg Java's (the conformance read cases), shared by the reader tests
and the DataFrame tests on pyspark 4 and 3.5: rows as NaN-equal multisets, Arrow types without what
Spark's Parquet files and ours spell differently, and a read case as plan_and_read's arguments."""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

import pyarrow as pa


def canonical(value: Any) -> Any:
    """A hashable, NaN-equal form of a value from Arrow's to_pylist (a map's entries compare as a set)."""
    if isinstance(value, float) and math.isnan(value):
        return "<NaN>"
    if isinstance(value, dict):
        return tuple((k, canonical(v)) for k, v in value.items())
    if isinstance(value, list):
        items = [canonical(v) for v in value]
        if items and all(isinstance(v, tuple) and len(v) == 2 and not isinstance(v[0], tuple) for v in value):
            return ("<map>", tuple(sorted(items, key=repr)))  # to_pylist gives a map as [(key, value), ...]
        return tuple(items)
    return value


def rows(table: pa.Table) -> Counter[tuple[Any, ...]]:
    """The rows of an Arrow table as a multiset."""
    return Counter(tuple(canonical(v) for v in row.values()) for row in table.to_pylist())


def normalized(typ: pa.DataType) -> pa.DataType:
    """A type without what Spark's Parquet files and ours spell differently: field names of list elements
    and map entries, nullability, field metadata; and fixed[N], which Spark holds as binary (the reader
    keeps Iceberg's fixed_size_binary until the rows reach Spark)."""
    if pa.types.is_fixed_size_binary(typ):
        return pa.binary()
    if pa.types.is_struct(typ):
        return pa.struct([pa.field(f.name, normalized(f.type)) for f in typ])
    if pa.types.is_map(typ):
        return pa.map_(normalized(typ.key_type), normalized(typ.item_type))
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return pa.list_(normalized(typ.value_type))
    return typ


def snapshot_arguments(snapshot: dict[str, Any]) -> dict[str, Any]:
    """plan_and_read's time-travel argument for a read case's snapshot choice."""
    kind, value = snapshot["kind"], snapshot.get("value")
    if kind == "id":
        return {"snapshot_id": value}
    if kind == "as_of":
        return {"as_of": value}
    if kind in ("branch", "tag"):
        return {"ref": value}
    if kind == "appends":
        return {"start_snapshot_id": snapshot["start"], "end_snapshot_id": snapshot["end"]}
    return {}


def read_arguments(case: dict[str, Any]) -> dict[str, Any]:
    """plan_and_read's keyword arguments (besides the table and the service) for a recorded read case."""
    options = {"split-size": case["split_size"]} if case["split_size"] is not None else None
    return {
        "filter": case["filter"],
        "columns": case["columns"],
        "options": options,
        **snapshot_arguments(case["snapshot"]),
    }


def assert_spark_read_matches(case: dict[str, Any], schema: Any, actual: pa.Table, expected: pa.Table) -> None:
    """A DataFrame's Spark schema and collected rows against Spark + Iceberg Java's for the read case.

    Spark's names and types must be the recorded ones, and its nullability what assert_nullability says."""
    from pyspark.sql.types import StructType

    expected_schema = StructType.fromJson(json.loads(case["spark_schema"]))
    assert [(f.name, f.dataType) for f in schema] == [(f.name, f.dataType) for f in expected_schema]
    assert_nullability(case, schema, expected_schema, expected)
    assert actual.column_names == expected.column_names
    assert [normalized(f.type) for f in actual.schema] == [normalized(f.type) for f in expected.schema]
    assert actual.num_rows == case["rows"]
    assert rows(actual) == rows(expected)


def assert_nullability(case: dict[str, Any], schema: Any, expected_schema: Any, expected: pa.Table) -> None:
    """The top-level columns a read declares non-nullable, against Iceberg Java's metadata for the read case
    (the columns every file its planFiles() plans gives a null count of 0, with the read's filter and
    without) and Spark + Iceberg's rows and schema.

    Declared: the required columns and those the files the plan reads prove null-free. The service proves a
    column over the files of the manifests it keeps, a superset of the planned files: so at least what
    every file of the snapshot proves (not for an incremental read: a manifest an append added may hold
    older files), at most what the planned files prove. Without a filter the two are the same files: exact.
    Spark + Iceberg's own schema is the required flags (a filtered one adds the columns its filter makes
    non-null). And no declared column holds a null in Spark + Iceberg's rows."""
    declared = {f.name for f in schema if not f.nullable}
    spark_non_null = {f.name for f in expected_schema if not f.nullable}
    assert_declared_non_null(case, declared, spark_non_null, {f.name for f in schema}, expected)


def assert_declared_non_null(
    case: dict[str, Any], declared: set[str], required: set[str], names: set[str], expected: pa.Table
) -> None:
    """The columns a read declares non-null (`declared`, of its top-level `names`), against the read case's
    recorded null-free columns (see assert_nullability), the columns that are non-null whatever the files
    say (`required`) and Spark + Iceberg's rows (`expected`)."""
    planned, whole = case["null_free"]["planned"], case["null_free"]["snapshot"]
    if planned is None:  # no file planned: nothing proven
        assert declared <= required, case["id"]
    else:
        assert declared <= (set(planned) | required) & names, case["id"]
        if case["snapshot"]["kind"] != "appends":
            assert set(whole or ()) & names <= declared, case["id"]
        if case["filter"] is None:
            assert declared == (set(planned) | required) & names, case["id"]
    for name in declared & set(expected.column_names):
        assert expected.column(name).null_count == 0, (case["id"], name)

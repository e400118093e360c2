"""Aggregate values in tests: the service's JSON single values and Spark's Python values, both in
read_cases.plain_value's form, which the generator records Spark + Iceberg's answers in."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from tests.conformance.read_cases import plain_value


def plain_json(value: Any, typ: Any) -> Any:
    """A /aggregate value of Iceberg type `typ` (JSON single-value form) in plain form."""
    if value is None or not isinstance(typ, str):
        return value
    if typ in ("timestamp", "timestamptz"):
        return plain_value(dt.datetime.fromisoformat(value))
    if typ.startswith("decimal"):
        return Decimal(value)
    return value


def comparable(values: list[Any], types: list[Any]) -> list[Any]:
    """Plain values with decimals as Decimal (Spark's str() of a zero at scale 10 is 0E-10); `types` are
    Iceberg's (decimal(P, S)) or Spark's type names (decimal(P,S))."""
    return [
        Decimal(v) if isinstance(t, str) and t.startswith("decimal") and v is not None else v
        for v, t in zip(values, types, strict=True)
    ]


def spark_row_values(df: Any) -> list[Any]:
    """The one row of a Spark aggregate DataFrame, comparable (Spark's TIMESTAMP collected as local wall
    clock: given in UTC)."""
    from pyspark.sql.types import TimestampType

    (row,) = df.collect()
    fields = df.schema.fields
    values = [plain_value(v, isinstance(f.dataType, TimestampType)) for v, f in zip(row, fields, strict=True)]
    return comparable(values, [f.dataType.simpleString() for f in fields])

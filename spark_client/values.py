"""Iceberg's JSON single-value forms (spec Appendix D) -> Arrow scalars of the column's type.

Partition tuples and residual literals arrive in these forms: numbers for int / long / float / double,
"2024-01-01" for date, "10:15:30.123456" for time, "2024-01-01T10:00:00.000001" for timestamp (with
"+00:00" for timestamptz; nine fraction digits for the _ns types), "12.30" for decimal, the canonical
string for uuid and upper-case hex for fixed / binary. Plain numbers are also taken where Iceberg's
expression JSON allows them (days, microseconds), and ISO strings with any offset are converted to UTC.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import pyarrow as pa

from spark_client.schema import arrow_type

_EPOCH = datetime(1970, 1, 1)
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=UTC)
_TIMESTAMP = re.compile(r"(\d{4,}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d)?)(?:\.(\d{1,9}))?(Z|[+-]\d\d:?\d\d)?")


def to_scalar(value: Any, typ: Any) -> pa.Scalar:
    """The Arrow scalar of an Iceberg type for a JSON single value (None: a null of that type)."""
    target = arrow_type(typ)
    return pa.scalar(None if value is None else to_python(value, typ), target)


def to_python(value: Any, typ: Any) -> Any:
    """A JSON single value as the Python value pyarrow takes for the type."""
    if not isinstance(typ, str):
        raise ValueError(f"No single-value form for the nested type {typ!r}")
    if typ in ("boolean", "int", "long", "string") or value is None:
        return value
    if typ in ("float", "double"):
        return float(value)  # also "NaN", "Infinity", "-Infinity"
    if typ == "date":
        return date.fromisoformat(value) if isinstance(value, str) else date(1970, 1, 1) + timedelta(days=value)
    if typ == "time":
        return time.fromisoformat(value) if isinstance(value, str) else (_EPOCH + timedelta(microseconds=value)).time()
    if typ in ("timestamp", "timestamptz"):
        return value if isinstance(value, int) else _epoch_units(value, 6)
    if typ in ("timestamp_ns", "timestamptz_ns"):
        return value if isinstance(value, int) else _epoch_units(value, 9)
    if typ.startswith("decimal"):
        return Decimal(str(value))
    if typ == "uuid":
        return uuid.UUID(value).bytes
    if typ == "binary" or typ.startswith("fixed"):
        return bytes.fromhex(value)
    raise ValueError(f"No single-value form for the Iceberg type {typ!r}")


def _epoch_units(text: str, digits: int) -> int:
    """An ISO timestamp as µs (digits=6) or ns (digits=9) since the epoch; an offset is converted to UTC."""
    m = _TIMESTAMP.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"Invalid timestamp value: {text!r}")
    base = datetime.fromisoformat(m[1].replace(" ", "T"))
    fraction = int((m[2] or "").ljust(9, "0")[:digits] or 0)
    if m[3]:
        offset = m[3].replace("Z", "+00:00")
        aware = base.replace(tzinfo=datetime.fromisoformat("2000-01-01T00:00:00" + offset).tzinfo)
        seconds = (aware - _EPOCH_UTC) // timedelta(seconds=1)
    else:
        seconds = (base - _EPOCH) // timedelta(seconds=1)
    return int(seconds) * int(10**digits) + fraction


def iceberg_type_of(typ: pa.DataType) -> str:
    """The Iceberg primitive an Arrow type reads as (to decode a value for a column known only by its file)."""
    if pa.types.is_decimal(typ):
        return f"decimal({typ.precision}, {typ.scale})"
    if pa.types.is_timestamp(typ):
        return ("timestamptz" if typ.tz else "timestamp") + ("_ns" if typ.unit == "ns" else "")
    if pa.types.is_fixed_size_binary(typ):
        return f"fixed[{typ.byte_width}]"
    for check, name in (
        (pa.types.is_boolean, "boolean"),
        (lambda t: pa.types.is_integer(t) and t.bit_width <= 32, "int"),
        (pa.types.is_integer, "long"),
        (pa.types.is_float32, "float"),
        (pa.types.is_floating, "double"),
        (pa.types.is_date, "date"),
        (pa.types.is_time, "time"),
        (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t), "string"),
        (lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t), "binary"),
    ):
        if check(typ):
            return name
    raise ValueError(f"No Iceberg primitive for the Arrow type {typ}")

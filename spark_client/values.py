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
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import pyarrow as pa

from spark_client.schema import arrow_type

_EPOCH = datetime(1970, 1, 1)
_TIMESTAMP = re.compile(r"([+-]?\d{4,}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d)?)(?:\.(\d{1,9}))?(Z|[+-]\d\d:?\d\d)?", re.ASCII)


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
        days = epoch_days(value) if isinstance(value, str) else int(value)
        return date(1970, 1, 1) + timedelta(days=days) if _FIRST_DAY <= days <= _LAST_DAY else days
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
    day, clock = re.split("[T ]", m[1], maxsplit=1)
    hour, minute, *second = (int(part) for part in clock.split(":"))
    seconds = epoch_days(day) * 86_400 + hour * 3600 + minute * 60 + (second[0] if second else 0)
    fraction = int((m[2] or "").ljust(9, "0")[:digits] or 0)
    if m[3] and m[3] != "Z":  # local time at that offset: UTC is the offset earlier
        sign, hours, minutes = m[3][0], int(m[3][1:3]), int(m[3][-2:])
        seconds -= (1 if sign == "+" else -1) * (hours * 3600 + minutes * 60)
    return seconds * int(10**digits) + fraction


_DATE = re.compile(r"([+-]?\d{4,})-(\d\d)-(\d\d)", re.ASCII)
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_FIRST_DAY, _LAST_DAY = (date.min - date(1970, 1, 1)).days, (date.max - date(1970, 1, 1)).days


def epoch_days(text: str) -> int:
    """An ISO date as days from the epoch, with Java's years past Python's: "+10000-01-01", "-0001-12-31"
    (H. Hinnant's days_from_civil)."""
    m = _DATE.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"Invalid date value: {text!r}")
    year, month, day = int(m[1]), int(m[2]), int(m[3])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not (1 <= month <= 12 and 1 <= day <= (29 if leap and month == 2 else _MONTH_DAYS[month - 1])):
        raise ValueError(f"Invalid date value: {text!r}")
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


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

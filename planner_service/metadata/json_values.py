"""Iceberg's JSON single-value serialization (spec Appendix D, "JSON single-value serialization")."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from decimal import Context, Decimal
from typing import Any, Literal

import numpy as np

from planner_service.metadata.types import IcebergType, PrimitiveType

_EPOCH = datetime(1970, 1, 1)
_EPOCH_DATE = date(1970, 1, 1)
_DECIMAL_DIGITS = 40  # a decimal(38, s) value and its scale fit


def to_json_value(typ: IcebergType, value: Any) -> Any:
    """Internal value -> JSON value (date "2007-12-03", timestamp "...T10:15:30.123456", binary hex)."""
    if value is None or not isinstance(typ, PrimitiveType):
        return value
    kind = typ.kind
    if kind == "unknown":  # (a partition field whose source column was dropped: Java reads its values as null)
        return None
    if kind == "date":
        return date_text(value)
    if kind == "time":
        return (_EPOCH + timedelta(microseconds=value)).time().isoformat(timespec="microseconds")
    if kind in ("timestamp", "timestamptz"):
        text = timestamp_text(value)
        return text + "+00:00" if kind == "timestamptz" else text
    if kind in ("timestamp_ns", "timestamptz_ns"):
        micros, nanos = divmod(value, 1000)
        text = timestamp_text(micros) + f"{nanos:03d}"
        return text + "+00:00" if kind == "timestamptz_ns" else text
    if kind in ("binary", "fixed"):
        return bytes(value).hex().upper()
    if kind == "uuid":
        return str(value if isinstance(value, uuid.UUID) else uuid.UUID(bytes=bytes(value)))
    if kind == "decimal":
        return _decimal_text(Decimal(value), typ.scale or 0)
    if kind in ("float", "double"):
        return float(value)
    return value


def to_json_scalar(typ: IcebergType, value: Any) -> Any:
    """to_json_value, with a float that JSON has no number for written as Jackson writes it: "NaN",
    "Infinity", "-Infinity"."""
    out = to_json_value(typ, value)
    if isinstance(out, float) and not math.isfinite(out):
        return "NaN" if math.isnan(out) else ("Infinity" if out > 0 else "-Infinity")
    return out


_DATETIME_UNITS: dict[str, Literal["D", "us"]] = {"date": "D", "timestamp": "us", "timestamptz": "us"}
_AS_IS = frozenset({"boolean", "int", "long", "string"})


def to_json_column(typ: IcebergType, values: Sequence[Any]) -> list[Any]:
    """to_json_scalar of each of many values of one type; dates and timestamps written as one array."""
    kind = typ.kind if isinstance(typ, PrimitiveType) else ""
    if kind in _AS_IS:
        return list(values)
    unit = _DATETIME_UNITS.get(kind)
    present = [v for v in values if v is not None]
    if unit is None or not _in_python_range(present, unit):  # (numpy writes other years than Java does)
        return [to_json_scalar(typ, v) for v in values]
    suffix = "+00:00" if kind == "timestamptz" else ""
    stamps = np.array(present, dtype=np.int64).astype(f"datetime64[{unit}]")
    texts = iter(np.datetime_as_string(stamps, unit=unit).tolist())
    return [None if v is None else next(texts) + suffix for v in values]


# Python's dates run from year 1 to 9999; Java's (LocalDate) far past both ends
_FIRST_DAY, _LAST_DAY = (date.min - _EPOCH_DATE).days, (date.max - _EPOCH_DATE).days
_DAY_MICROS = 86_400_000_000


def date_text(days: int) -> str:
    """Days from the epoch as Java's ISO_LOCAL_DATE writes them: "2007-12-03", and past Python's years as
    Java writes those, "+10000-01-01", "0000-12-31", "-0001-01-01", "-12345-06-07"."""
    if _FIRST_DAY <= days <= _LAST_DAY:
        return (_EPOCH_DATE + timedelta(days=days)).isoformat()
    year, month, day = _civil(days)
    if abs(year) < 1000:
        text = f"-{-year:04d}" if year < 0 else f"{year:04d}"
    else:
        text = f"+{year}" if year > 9999 else str(year)
    return f"{text}-{month:02d}-{day:02d}"


def timestamp_text(micros: int) -> str:
    """Microseconds from the epoch as Java writes a LocalDateTime with microseconds ("...T10:15:30.123456"),
    whatever the year (date_text)."""
    days, within = divmod(micros, _DAY_MICROS)
    clock = (_EPOCH + timedelta(microseconds=within)).time().isoformat(timespec="microseconds")
    return f"{date_text(days)}T{clock}"


def _civil(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian (year, month, day) of a day from the epoch, any year (H. Hinnant's
    civil_from_days, on Python's floor division)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def _in_python_range(values: Sequence[int], unit: str) -> bool:
    if not values:
        return True
    scale = 1 if unit == "D" else _DAY_MICROS
    return _FIRST_DAY * scale <= min(values) and max(values) < (_LAST_DAY + 1) * scale


def _decimal_text(value: Decimal, scale: int) -> str:
    """BigDecimal.toString at the type's scale: plain digits, scientific only for a negative scale."""
    # Iceberg's decimals reach 38 digits, past the default context's 28: quantize in a wide enough one
    wide = Context(prec=max(_DECIMAL_DIGITS, len(value.as_tuple().digits) + abs(scale)))
    quantized = value.quantize(Decimal(1).scaleb(-scale), context=wide) if scale >= 0 else value
    return str(quantized) if scale >= 0 else f"{quantized:E}"

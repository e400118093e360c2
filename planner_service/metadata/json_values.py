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
    if kind == "date":
        return (_EPOCH_DATE + timedelta(days=value)).isoformat()
    if kind == "time":
        return (_EPOCH + timedelta(microseconds=value)).time().isoformat(timespec="microseconds")
    if kind in ("timestamp", "timestamptz"):
        text = (_EPOCH + timedelta(microseconds=value)).isoformat(timespec="microseconds")
        return text + "+00:00" if kind == "timestamptz" else text
    if kind in ("timestamp_ns", "timestamptz_ns"):
        micros, nanos = divmod(value, 1000)
        text = (_EPOCH + timedelta(microseconds=micros)).isoformat(timespec="microseconds") + f"{nanos:03d}"
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
    if unit is None:
        return [to_json_scalar(typ, v) for v in values]
    present = np.array([v for v in values if v is not None], dtype=np.int64).astype(f"datetime64[{unit}]")
    suffix = "+00:00" if kind == "timestamptz" else ""
    texts = iter(np.datetime_as_string(present, unit=unit).tolist())
    return [None if v is None else next(texts) + suffix for v in values]


def _decimal_text(value: Decimal, scale: int) -> str:
    """BigDecimal.toString at the type's scale: plain digits, scientific only for a negative scale."""
    # Iceberg's decimals reach 38 digits, past the default context's 28: quantize in a wide enough one
    wide = Context(prec=max(_DECIMAL_DIGITS, len(value.as_tuple().digits) + abs(scale)))
    quantized = value.quantize(Decimal(1).scaleb(-scale), context=wide) if scale >= 0 else value
    return str(quantized) if scale >= 0 else f"{quantized:E}"

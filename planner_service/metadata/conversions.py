"""Iceberg's single-value binary serialization (spec Appendix D; Java Conversions.fromByteBuffer) and
the value order Iceberg Java compares by (Comparators.forType)."""

from __future__ import annotations

import functools
import math
import struct
import uuid
from collections.abc import Callable
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from typing import Any

from planner_service.errors import CorruptMetadataError
from planner_service.metadata.types import IcebergType, PrimitiveType

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


def from_bytes(typ: IcebergType, data: bytes | None) -> Any:
    """Decode a bound (lower/upper, partition summary) into Iceberg's internal Python value.

    Internal values: int for int/long/date/time/timestamp*, float, bool, str, bytes (binary, fixed),
    Decimal, uuid.UUID; None for a missing bound or the unknown type.
    """
    if data is None or not isinstance(typ, PrimitiveType):
        return None
    kind = typ.kind
    if kind in ("int", "date"):
        return _I32.unpack_from(data)[0]
    if kind in ("long", "time", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"):
        # fewer than 8 bytes: an int written before a promotion to long (Java reads it widened)
        return _I64.unpack_from(data)[0] if len(data) >= 8 else _I32.unpack_from(data)[0]
    if kind == "float":
        return _F32.unpack_from(data)[0]
    if kind == "double":
        return _F64.unpack_from(data)[0] if len(data) >= 8 else _F32.unpack_from(data)[0]
    if kind == "boolean":
        return data[0] != 0
    if kind == "string":
        try:
            return data.decode("utf-8")  # strict, as Java's CharsetDecoder
        except UnicodeDecodeError:  # (Java fails the plan too: "Failed to decode value as UTF-8")
            raise CorruptMetadataError(f"Failed to decode a string value as UTF-8: bytes {data[:40].hex()}") from None
    if kind == "uuid":
        return uuid.UUID(bytes=bytes(data[:16]))
    if kind in ("binary", "fixed"):
        return bytes(data)
    if kind == "decimal":
        return decimal_of(int.from_bytes(data, "big", signed=True), typ.scale or 0)
    return None  # unknown, variant, geometry: no usable bound


def to_bytes(typ: IcebergType, value: Any) -> bytes:
    """Encode an internal value in the single-value binary form (the inverse of from_bytes)."""
    assert isinstance(typ, PrimitiveType), typ
    kind = typ.kind
    if kind in ("int", "date"):
        return _I32.pack(value)
    if kind in ("long", "time", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"):
        return _I64.pack(value)
    if kind == "float":
        return _F32.pack(value)
    if kind == "double":
        return _F64.pack(value)
    if kind == "boolean":
        return b"\x01" if value else b"\x00"
    if kind == "string":
        return str(value).encode("utf-8")
    if kind == "uuid":
        return value.bytes if isinstance(value, uuid.UUID) else bytes(value)
    if kind in ("binary", "fixed"):
        return bytes(value)
    if kind == "decimal":
        unscaled = unscaled_value(Decimal(value), typ.scale or 0)
        return unscaled.to_bytes(max(1, (unscaled + (unscaled < 0)).bit_length() // 8 + 1), "big", signed=True)
    raise ValueError(f"Cannot serialize a value of type {typ}")


_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


def decimal_of(unscaled: int, scale: int) -> Decimal:
    """The exact decimal unscaled * 10^-scale (Decimal arithmetic would round to 28 digits)."""
    return Decimal(unscaled).scaleb(-scale, context=_EXACT)


def unscaled_value(value: Decimal, scale: int) -> int:
    """The unscaled integer of a decimal at a scale (its digits beyond the scale truncated)."""
    return int(value.scaleb(scale, context=_EXACT))


def _java_double_key(v: float) -> tuple[int, float]:
    # Double.compare: -0.0 < 0.0 and NaN above +Infinity (NaN equal to itself)
    if math.isnan(v):
        return (2, 0.0)
    if v == 0.0:
        return (0, -0.5 if math.copysign(1.0, v) < 0 else 0.0)
    return (0, v)


def _java_uuid_key(v: uuid.UUID) -> tuple[int, int]:
    # UUID.compareTo compares the signed most- then least-significant 64 bits
    msb, lsb = v.int >> 64, v.int & ((1 << 64) - 1)
    return (msb - (1 << 64) if msb >= 1 << 63 else msb, lsb - (1 << 64) if lsb >= 1 << 63 else lsb)


@functools.cache
def sort_key(typ: IcebergType) -> Callable[[Any], Any]:
    """A key function giving Iceberg Java's order for non-null values of the type."""
    kind = typ.kind if isinstance(typ, PrimitiveType) else ""
    if kind in ("float", "double"):
        return _java_double_key
    if kind == "uuid":
        return _java_uuid_key
    return _identity


def _identity(v: Any) -> Any:
    return v


def compare(typ: IcebergType, a: Any, b: Any) -> int:
    """Java comparator result (-1, 0, 1) of two non-null values."""
    key = sort_key(typ)
    ka, kb = key(a), key(b)
    return int((ka > kb) - (ka < kb))


def java_equality_key(value: Any) -> Any:
    """A key equal for two values exactly when Java's `equals` holds for them.

    Python's == says Decimal("1.5") == Decimal("1.50") and 0.0 == -0.0; Java's BigDecimal.equals
    includes the scale, and Double/Float.equals compare bits (so -0.0 != 0.0 and NaN equals NaN).
    Other internal values (int, str, bytes, bool, UUID) already compare like Java.
    """
    if isinstance(value, float):
        return ("NaN",) if math.isnan(value) else (value, math.copysign(1.0, value))
    if isinstance(value, Decimal):
        return (value, value.as_tuple().exponent)  # BigDecimal has no -0, and == treats -0 as 0 too
    return value

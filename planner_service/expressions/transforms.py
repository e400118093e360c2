"""Partition transforms applied to single internal values, exactly as Iceberg Java 1.10 does.

Spec: "Partition Transforms" and Appendix B (bucket hashes). Java: Bucket/BucketUtil, Truncate/TruncateUtil,
Dates, Timestamps and DateTimeUtil. Values use the internal representation of metadata.conversions: int for
int/long/date (days)/time (µs)/timestamp (µs)/timestamp_ns (ns), str, bytes, Decimal, uuid.UUID.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import mmh3

from planner_service.metadata.partitioning import Transform
from planner_service.metadata.types import PrimitiveType

__all__ = [
    "apply_transform",
    "bind_transform",
    "bucket",
    "bucket_hash",
    "can_transform",
    "days_to_months",
    "days_to_years",
    "micros_to_days",
    "micros_to_hours",
    "micros_to_months",
    "micros_to_years",
    "nanos_to_days",
    "nanos_to_hours",
    "nanos_to_months",
    "nanos_to_years",
    "truncate",
]

_LONG_LE = struct.Struct("<q")

_MICROS_PER_SECOND = 1_000_000
_NANOS_PER_SECOND = 1_000_000_000
_SECONDS_PER_HOUR = 3_600
_SECONDS_PER_DAY = 86_400

_TIMESTAMP_KINDS = frozenset({"timestamp", "timestamptz"})
_TIMESTAMP_NS_KINDS = frozenset({"timestamp_ns", "timestamptz_ns"})
_HASHED_AS_LONG = frozenset({"int", "long", "date", "time"}) | _TIMESTAMP_KINDS
_BUCKET_SOURCES = _HASHED_AS_LONG | _TIMESTAMP_NS_KINDS | {"decimal", "string", "uuid", "fixed", "binary"}
_TRUNCATE_SOURCES = frozenset({"int", "long", "decimal", "string", "binary"})  # Java Truncate: not fixed
_HOUR_SOURCES = _TIMESTAMP_KINDS | _TIMESTAMP_NS_KINDS
_DATE_UNIT_SOURCES = _HOUR_SOURCES | {"date"}
_NO_IDENTITY_PREFIXES = ("variant", "geometry", "geography")  # Java Identity.UNSUPPORTED_TYPES
_KNOWN_TRANSFORMS = frozenset({"identity", "bucket", "truncate", "year", "month", "day", "hour", "void"})


# ---------------------------------------------------------------------------------------------------------
# Java integer arithmetic


def _wrap(value: int, bits: int) -> int:
    """`value` as a Java signed int (bits=32) or long (bits=64) after two's-complement overflow."""
    half = 1 << (bits - 1)
    return ((value + half) % (1 << bits)) - half


def _java_rem(dividend: int, divisor: int) -> int:
    """Java's `%`: the remainder of division truncated toward zero, so it takes the dividend's sign."""
    remainder = abs(dividend) % abs(divisor)
    return -remainder if dividend < 0 else remainder


# ---------------------------------------------------------------------------------------------------------
# Decimals as (unscaled, scale), like Java's BigDecimal


def _unscaled(value: Decimal) -> tuple[int, int]:
    """The unscaled integer and scale of a finite Decimal (Java BigDecimal.unscaledValue() and scale())."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise ValueError(f"Not a finite decimal: {value}")
    unscaled = int("".join(map(str, digits)) or "0")
    return (-unscaled if sign else unscaled), -exponent


def _decimal(unscaled: int, scale: int) -> Decimal:
    """Java `new BigDecimal(unscaled, scale)`, built exactly (no context rounding past 28 digits)."""
    digits = tuple(int(c) for c in str(abs(unscaled)))
    return Decimal((1 if unscaled < 0 else 0, digits, -scale))


def _min_twos_complement(value: int) -> bytes:
    """Java BigInteger.toByteArray(): the shortest big-endian two's complement, at least one byte."""
    length = (value if value >= 0 else ~value).bit_length() // 8 + 1
    return value.to_bytes(length, "big", signed=True)


# ---------------------------------------------------------------------------------------------------------
# Bucket


def _hash_input(typ: PrimitiveType, value: Any) -> bytes:
    """The bytes Iceberg hashes for a value of `typ` (spec Appendix B)."""
    kind = typ.kind
    if kind in _HASHED_AS_LONG:
        return _LONG_LE.pack(value)  # Java BucketUtil.hash(int): hashLong of the int widened to a long
    if kind in _TIMESTAMP_NS_KINDS:
        return _LONG_LE.pack(value // 1000)  # Java Bucket: DateTimeUtil.nanosToMicros is floorDiv(ns, 1000)
    if kind == "string":
        return str(value).encode("utf-8", errors="replace")  # Guava hashString: an unpaired surrogate is '?'
    if kind in ("binary", "fixed"):
        return bytes(value)
    if kind == "decimal":
        return _min_twos_complement(_unscaled(value)[0])  # Java: unscaledValue().toByteArray(), scale ignored
    if kind == "uuid":
        return value.bytes if isinstance(value, uuid.UUID) else bytes(value)  # 16 bytes, big-endian
    raise ValueError(f"Cannot bucket by type: {typ}")


def bucket_hash(typ: PrimitiveType, value: Any) -> int:
    """Iceberg's 32-bit bucket hash of a non-null value: Murmur3 x86_32, seed 0, as a signed int."""
    return int(mmh3.hash(_hash_input(typ, value), 0, signed=True))


def bucket(typ: PrimitiveType, n: int, value: Any) -> int | None:
    """The bucket[n] partition value of `value` (None stays None)."""
    if n <= 0:
        raise ValueError(f"Invalid number of buckets: {n} (must be > 0)")
    if value is None:
        return None
    return (bucket_hash(typ, value) & 0x7FFFFFFF) % n  # Java Bucket.apply


# ---------------------------------------------------------------------------------------------------------
# Truncate


def _truncate_integer(value: int, width: int, bits: int) -> int:
    """Java TruncateUtil.truncateInt/truncateLong: `v - (((v % W) + W) % W)` in Java int/long arithmetic."""
    remainder = _java_rem(_wrap(_java_rem(value, width) + width, bits), width)  # (v % W) + W wraps for W > 2^30
    return _wrap(value - remainder, bits)  # Java: near MIN_VALUE the subtraction overflows and wraps


def _truncate_decimal(value: Decimal, width: int) -> Decimal:
    """Java TruncateUtil.truncateDecimal: W applies to the unscaled value; the result keeps v's scale."""
    unscaled, scale = _unscaled(value)
    remainder = _java_rem(_java_rem(unscaled, width) + width, width)  # BigInteger.remainder truncates, like %
    return _decimal(unscaled - remainder, scale)


def truncate(typ: PrimitiveType, width: int, value: Any) -> Any:
    """The truncate[width] partition value of `value` (None stays None)."""
    if width <= 0:
        raise ValueError(f"Invalid truncate width: {width} (must be > 0)")
    if value is None:
        return None
    kind = typ.kind
    if kind == "int":
        return _truncate_integer(value, width, 32)
    if kind == "long":
        return _truncate_integer(value, width, 64)
    if kind == "decimal":
        return _truncate_decimal(value, width)
    if kind == "string":
        return value[:width]  # Java UnicodeUtil.truncateString: the first W code points
    if kind == "binary":
        return bytes(value[:width])  # Java BinaryUtil.truncateBinaryUnsafe: the first W bytes
    raise ValueError(f"Cannot truncate type: {typ}")


# ---------------------------------------------------------------------------------------------------------
# Time units (Java DateTimeUtil)


def _year_month(days: int) -> tuple[int, int]:
    """The proleptic Gregorian (year, month) of a day count from 1970-01-01, for any integer."""
    z = days + 719_468  # days from 0000-03-01: March-based years put the leap day last
    era = z // 146_097  # 400-year cycles
    day_of_era = z - era * 146_097
    year_of_era = (day_of_era - day_of_era // 1_460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    march_month = (5 * day_of_year + 2) // 153  # 0 = March ... 11 = February
    month = march_month + 3 if march_month < 10 else march_month - 9
    return era * 400 + year_of_era + (month <= 2), month


def days_to_years(days: int) -> int:
    """Java DateTimeUtil.daysToYears: whole years since 1970 (floor; convertDays has no quirk)."""
    return _year_month(days)[0] - 1970


def days_to_months(days: int) -> int:
    """Java DateTimeUtil.daysToMonths: whole months since 1970-01 (floor)."""
    year, month = _year_month(days)
    return (year - 1970) * 12 + month - 1


def _java_tick(value: int, per_second: int) -> int:
    """The tick whose floor Java's convertMicros/convertNanos returns for `value` (µs or ns since epoch).

    For v < 0 Java returns between(EPOCH, s + f) - 1 with s = floorDiv(v, 1s) and f = floorMod(v + 1, 1s),
    `between` truncating toward zero; that is floor(s + f - 1 tick). Normally s + f = v + 1, giving floor(v).
    """
    if value < 0 and (value + 1) % per_second == 0:
        # Java DateTimeUtil.convertMicros: f wraps to 0 but s misses the carry, so the instant is 1s early
        return value - per_second
    return value


def _timestamp_unit(value: int, per_second: int, unit: str) -> int:
    """Whole `unit`s (year, month, day, hour) between the epoch and a timestamp, as Java computes them."""
    tick = _java_tick(value, per_second)
    if unit == "hour":
        return tick // (per_second * _SECONDS_PER_HOUR)
    days = tick // (per_second * _SECONDS_PER_DAY)
    if unit == "day":
        return days
    return days_to_years(days) if unit == "year" else days_to_months(days)


def micros_to_years(micros: int) -> int:
    """Java DateTimeUtil.microsToYears, including its pre-epoch off-by-one."""
    return _wrap(_timestamp_unit(micros, _MICROS_PER_SECOND, "year"), 32)


def micros_to_months(micros: int) -> int:
    """Java DateTimeUtil.microsToMonths, including its pre-epoch off-by-one."""
    return _wrap(_timestamp_unit(micros, _MICROS_PER_SECOND, "month"), 32)


def micros_to_days(micros: int) -> int:
    """Java DateTimeUtil.microsToDays, including its pre-epoch off-by-one."""
    return _wrap(_timestamp_unit(micros, _MICROS_PER_SECOND, "day"), 32)


def micros_to_hours(micros: int) -> int:
    """Java DateTimeUtil.microsToHours, including its pre-epoch off-by-one."""
    # Java: convertMicros casts `between` with (int), so hours past ±2^31 (years beyond ~245,000) wrap
    return _wrap(_timestamp_unit(micros, _MICROS_PER_SECOND, "hour"), 32)


def nanos_to_years(nanos: int) -> int:
    """Java DateTimeUtil.nanosToYears, including its pre-epoch off-by-one."""
    return _timestamp_unit(nanos, _NANOS_PER_SECOND, "year")


def nanos_to_months(nanos: int) -> int:
    """Java DateTimeUtil.nanosToMonths, including its pre-epoch off-by-one."""
    return _timestamp_unit(nanos, _NANOS_PER_SECOND, "month")


def nanos_to_days(nanos: int) -> int:
    """Java DateTimeUtil.nanosToDays, including its pre-epoch off-by-one."""
    return _timestamp_unit(nanos, _NANOS_PER_SECOND, "day")


def nanos_to_hours(nanos: int) -> int:
    """Java DateTimeUtil.nanosToHours (Math.toIntExact never fails: a long of ns spans only ±292 years)."""
    return _timestamp_unit(nanos, _NANOS_PER_SECOND, "hour")


def _identity(value: Any) -> Any:
    return value


_DATE_UNITS: dict[str, Callable[[int], int]] = {"year": days_to_years, "month": days_to_months, "day": _identity}
_MICROS_UNITS: dict[str, Callable[[int], int]] = {
    "year": micros_to_years,
    "month": micros_to_months,
    "day": micros_to_days,
    "hour": micros_to_hours,
}
_NANOS_UNITS: dict[str, Callable[[int], int]] = {
    "year": nanos_to_years,
    "month": nanos_to_months,
    "day": nanos_to_days,
    "hour": nanos_to_hours,
}


def _time_function(unit: str, kind: str) -> Callable[[int], int]:
    """Java TimeTransform.fromSourceType: Dates for a date source, Timestamps MICROS or NANOS otherwise."""
    if kind == "date":
        return _DATE_UNITS[unit]
    return _NANOS_UNITS[unit] if kind in _TIMESTAMP_NS_KINDS else _MICROS_UNITS[unit]


# ---------------------------------------------------------------------------------------------------------
# Dispatch


def can_transform(transform: Transform, source_type: PrimitiveType) -> bool:
    """Java Transform.canTransform: whether `transform` accepts values of `source_type`."""
    kind = source_type.kind
    name = transform.name
    if name == "identity":
        return not kind.startswith(_NO_IDENTITY_PREFIXES)
    if name == "bucket":
        return kind in _BUCKET_SOURCES  # not float, double or boolean
    if name == "truncate":
        return kind in _TRUNCATE_SOURCES
    if name in ("year", "month", "day"):
        return kind in _DATE_UNIT_SOURCES
    if name == "hour":
        return kind in _HOUR_SOURCES
    return True  # void; Java UnknownTransform.canTransform also assumes any type


def _param(transform: Transform) -> int:
    if transform.param is None:
        raise ValueError(f"Transform {transform} needs a parameter")
    return transform.param


def bind_transform(transform: Transform, source_type: PrimitiveType) -> Callable[[Any], Any]:
    """Check `transform` against `source_type` once and return the function applying it (None -> None).

    Raises ValueError for an unknown transform (Java UnknownTransform.apply throws), an unsupported
    source type, or a missing/non-positive bucket count or width.
    """
    name = transform.name
    if name not in _KNOWN_TRANSFORMS:
        raise ValueError(f"Cannot apply unsupported transform: {transform}")
    if not can_transform(transform, source_type):
        raise ValueError(f"Cannot apply {transform} to type {source_type}")
    if name == "void":
        return lambda value: None  # Java VoidTransform.apply is always null
    if name == "identity":
        return _identity
    if name in ("bucket", "truncate"):
        param = _param(transform)
        apply: Callable[[PrimitiveType, int, Any], Any] = bucket if name == "bucket" else truncate
        apply(source_type, param, None)  # validates the parameter now, as Java's Bucket.get/Truncate.get do
        return lambda value: apply(source_type, param, value)
    unit_function = _time_function(name, source_type.kind)
    return lambda value: None if value is None else unit_function(value)


def apply_transform(transform: Transform, source_type: PrimitiveType, value: Any) -> Any:
    """The partition value `transform` gives `value` of `source_type` (None stays None)."""
    return bind_transform(transform, source_type)(value)

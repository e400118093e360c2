"""Typed literals and their conversion to a column's type (Iceberg Java `Literals`, 1.10).

A literal keeps the kind of value it was written as (Java's literal class): a JSON number without a
fraction is a `long`, with one a `double`, a JSON string a `string`; filter strings add typed `date`,
`timestamp` and `decimal` literals. Binding converts it with `convert()`, which follows `Literal.to(type)`
exactly: what converts, what overflows to ABOVE_MAX / BELOW_MIN (the predicate then folds to a constant),
and what cannot convert (None: the caller reports a bad filter). Values are Iceberg's internal form
(metadata/conversions.py): days, microseconds, nanoseconds as int; Decimal; uuid.UUID; bytes.
"""

from __future__ import annotations

import math
import re
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from planner_service.expressions.transforms import micros_to_days, nanos_to_days
from planner_service.metadata.types import IcebergType, PrimitiveType

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
FLOAT_MAX = 3.4028234663852886e38  # Float.MAX_VALUE

# Java class names, for messages that read like Iceberg's
_JAVA_CLASS = {
    "boolean": "java.lang.Boolean",
    "int": "java.lang.Integer",
    "long": "java.lang.Long",
    "float": "java.lang.Float",
    "double": "java.lang.Double",
    "date": "java.lang.Integer",
    "time": "java.lang.Long",
    "timestamp": "java.lang.Long",
    "timestamp_ns": "java.lang.Long",
    "decimal": "java.math.BigDecimal",
    "string": "java.lang.String",
    "uuid": "java.util.UUID",
    "fixed": "java.nio.HeapByteBuffer",
    "binary": "java.nio.HeapByteBuffer",
}
KINDS = frozenset(_JAVA_CLASS)


@dataclass(frozen=True)
class Literal:
    """A value and the kind it was written as (one of KINDS). A string from a REST JSON expression is
    `hex`: bound to a binary or fixed column it is that column's bytes in hex (the REST spec writes them so,
    as Java's SingleValueParser reads them given the schema); compared and hashed as any string."""

    kind: str
    value: Any
    hex: bool = field(default=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Unknown literal kind {self.kind!r}")
        if self.value is None:
            raise ValueError("Cannot create expression literal from null")
        if isinstance(self.value, float) and math.isnan(self.value):
            raise ValueError("Cannot create expression literal from NaN")

    @property
    def java_class(self) -> str:
        return _JAVA_CLASS[self.kind]

    def __str__(self) -> str:
        if self.kind == "string":
            return f'"{self.value}"'
        if self.kind in ("fixed", "binary"):
            return "X'" + bytes(self.value).hex().upper() + "'"
        return str(self.value)


class _Bound:
    """ABOVE_MAX / BELOW_MIN: the literal lies outside the column type's range."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


ABOVE_MAX = _Bound("aboveMax")
BELOW_MIN = _Bound("belowMin")
Converted = Literal | _Bound


def literal_of(value: Any) -> Literal:
    """A literal from a Python value, as Java's Literals.from would type it."""
    if isinstance(value, Literal):
        return value
    if isinstance(value, bool):
        return Literal("boolean", value)
    if isinstance(value, int):
        return Literal("long", value)
    if isinstance(value, float):
        return Literal("double", value)
    if isinstance(value, str):
        return Literal("string", value)
    if isinstance(value, Decimal):
        return Literal("decimal", value)
    if isinstance(value, uuid.UUID):
        return Literal("uuid", value)
    if isinstance(value, bytes | bytearray):
        return Literal("binary", bytes(value))
    if isinstance(value, datetime):
        return Literal("timestamp", datetime_to_micros(value))
    if isinstance(value, date):
        return Literal("date", (value - _EPOCH_DATE).days)
    raise ValueError(f"Cannot create expression literal from {type(value).__name__}: {value!r}")


def convert(lit: Literal, typ: IcebergType) -> Converted | None:
    """Java Literal.to(type): the converted literal, ABOVE_MAX / BELOW_MIN, or None when impossible."""
    if not isinstance(typ, PrimitiveType):
        return None
    target = typ.kind
    try:
        if lit.hex and target in ("binary", "fixed"):  # a REST JSON string: the bytes in hex
            return _from_bytes(bytes.fromhex(lit.value), target, typ)
        return _CONVERTERS[lit.kind](lit.value, target, typ)
    except (ValueError, InvalidOperation, OverflowError):
        return None  # unparseable text: Java throws a parse exception; callers report a bad value


def _range_checked_int(value: int, kind: str) -> Converted:
    if value > INT_MAX:
        return ABOVE_MAX
    if value < INT_MIN:
        return BELOW_MIN
    return Literal(kind, value)


def _to_decimal(value: Decimal, typ: PrimitiveType) -> Literal:
    # BigDecimal.valueOf(x).setScale(type scale, HALF_UP)
    return Literal("decimal", value.quantize(Decimal(1).scaleb(-(typ.scale or 0)), rounding=ROUND_HALF_UP))


def _from_int(value: int, target: str, typ: PrimitiveType) -> Converted | None:
    if target in ("int", "date"):
        return Literal(target, value)
    return _from_integral(value, target, typ)


def _from_long(value: int, target: str, typ: PrimitiveType) -> Converted | None:
    if target in ("int", "date"):
        return _range_checked_int(value, target)
    if target == "time":
        return Literal("time", value)
    if target in ("timestamp", "timestamptz"):
        return Literal("timestamp", value)
    if target in ("timestamp_ns", "timestamptz_ns"):
        return Literal("timestamp_ns", _long_nanos(value * 1000))  # Java: a long is taken as micros, then converted
    return _from_integral(value, target, typ)


def _from_integral(value: int, target: str, typ: PrimitiveType) -> Converted | None:
    """What Java's IntegerLiteral and LongLiteral both convert to: long, float, double and decimal."""
    if target == "long":
        return Literal("long", value)
    if target == "float":
        return Literal("float", to_float32(float(value)))
    if target == "double":
        return Literal("double", float(value))
    if target == "decimal":
        return _to_decimal(Decimal(value), typ)
    return None


def _from_float(value: float, target: str, typ: PrimitiveType) -> Converted | None:
    if target == "float":
        return Literal("float", value)
    if target == "double":
        return Literal("double", value)
    if target == "decimal":
        return _to_decimal(Decimal(repr(value)), typ)  # BigDecimal.valueOf(double) uses Double.toString
    return None


def _from_double(value: float, target: str, typ: PrimitiveType) -> Converted | None:
    if target == "float":
        if value > FLOAT_MAX:
            return ABOVE_MAX
        if value < -FLOAT_MAX:
            return BELOW_MIN
        return Literal("float", to_float32(value))
    return _from_float(value, target, typ)


def _from_date(value: int, target: str, typ: PrimitiveType) -> Converted | None:
    return Literal("date", value) if target == "date" else None


def _from_time(value: int, target: str, typ: PrimitiveType) -> Converted | None:
    return Literal("time", value) if target == "time" else None


def _from_timestamp(value: int, target: str, typ: PrimitiveType) -> Converted | None:
    if target in ("timestamp", "timestamptz"):
        return Literal("timestamp", value)
    if target == "date":
        return Literal("date", micros_to_days(value))  # Java Literals: DateTimeUtil.microsToDays
    if target in ("timestamp_ns", "timestamptz_ns"):
        return Literal("timestamp_ns", _long_nanos(value * 1000))
    return None


def _from_timestamp_ns(value: int, target: str, typ: PrimitiveType) -> Converted | None:
    if target in ("timestamp_ns", "timestamptz_ns"):
        return Literal("timestamp_ns", value)
    if target in ("timestamp", "timestamptz"):
        return Literal("timestamp", value // 1000)  # DateTimeUtil.nanosToMicros: floorDiv
    if target == "date":
        return Literal("date", nanos_to_days(value))  # Java Literals: DateTimeUtil.nanosToDays
    return None


def _from_decimal(value: Decimal, target: str, typ: PrimitiveType) -> Converted | None:
    return Literal("decimal", value) if target == "decimal" else None  # the literal keeps its own scale


def _from_string(value: str, target: str, typ: PrimitiveType) -> Converted | None:
    if target == "string":
        return Literal("string", value)
    if target == "date":
        return Literal("date", (date.fromisoformat(_strict(_ISO_DATE, value)) - _EPOCH_DATE).days)
    if target == "time":
        return Literal("time", parse_time_micros(value))
    if target in ("timestamp", "timestamptz"):
        return Literal("timestamp", _trunc_div(parse_timestamp_nanos(value, target == "timestamptz"), 1000))
    if target in ("timestamp_ns", "timestamptz_ns"):
        return Literal("timestamp_ns", _long_nanos(parse_timestamp_nanos(value, target == "timestamptz_ns")))
    if target == "uuid":
        return Literal("uuid", uuid.UUID(value))
    if target == "decimal":
        return Literal("decimal", parse_decimal(value))
    return None


def _from_uuid(value: uuid.UUID, target: str, typ: PrimitiveType) -> Converted | None:
    return Literal("uuid", value) if target == "uuid" else None


def _from_bytes(value: bytes, target: str, typ: PrimitiveType) -> Converted | None:
    if target == "binary":
        return Literal("binary", value)
    if target == "fixed" and len(value) == typ.length:
        return Literal("fixed", value)
    return None


def _from_boolean(value: bool, target: str, typ: PrimitiveType) -> Converted | None:
    return Literal("boolean", value) if target == "boolean" else None


_CONVERTERS: dict[str, Callable[[Any, str, PrimitiveType], Converted | None]] = {
    "boolean": _from_boolean,
    "int": _from_int,
    "long": _from_long,
    "float": _from_float,
    "double": _from_double,
    "date": _from_date,
    "time": _from_time,
    "timestamp": _from_timestamp,
    "timestamp_ns": _from_timestamp_ns,
    "decimal": _from_decimal,
    "string": _from_string,
    "uuid": _from_uuid,
    "fixed": _from_bytes,
    "binary": _from_bytes,
}


# --- Parsing and arithmetic helpers (java.time's ISO formats) ---------------------------------------------

_EPOCH_DATE = date(1970, 1, 1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)
_ISO_TIME = re.compile(r"(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?", re.ASCII)


def _strict(pattern: re.Pattern[str], text: str) -> str:
    if pattern.fullmatch(text) is None:
        raise ValueError(f"Text '{text}' could not be parsed")
    return text


def parse_time_nanos(text: str) -> int:
    """DateTimeFormatter.ISO_LOCAL_TIME: HH:mm[:ss[.fraction]], as nanoseconds of the day."""
    m = _ISO_TIME.fullmatch(text)
    if m is None:
        raise ValueError(f"Text '{text}' could not be parsed")
    hours, minutes, seconds = int(m[1]), int(m[2]), int(m[3] or 0)
    if hours > 23 or minutes > 59 or seconds > 59:
        raise ValueError(f"Text '{text}' could not be parsed: invalid time")
    fraction = int((m[4] or "").ljust(9, "0"))
    return ((hours * 60 + minutes) * 60 + seconds) * 1_000_000_000 + fraction


def parse_time_micros(text: str) -> int:
    return parse_time_nanos(text) // 1000  # LocalTime.toNanoOfDay() / 1000


def parse_timestamp_nanos(text: str, with_zone: bool) -> int:
    """ISO_LOCAL_DATE_TIME (no zone) or ISO_DATE_TIME with a required offset (timestamptz), as epoch nanos.

    Java's ChronoUnit.between truncates toward zero, so sub-unit digits of pre-epoch values round up.
    """
    date_part, sep, rest = text.partition("T")
    if not sep:
        raise ValueError(f"Text '{text}' could not be parsed")
    offset_seconds = 0
    if with_zone:
        m = re.search(r"(Z|[+-]\d{2}:\d{2}(?::\d{2})?)$", rest, re.ASCII)
        if m is None:
            raise ValueError(f"Text '{text}' could not be parsed: a timestamptz value needs an offset")
        rest, offset = rest[: m.start()], m[1]
        if offset != "Z":
            sign = -1 if offset[0] == "-" else 1
            parts = [int(p) for p in offset[1:].split(":")]
            offset_seconds = sign * (parts[0] * 3600 + parts[1] * 60 + (parts[2] if len(parts) > 2 else 0))
    day = (date.fromisoformat(_strict(_ISO_DATE, date_part)) - _EPOCH_DATE).days
    nanos_of_day = parse_time_nanos(rest)
    return (day * 86400 - offset_seconds) * 1_000_000_000 + nanos_of_day


def parse_decimal(text: str) -> Decimal:
    """`new BigDecimal(text)`: keeps the text's scale; NaN, infinities and non-numbers are refused."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"Text {text[:40]!r} is not a decimal number") from None
    if not value.is_finite():
        raise ValueError(f"Text {text[:40]!r} is not a decimal number (a decimal has no NaN or infinity)")
    return value


def _long_nanos(nanos: int) -> int:
    """Nanoseconds from the epoch as Java's long holds them (ChronoUnit.NANOS.between, multiplyExact)."""
    if not -(2**63) <= nanos < 2**63:
        raise ValueError("Timestamp out of range for nanosecond precision (years 1677 to 2262)")
    return nanos


def _trunc_div(a: int, b: int) -> int:
    """Division truncating toward zero (Java's ChronoUnit.between on a finer-grained difference)."""
    return a // b if a >= 0 else -(-a // b)


def datetime_to_micros(value: datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def to_float32(value: float) -> float:
    """Round a double to the nearest float, as Java's (float) cast does."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def literal_from_json_value(node: Any) -> Literal:
    """ExpressionParser.asObject: integral JSON numbers are longs, others doubles; strings; booleans."""
    if isinstance(node, bool):
        return Literal("boolean", node)
    if isinstance(node, int):
        if not -(2**63) <= node < 2**63:
            raise ValueError(f"Cannot convert JSON to literal: {node}")
        return Literal("long", node)
    if isinstance(node, float):
        return Literal("double", node)
    if isinstance(node, str):
        return Literal("string", node, hex=True)
    raise ValueError(f"Cannot convert JSON to literal: {node!r}")

"""Partition transform values. Expected values come from the Iceberg spec (Appendix B, "Truncate Transform
Details"), the 1.10 reference (iceberg-planning-semantics.md §4.2-4.4, values verified on the Java classes),
Iceberg's TestDateTimeUtil, or are derived by hand from Java's int/long arithmetic as noted."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from planner_service.expressions.transforms import (
    apply_transform,
    bind_transform,
    bucket,
    bucket_hash,
    can_transform,
    days_to_months,
    days_to_years,
    micros_to_days,
    micros_to_hours,
    micros_to_months,
    micros_to_years,
    nanos_to_days,
    nanos_to_hours,
    nanos_to_months,
    nanos_to_years,
    truncate,
)
from planner_service.metadata.partitioning import Transform
from planner_service.metadata.types import PrimitiveType, parse_primitive

INT, LONG, DATE, TIME = (
    parse_primitive("int"),
    parse_primitive("long"),
    parse_primitive("date"),
    parse_primitive("time"),
)
TIMESTAMP, TIMESTAMPTZ = parse_primitive("timestamp"), parse_primitive("timestamptz")
TIMESTAMP_NS, TIMESTAMPTZ_NS = parse_primitive("timestamp_ns"), parse_primitive("timestamptz_ns")
STRING, BINARY, UUID = parse_primitive("string"), parse_primitive("binary"), parse_primitive("uuid")
FIXED4, DECIMAL = parse_primitive("fixed[4]"), parse_primitive("decimal(9, 2)")
FLOAT, DOUBLE, BOOLEAN = parse_primitive("float"), parse_primitive("double"), parse_primitive("boolean")

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
EPOCH_DATE = date(1970, 1, 1)
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def _days(d: date) -> int:
    return (d - EPOCH_DATE).days


def _micros(ts: datetime) -> int:
    return (ts - EPOCH) // timedelta(microseconds=1)


TS = _micros(datetime(2017, 11, 16, 22, 31, 8, tzinfo=UTC))  # 1510871468000000
TS_1US = TS + 1  # 2017-11-16T22:31:08.000001
TSTZ = _micros(datetime(2017, 11, 16, 14, 31, 8, tzinfo=timezone(timedelta(hours=-8))))


# --- bucket hashes: spec Appendix B ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typ", "value", "expected"),
    [
        (INT, 34, 2017239379),
        (LONG, 34, 2017239379),
        (DECIMAL, Decimal("14.20"), -500754589),
        (DATE, _days(date(2017, 11, 16)), -653330422),
        (TIME, (22 * 3600 + 31 * 60 + 8) * 1_000_000, -662762989),
        (TIMESTAMP, TS, -2047944441),
        (TIMESTAMP, TS_1US, -1207196810),
        (TIMESTAMPTZ, TSTZ, -2047944441),
        (TIMESTAMPTZ, TSTZ + 1, -1207196810),
        (TIMESTAMP_NS, TS * 1000, -2047944441),
        (TIMESTAMP_NS, TS * 1000 + 1001, -1207196810),  # 2017-11-16T22:31:08.000001001
        (TIMESTAMPTZ_NS, TSTZ * 1000, -2047944441),
        (TIMESTAMPTZ_NS, TSTZ * 1000 + 1001, -1207196810),
        (STRING, "iceberg", 1210000089),
        (UUID, uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), 1488055340),
        (FIXED4, bytes([0, 1, 2, 3]), -188683207),
        (BINARY, bytes([0, 1, 2, 3]), -188683207),
    ],
)
def test_spec_hash_values(typ: PrimitiveType, value: Any, expected: int) -> None:
    assert bucket_hash(typ, value) == expected


def test_decimal_hash_ignores_scale() -> None:
    # spec Appendix B note 2: the unscaled value's minimal bytes, not the scale
    assert bucket_hash(parse_primitive("decimal(9, 4)"), Decimal("0.1420")) == -500754589


def test_nanos_hash_as_floored_micros() -> None:
    # Java Bucket: DateTimeUtil.nanosToMicros is floorDiv(ns, 1000), so -1 ns hashes as -1 µs, not 0
    assert bucket_hash(TIMESTAMP_NS, -1) == bucket_hash(TIMESTAMP, -1)
    assert bucket_hash(TIMESTAMP_NS, -1) != bucket_hash(TIMESTAMP, 0)


@pytest.mark.parametrize("typ", [FLOAT, DOUBLE, BOOLEAN])
def test_unbucketable_types_raise(typ: PrimitiveType) -> None:
    with pytest.raises(ValueError, match="Cannot bucket"):
        bucket_hash(typ, 1)


def test_bucket_masks_sign_bit_then_mods() -> None:
    assert bucket(INT, 16, 34) == 3  # 2017239379 % 16
    # -500754589 & 0x7FFFFFFF = 2**31 - 500754589 = 1646729059
    assert bucket(DECIMAL, 100, Decimal("14.20")) == 59
    assert bucket(STRING, 7, None) is None


def test_bucket_rejects_non_positive_count() -> None:
    with pytest.raises(ValueError, match="Invalid number of buckets"):
        bucket(INT, 0, 1)


# --- truncate: spec "Truncate Transform Details" and Java int/long arithmetic --------------------------------


@pytest.mark.parametrize(("typ", "value", "expected"), [(INT, 1, 0), (INT, -1, -10), (LONG, 1, 0), (LONG, -1, -10)])
def test_spec_truncate_integers(typ: PrimitiveType, value: int, expected: int) -> None:
    assert truncate(typ, 10, value) == expected


def test_truncate_int_overflows_like_java() -> None:
    # Java: MIN % 10 = -8, (-8 + 10) % 10 = 2, MIN - 2 wraps to MAX - 1
    assert truncate(INT, 10, INT_MIN) == INT_MAX - 1
    assert truncate(LONG, 10, LONG_MIN) == LONG_MAX - 1
    assert truncate(INT, 10, -2_147_483_640) == -2_147_483_640  # the lowest multiple of 10: no overflow
    assert truncate(INT, 10, -2_147_483_641) == INT_MAX - 1  # -2147483650 wraps
    # W = MAX: v % W = v = MAX - 1, (MAX - 1) + MAX wraps to -3, -3 % W = -3, v + 3 wraps to MIN + 1
    assert truncate(INT, INT_MAX, INT_MAX - 1) == INT_MIN + 1
    assert truncate(LONG, INT_MAX, INT_MAX - 1) == 0  # long arithmetic: no wrap, (W - 1) floors to 0


def test_spec_truncate_decimal() -> None:
    result = truncate(DECIMAL, 50, Decimal("10.65"))
    assert result == Decimal("10.50")
    assert str(result) == "10.50"  # keeps the value's scale


def test_truncate_decimal_negative_and_own_scale() -> None:
    assert str(truncate(DECIMAL, 10, Decimal("-0.05"))) == "-0.10"  # unscaled -5 floors to -10
    assert str(truncate(DECIMAL, 50, Decimal("10.650"))) == "10.650"  # W applies at the value's scale 3
    big = Decimal("12345678901234567890123456789012345.678")  # 38 digits: past Decimal's default precision
    assert str(truncate(parse_primitive("decimal(38, 3)"), 1000, big)) == "12345678901234567890123456789012345.000"


def test_spec_truncate_string_and_binary() -> None:
    assert truncate(STRING, 3, "iceberg") == "ice"
    assert truncate(STRING, 10, "ice") == "ice"
    assert truncate(STRING, 2, "\U0001f600ab") == "\U0001f600a"  # a non-BMP character is one code point
    assert truncate(BINARY, 3, b"\x01\x02\x03\x04\x05") == b"\x01\x02\x03"
    assert truncate(BINARY, 8, b"\x01\x02") == b"\x01\x02"


def test_truncate_rejects_bad_input() -> None:
    assert truncate(STRING, 3, None) is None
    with pytest.raises(ValueError, match="Cannot truncate"):
        truncate(FIXED4, 2, b"\x00\x01\x02\x03")  # Java Truncate.canTransform excludes fixed
    with pytest.raises(ValueError, match="Invalid truncate width"):
        truncate(INT, 0, 1)


# --- time transforms: reference §4.3 and Iceberg TestDateTimeUtil ---------------------------------------------


def test_reference_quirk_values() -> None:
    # verified on Java's DateTimeUtil (reference §4.3): floor would give -1 for each
    assert micros_to_hours(-3_599_000_001) == -2
    assert micros_to_days(-86_399_000_001) == -2
    assert micros_to_months(-2_678_399_000_001) == -2
    assert micros_to_years(-31_535_999_000_001) == -2
    # convertNanos: the same pattern at B + 999_999_999 ns
    assert nanos_to_hours(-3_599_000_000_001) == -2
    assert nanos_to_days(-86_399_000_000_001) == -2
    assert nanos_to_months(-2_678_399_000_000_001) == -2
    assert nanos_to_years(-31_535_999_000_000_001) == -2


def test_pre_epoch_values_floor_otherwise() -> None:
    for fn in (micros_to_hours, micros_to_days, micros_to_months, micros_to_years):
        assert fn(-1) == -1
    assert micros_to_hours(-3_600_000_000) == -1  # exactly 1969-12-31T23:00
    assert micros_to_hours(-3_600_000_001) == -2
    assert micros_to_hours(-3_599_000_002) == -1  # one µs below the quirk value
    assert micros_to_hours(-3_598_000_001) == -1  # B + 999_999 where B is not an hour boundary
    assert nanos_to_days(-1) == -1


def test_post_epoch_values() -> None:
    # Iceberg TestDateTimeUtil.convertNanos: 2017-11-16T22:31:08.000001001
    nanos = 1_510_871_468_000_001_001
    assert (nanos_to_years(nanos), nanos_to_months(nanos), nanos_to_days(nanos), nanos_to_hours(nanos)) == (
        47,
        574,
        17486,
        419686,
    )
    micros = nanos // 1000
    assert (micros_to_years(micros), micros_to_months(micros), micros_to_days(micros), micros_to_hours(micros)) == (
        47,
        574,
        17486,
        419686,
    )
    assert micros_to_hours(0) == micros_to_days(0) == micros_to_months(0) == micros_to_years(0) == 0


def test_micros_to_hours_wraps_to_int() -> None:
    # Java convertMicros casts `between` with (int)
    assert micros_to_hours(LONG_MAX) == LONG_MAX // 3_600_000_000 - 2**32


def test_dates_floor() -> None:
    assert (days_to_years(17486), days_to_months(17486)) == (47, 574)  # 2017-11-16
    assert (days_to_years(-1), days_to_months(-1)) == (-1, -1)  # 1969-12-31
    assert days_to_months(-31) == -1  # 1969-12-01
    assert days_to_months(-32) == -2  # 1969-11-30
    assert days_to_years(-365) == -1  # 1969-01-01
    assert days_to_years(-366) == -2  # 1968-12-31
    assert (days_to_years(_days(date(1, 1, 1))), days_to_months(_days(date(1, 1, 1)))) == (-1969, -1969 * 12)


def test_dates_match_calendar() -> None:
    rng = random.Random(20240601)
    for _ in range(5000):
        d = date.fromordinal(rng.randint(1, date.max.toordinal()))
        assert days_to_years(_days(d)) == d.year - 1970
        assert days_to_months(_days(d)) == (d.year - 1970) * 12 + d.month - 1


# --- a literal reimplementation of Java's convertMicros/convertNanos, to compare against --------------------

_NANOS_PER_HOUR = 3600 * 10**9
_NANOS_PER_DAY = 86400 * 10**9


def _java_div(a: int, b: int) -> int:
    """Java `/` on longs: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _java_between(unit: str, epoch_second: int, nano_adjustment: int) -> int:
    """ChronoUnit.between(EPOCH, Instant.ofEpochSecond(s, n).atOffset(UTC)), following JDK
    LocalDateTime.until / LocalDate.until from 1970-01-01T00:00."""
    days, nano_of_day = divmod(epoch_second * 10**9 + nano_adjustment, _NANOS_PER_DAY)
    if unit == "hour":  # time-based: whole days, then the time part, each truncated toward zero
        if days == 0:
            return nano_of_day // _NANOS_PER_HOUR
        if days > 0:
            amount, time_part = days - 1, nano_of_day + _NANOS_PER_DAY
        else:
            amount, time_part = days + 1, nano_of_day - _NANOS_PER_DAY
        return amount * 24 + _java_div(time_part, _NANOS_PER_HOUR)
    end_date = EPOCH_DATE + timedelta(days=days)
    if days < 0 and nano_of_day > 0:  # endDate.isBefore(date) && end.time.isAfter(time): one day closer
        end_date += timedelta(days=1)
    if unit == "day":
        return (end_date - EPOCH_DATE).days
    packed_end = (end_date.year * 12 + end_date.month - 1) * 32 + end_date.day  # LocalDate.monthsUntil
    months = _java_div(packed_end - (1970 * 12 * 32 + 1), 32)
    return months if unit == "month" else _java_div(months, 12)


def _java_convert(value: int, per_second: int, unit: str) -> int:
    """DateTimeUtil.convertMicros (per_second=10**6) / convertNanos (10**9), step by step."""
    to_nanos = 10**9 // per_second
    if value >= 0:
        return _java_between(unit, value // per_second, (value % per_second) * to_nanos)
    epoch_second = value // per_second  # Math.floorDiv
    adjustment = (value + 1) % per_second  # Math.floorMod(value + 1, ...)
    return _java_between(unit, epoch_second, adjustment * to_nanos) - 1


_UNITS: dict[int, dict[str, Callable[[int], int]]] = {
    10**6: {"year": micros_to_years, "month": micros_to_months, "day": micros_to_days, "hour": micros_to_hours},
    10**9: {"year": nanos_to_years, "month": nanos_to_months, "day": nanos_to_days, "hour": nanos_to_hours},
}


def test_reimplementation_reproduces_reference_values() -> None:
    assert _java_convert(-3_599_000_001, 10**6, "hour") == -2
    assert _java_convert(-86_399_000_001, 10**6, "day") == -2
    assert _java_convert(-2_678_399_000_001, 10**6, "month") == -2
    assert _java_convert(-31_535_999_000_001, 10**6, "year") == -2
    assert _java_convert(1_510_871_468_000_001_001, 10**9, "month") == 574


def _random_boundary(rng: random.Random, per_second: int) -> int:
    """A random hour, day, month or year start between 1679 and 2261 (the range of a long of nanos)."""
    year = rng.randint(1679, 2261)
    start = date(year, rng.randint(1, 12), 1) if rng.random() < 0.5 else date(year, 1, 1)
    seconds = _days(start) * 86400
    if rng.random() < 0.5:
        seconds += rng.randint(0, 27) * 86400 + rng.randint(0, 23) * 3600
    return seconds * per_second


@pytest.mark.parametrize("per_second", [10**6, 10**9])
def test_matches_java_algorithm_near_boundaries(per_second: int) -> None:
    rng = random.Random(per_second)
    offsets = [-per_second - 1, -per_second, -per_second + 1, -2, -1, 0, 1, per_second - 2, per_second - 1]
    offsets += [per_second, per_second + 1]
    for _ in range(600):
        boundary = _random_boundary(rng, per_second)
        for value in [boundary + off for off in offsets] + [boundary + rng.randint(-3 * per_second, 3 * per_second)]:
            for unit, fn in _UNITS[per_second].items():
                assert fn(value) == _java_convert(value, per_second, unit), (unit, value)


# --- dispatch ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("transform", "typ", "value", "expected"),
    [
        (Transform("identity"), STRING, "x", "x"),
        (Transform("bucket", 16), INT, 34, 3),
        (Transform("truncate", 10), INT, -1, -10),
        (Transform("truncate", 3), STRING, "iceberg", "ice"),
        (Transform("year"), DATE, 17486, 47),
        (Transform("month"), DATE, 17486, 574),
        (Transform("day"), DATE, 17486, 17486),
        (Transform("year"), TIMESTAMP, TS, 47),
        (Transform("month"), TIMESTAMPTZ, TS, 574),
        (Transform("day"), TIMESTAMP, TS, 17486),
        (Transform("hour"), TIMESTAMPTZ, TS, 419686),
        (Transform("hour"), TIMESTAMP, -3_599_000_001, -2),
        (Transform("hour"), TIMESTAMP_NS, 1_510_871_468_000_001_001, 419686),
        (Transform("day"), TIMESTAMPTZ_NS, -86_399_000_000_001, -2),
        (Transform("void"), INT, 5, None),
        (Transform("bucket", 16), INT, None, None),
        (Transform("hour"), TIMESTAMP, None, None),
    ],
)
def test_apply_transform(transform: Transform, typ: PrimitiveType, value: Any, expected: Any) -> None:
    assert apply_transform(transform, typ, value) == expected


def test_apply_transform_errors() -> None:
    with pytest.raises(ValueError, match="zorder"):
        apply_transform(Transform("zorder"), INT, 1)
    with pytest.raises(ValueError, match="hour"):
        apply_transform(Transform("hour"), DATE, 1)
    with pytest.raises(ValueError):
        apply_transform(Transform("bucket", 4), DOUBLE, 1.0)
    with pytest.raises(ValueError):
        apply_transform(Transform("bucket"), INT, 1)  # no parameter
    with pytest.raises(ValueError, match="Invalid number of buckets"):
        bind_transform(Transform("bucket", 0), INT)


_CAN_TRANSFORM_TYPES = [
    "boolean",
    "int",
    "long",
    "float",
    "double",
    "decimal(9, 2)",
    "date",
    "time",
    "timestamp",
    "timestamptz",
    "timestamp_ns",
    "timestamptz_ns",
    "string",
    "uuid",
    "fixed[4]",
    "binary",
    "variant",
]
_ACCEPTS = {
    "identity": set(_CAN_TRANSFORM_TYPES) - {"variant"},
    "bucket": {
        "int",
        "long",
        "decimal(9, 2)",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "timestamp_ns",
        "timestamptz_ns",
        "string",
        "uuid",
        "fixed[4]",
        "binary",
    },
    "truncate": {"int", "long", "decimal(9, 2)", "string", "binary"},
    "year": {"date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "month": {"date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "day": {"date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "hour": {"timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"},
    "void": set(_CAN_TRANSFORM_TYPES),
}


@pytest.mark.parametrize("name", sorted(_ACCEPTS))
@pytest.mark.parametrize("type_name", _CAN_TRANSFORM_TYPES)
def test_can_transform(name: str, type_name: str) -> None:
    transform = Transform(name, 4 if name in ("bucket", "truncate") else None)
    assert can_transform(transform, parse_primitive(type_name)) == (type_name in _ACCEPTS[name])

"""The column-projection actions against the spec's own examples and definitions (Iceberg's REST spec,
`ReadRestrictions`): mask-alphanum, show-first-4 and show-last-4 on its example strings; mask-to-default's
listed value of each type; truncation in UTC; SHA-256 of the canonical bytes (FIPS 180-4's "abc" vector;
the int and long forms from hashlib over the little-endian bytes the spec names); a null stays null; an
action not defined for a type is refused, never passed through."""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import random
import struct
from typing import Any

import pyarrow as pa
import pytest

from read_restrictions import ACTIONS, applicable, applied, applied_value, new_salt

SPEC_EMAIL = "prashant010696@gmail.com"
UTC = dt.UTC


def _strings(action: str, *values: str | None) -> list[str | None]:
    masked: list[str | None] = applied(action, pa.array(list(values), pa.string()), "string").to_pylist()
    return masked


def test_the_spec_examples_of_the_string_masks() -> None:
    assert _strings("mask-alphanum", SPEC_EMAIL) == ["xxxxxxxxnnnnnn@xxxxx.xxx"]
    assert _strings("show-first-4", SPEC_EMAIL) == ["prasxxxxnnnnnn@xxxxx.xxx"]
    assert _strings("show-last-4", "4111-1111-1111-4444") == ["nnnn-nnnn-nnnn-4444"]


def test_string_masks_work_by_code_point() -> None:
    # kept: ( ) , . - @ ; digits: n ; all else (letters of any script, spaces, newlines, other punctuation): x
    assert _strings("mask-alphanum", "(0),.-@ é\n_ñ9💡") == ["(n),.-@xxxxxnx"]
    assert _strings("show-first-4", "añbc", "añbcd", "") == ["añbc", "añbcx", ""]  # 4 or fewer: unchanged
    assert _strings("show-last-4", "💡💡💡", "a💡💡💡💡", "12345") == ["💡💡💡", "x💡💡💡💡", "n2345"]
    assert _strings("mask-alphanum", None, "a") == [None, "x"]


def _alphanum_by_the_spec(value: str) -> str:
    """mask-alphanum as the spec words it, code point by code point."""
    return "".join("n" if c in "0123456789" else c if c in "(),.-@" else "x" for c in value)


@pytest.mark.parametrize("large", [False, True])
def test_mask_alphanum_of_many_strings_of_every_width(large: bool) -> None:
    """Random strings of 1- to 4-byte code points, nulls and empty ones among them, in one array and in
    slices of it (the masks work on the array's bytes at once)."""
    rng = random.Random(56)
    alphabet = "az09(),.-@ _\n" + "éñß€中💡𝄞" + "\u0800\uffff"
    values: list[str | None] = [
        None if rng.random() < 0.1 else "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
        for _ in range(2000)
    ]
    array = pa.array(values, pa.large_string() if large else pa.string())
    for part, chunk in ((array, values), (array.slice(37, 900), values[37:937])):
        masked = applied("mask-alphanum", part, "string")
        masked.validate(full=True)
        assert masked.to_pylist() == [None if v is None else _alphanum_by_the_spec(v) for v in chunk]


MASK_TO_DEFAULT: list[tuple[Any, pa.DataType, Any, Any]] = [  # type, Arrow type, a value, the spec's default
    ("boolean", pa.bool_(), True, False),
    ("int", pa.int32(), 7, 999999999),
    ("long", pa.int64(), 7, 999999999),
    ("float", pa.float32(), 1.5, 0.0),
    ("double", pa.float64(), 1.5, 0.0),
    ("decimal(9,2)", pa.decimal128(9, 2), decimal.Decimal("12.34"), decimal.Decimal("0.00")),
    ("string", pa.string(), "secret", "XXXXXXXX"),
    ("date", pa.date32(), dt.date(2024, 7, 15), dt.date(9999, 12, 31)),
    ("time", pa.time64("us"), dt.time(10, 15), dt.time(0, 0)),
    ("timestamp", pa.timestamp("us"), dt.datetime(2024, 7, 15, 3), dt.datetime(9999, 12, 31)),
    (
        "timestamptz",
        pa.timestamp("us", tz="UTC"),
        dt.datetime(2024, 7, 15, 3, tzinfo=UTC),
        dt.datetime(9999, 12, 31, tzinfo=UTC),
    ),
    ("timestamp_ns", pa.timestamp("ns"), dt.datetime(2024, 7, 15, 3), dt.datetime(2261, 12, 31)),
    ("uuid", pa.binary(16), b"\x01" * 16, b"\x00" * 16),
    ("fixed[3]", pa.binary(3), b"abc", b"\x00\x00\x00"),
    ("binary", pa.binary(), b"abc", b""),
    (
        {"type": "struct", "fields": [{"id": 5, "name": "a", "type": "int"}, {"id": 6, "name": "b", "type": "string"}]},
        pa.struct([("a", pa.int32()), ("b", pa.string())]),
        {"a": 1, "b": "x"},
        {"a": 999999999, "b": "XXXXXXXX"},
    ),
    ({"type": "list", "element": "long"}, pa.list_(pa.int64()), [1, 2], []),
]


@pytest.mark.parametrize(("typ", "arrow", "value", "default"), MASK_TO_DEFAULT, ids=lambda p: str(p)[:20])
def test_mask_to_default_is_the_spec_value_of_each_type(typ: Any, arrow: pa.DataType, value: Any, default: Any) -> None:
    masked = applied("mask-to-default", pa.array([value, None], arrow), typ)
    assert masked.type == arrow and masked.to_pylist() == [default, None]


def test_replace_with_null_and_truncation() -> None:
    assert applied("replace-with-null", pa.array([1, None]), "long").to_pylist() == [None, None]
    days = pa.array([dt.date(2024, 7, 15), None])
    assert applied("truncate-to-year", days, "date").to_pylist() == [dt.date(2024, 1, 1), None]
    assert applied("truncate-to-month", days, "date").to_pylist() == [dt.date(2024, 7, 1), None]
    # a timestamptz stored in UTC truncates in UTC: 2024-01-01T00:30+01:00 is 2023-12-31T23:30Z
    instant = dt.datetime(2023, 12, 31, 23, 30, tzinfo=UTC)
    stamps = pa.array([instant], pa.timestamp("ns", tz="UTC"))
    assert applied("truncate-to-year", stamps, "timestamptz_ns").to_pylist() == [dt.datetime(2023, 1, 1, tzinfo=UTC)]
    assert applied("truncate-to-month", stamps, "timestamptz_ns").to_pylist() == [dt.datetime(2023, 12, 1, tzinfo=UTC)]


def test_sha_256_of_the_canonical_bytes() -> None:
    # FIPS 180-4's one-block example, the digest of "abc"
    abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert applied("sha-256-global", pa.array(["abc", None]), "string").to_pylist() == [abc, None]
    assert applied("sha-256-global", pa.array([b"abc"], pa.binary()), "binary").to_pylist() == [bytes.fromhex(abc)]
    for typ, arrow, form in (("int", pa.int32(), "<i"), ("long", pa.int64(), "<q")):
        digest = hashlib.sha256(struct.pack(form, -2)).digest()
        expected = struct.unpack(form, digest[: struct.calcsize(form)])[0]
        assert applied("sha-256-global", pa.array([-2], arrow), typ).to_pylist() == [expected]


def test_sha_256_query_local_is_salted_per_query() -> None:
    salt, other = new_salt(), new_salt()
    assert len(salt) >= 16 and salt != other
    values = pa.array(["abc", "abc"])
    once = applied("sha-256-query-local", values, "string", salt).to_pylist()
    assert once[0] == once[1] == hashlib.sha256(salt + b"abc").hexdigest()  # the same within a query
    assert applied("sha-256-query-local", values, "string", other).to_pylist() != once
    with pytest.raises(ValueError, match="salt of at least 16 bytes"):
        applied("sha-256-query-local", values, "string", b"short")


@pytest.mark.parametrize(
    ("action", "typ", "required", "refused"),
    [
        ("mask-alphanum", "long", False, "applies to string, not long"),
        ("show-last-4", {"type": "struct", "fields": []}, False, "not struct"),
        ("truncate-to-year", "string", False, "applies to date, timestamp"),
        ("sha-256-global", "double", False, "applies to binary, int, long, string, not double"),
        ("replace-with-null", "string", True, "required"),
        ("mask-to-default", "variant", False, "no value here for variant"),
        ("apply-expression", "string", False, "not an action this service applies"),
        ("nullify", "string", False, "not an action this service applies"),
    ],
)
def test_an_action_outside_its_types_is_refused(action: str, typ: Any, required: bool, refused: str) -> None:
    why = applicable(action, typ, required)
    assert why is not None and refused in why, why
    with pytest.raises(ValueError, match=r"applies|required|no value|not an action"):
        applied(action, pa.array(["x"]), typ, required=required)


def test_every_action_keeps_a_null_null() -> None:
    columns = {
        "string": pa.array([None, "a"], pa.string()),
        "long": pa.array([None, 1], pa.int64()),
        "date": pa.array([None, dt.date(2024, 1, 2)], pa.date32()),
    }
    for action in ACTIONS:
        for typ, values in columns.items():
            if applicable(action, typ, False) is None:
                assert applied(action, values, typ, new_salt())[0].as_py() is None, (action, typ)


def test_one_value_as_the_service_masks_a_partition_constant() -> None:
    assert applied_value("show-last-4", "4111-1111-1111-4444", pa.string(), "string") == "nnnn-nnnn-nnnn-4444"
    assert applied_value("truncate-to-month", dt.date(2024, 7, 15), pa.date32(), "date") == dt.date(2024, 7, 1)

"""Each action applied to an Arrow array of a column's values, as the spec defines it; a null stays null.
String masks work code point by code point (Arrow's regular expressions read UTF-8 as code points); dates
and timestamps truncate in their own zone (UTC for the tz types: Iceberg's are stored so); the hashes take
the spec's canonical bytes (UTF-8, 4 or 8 bytes little-endian, the bytes themselves)."""

from __future__ import annotations

import hashlib
import secrets
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from read_restrictions.actions import HASHED, applicable, default_value

_KEPT = r"[^0-9(),.\-@]"  # what mask-alphanum writes as x: all but digits and ( ) , . - @
SALT_BYTES = 16


def new_salt() -> bytes:
    """sha-256-query-local's salt for one query: 16 random bytes, the same for all of its rows."""
    return secrets.token_bytes(SALT_BYTES)


def applied(action: str, values: pa.Array, typ: Any, salt: bytes = b"", required: bool = False) -> pa.Array:
    """`values` (a column of type `typ`, its JSON form) with `action` applied; the same Arrow type.
    ValueError for an action not defined for the type (the reader must fail, never pass values through)."""
    if (why := applicable(action, typ, required)) is not None:
        raise ValueError(why)
    if action == "mask-alphanum":
        return _alphanum(values)
    if action == "show-first-4":
        return _joined(pc.utf8_slice_codeunits(values, 0, 4), _alphanum(pc.utf8_slice_codeunits(values, 4)))
    if action == "show-last-4":
        return _joined(_alphanum(pc.utf8_slice_codeunits(values, 0, -4)), pc.utf8_slice_codeunits(values, -4))
    if action == "replace-with-null":
        return pa.nulls(len(values), values.type)
    if action == "mask-to-default":
        default = pa.scalar(default_value(typ), values.type)
        return pc.if_else(pc.is_null(values), pa.scalar(None, values.type), default)
    if action in ("truncate-to-year", "truncate-to-month"):
        return pc.floor_temporal(values, unit=action.removeprefix("truncate-to-"))
    assert action in HASHED
    if action == "sha-256-query-local" and len(salt) < 16:
        raise ValueError("sha-256-query-local needs a random salt of at least 16 bytes for the query")
    prefix = salt if action == "sha-256-query-local" else b""
    hashed = [None if v is None else _hashed(prefix, v, typ) for v in values.to_pylist()]
    return pa.array(hashed, values.type)


def applied_value(action: str, value: Any, arrow_type: pa.DataType, typ: Any, salt: bytes = b"") -> Any:
    """One value (as Arrow's Python values: str, int, date, datetime, bytes) with `action` applied."""
    return applied(action, pa.array([value], arrow_type), typ, salt)[0].as_py()


def _alphanum(values: pa.Array) -> pa.Array:
    """mask-alphanum over the UTF-8 bytes at once: a code point's first byte becomes its mask (ASCII digits
    "n", the kept punctuation itself, anything else "x"), its continuation bytes are dropped, and each offset
    moves back by the continuation bytes before it. Nulls stay null."""
    if not pa.types.is_string(values.type) and not pa.types.is_large_string(values.type):
        return pc.replace_substring_regex(pc.replace_substring_regex(values, _KEPT, "x"), "[0-9]", "n")
    if values.offset:  # (a slice: its buffers start elsewhere) a copy of its own
        values = pa.concat_arrays([values])
    width = np.int64 if pa.types.is_large_string(values.type) else np.int32
    validity, offsets_buffer, data = values.buffers()
    offsets = np.frombuffer(offsets_buffer, width)[: len(values) + 1]
    if data is None or offsets[-1] == offsets[0]:
        return values
    raw = np.frombuffer(data, np.uint8)[offsets[0] : offsets[-1]]
    kept = (raw & 0xC0) != 0x80  # every byte but a continuation byte starts a code point
    if kept.all():  # ASCII alone: a byte per code point, the offsets as they are
        masked, new_offsets = _ALPHANUM[raw], offsets - offsets[0]
    else:  # each offset moves back by the continuation bytes before it
        relative = offsets - offsets[0]
        dropped = np.searchsorted(np.flatnonzero(~kept), relative).astype(width)
        masked, new_offsets = _ALPHANUM[raw[kept]], relative - dropped
    return pa.Array.from_buffers(
        values.type,
        len(values),
        [validity, pa.py_buffer(new_offsets), pa.py_buffer(masked)],
        values.null_count,
    )


def _alphanum_table() -> np.ndarray[Any, np.dtype[np.uint8]]:
    table = np.full(256, ord("x"), np.uint8)
    table[ord("0") : ord("9") + 1] = ord("n")
    for kept in "(),.-@":
        table[ord(kept)] = ord(kept)
    return table


_ALPHANUM = _alphanum_table()  # a code point's first byte -> its mask


def _joined(first: pa.Array, second: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(first, second, "")


def _hashed(prefix: bytes, value: Any, typ: str) -> Any:
    if typ == "string":
        return hashlib.sha256(prefix + value.encode()).hexdigest()
    if typ == "binary":
        return hashlib.sha256(prefix + value).digest()
    form = "<i" if typ == "int" else "<q"
    digest = hashlib.sha256(prefix + struct.pack(form, value)).digest()
    return struct.unpack_from(form, digest)[0]

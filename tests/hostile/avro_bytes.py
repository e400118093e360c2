"""Avro's variable-length integers, to write (and read back) containers whose headers lie: standard library
only, for the suite and for the Java environment's venv (mutations.py)."""

from __future__ import annotations


def varint(value: int) -> bytes:
    """An unsigned value in 7-bit groups, low first (snappy's length prefix too)."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | 0x80 if value else byte)
        if not value:
            return bytes(out)


def zigzag(value: int) -> bytes:
    """An Avro long: zig-zag encoded, then a varint."""
    return varint((value << 1) ^ (value >> 63))


def read_zigzag(data: bytes, pos: int) -> tuple[int, int]:
    """The Avro long at `pos`, and where the next value starts."""
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos

"""A structure-aware fuzzer's mutations of a table Iceberg Java wrote: random but reproducible (each from its
own seed) changes to its metadata.json, its current manifest list, one data or delete manifest, as JSON
values, as Avro records re-encoded with the file's schema, or as bytes (bit flips, cuts, lying block counts
and sizes, compression bombs).

Each mutation is a variants.Case, so java_verdicts.py writes it as a table and records Iceberg Java's verdict
on it exactly as for the hand-written variants; test_fuzz_metadata.py then holds the service to it. Standard
library and fastavro only: this runs in the Java environment's venv too.
"""

from __future__ import annotations

import copy
import json
import random
import zlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # mypy knows these modules as tests.hostile.*; at run time tests/hostile is on sys.path
    from tests.hostile.avro_bytes import read_zigzag, zigzag
    from tests.hostile.variants import MISSING_ID, Case
else:
    from avro_bytes import read_zigzag, zigzag
    from variants import MISSING_ID, Case

# Values a field may be set to: wrong types, edges of int and long, ids that exist nowhere, empty things.
HOSTILE_VALUES: list[Any] = [
    None,
    -1,
    0,
    1,
    7,
    2**31,
    -(2**31) - 1,
    2**63 - 1,
    -(2**63),
    2**64,
    1.5,
    -0.0,
    "",
    "2",
    "x" * 300,
    True,
    [],
    {},
    [1, 2],
    {"a": 1},
    "bucket[0]",
    "truncate[-3]",
    "decimal(40, 2)",
    "identity",
    "leaf",
    MISSING_ID,
]
HOSTILE_INTS = [-1, 0, 1, 2, 5, 7, 255, 2**31 - 1, -(2**31), 2**62, -(2**63), MISSING_ID]
HOSTILE_STRINGS = ["", "CSV", "parquet", "orc", "/etc/passwd", "x" * 5000, "s3://elsewhere/f.parquet", "\u00e9"]
KINDS = ("json", "json", "json", "metadata-bytes", "records", "records", "records", "bytes", "blocks", "bomb")
AVRO_TARGETS = ("manifest-list", "manifest", "delete-manifest")
BOMB_BYTES = 48 * 1024 * 1024  # inflates past the 32 MiB limit the fuzzing service runs with


def fuzz_cases(seed: int, count: int, start: int = 0) -> Iterator[Case]:
    """Mutations start .. start + count - 1, the i-th drawn from random.Random(seed * 1_000_003 + i): the
    same on every run."""
    for i in range(start, start + count):
        rng = random.Random(seed * 1_000_003 + i)
        kind = rng.choice(KINDS)
        name = f"fuzz_{seed}_{i}_{kind}"
        if kind == "json":
            yield Case(name, "metadata", _json_mutation(rng))
        elif kind == "metadata-bytes":
            yield Case(name, "metadata", _metadata_bytes(rng))
        else:
            target = rng.choice(AVRO_TARGETS)
            if kind == "records":
                yield Case(name, target, _record_mutation(rng))
            elif kind == "bytes":
                yield Case(name, f"{target}-bytes", _byte_mutation(rng))
            elif kind == "blocks":
                yield Case(name, f"{target}-bytes", _block_mutation(rng))
            else:
                yield Case(name, f"{target}-bytes", _bomb(rng))


# --- JSON ------------------------------------------------------------------------------------------------


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside `value` (keys and list indexes), depth first."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _json_mutation(rng: random.Random) -> Callable[[dict[str, Any]], Any]:
    def mutate(meta: dict[str, Any]) -> Any:
        paths = [p for p in _paths(meta) if p]
        path = rng.choice(paths)
        parent, key = _at(meta, path[:-1]), path[-1]
        action = rng.randrange(6)
        if action == 0 and isinstance(parent, dict):
            del parent[key]
        elif action == 1 and isinstance(parent, list):
            parent.append(json.loads(json.dumps(parent[key])))  # a duplicate: ids, names, refs twice
        elif action == 2:  # another id found in the document
            ids = [_at(meta, p) for p in paths if isinstance(p[-1], str) and p[-1].endswith("id")]
            parent[key] = rng.choice([i for i in ids if isinstance(i, int)] or [MISSING_ID])
        elif action == 3 and isinstance(_at(meta, path), int) and not isinstance(_at(meta, path), bool):
            parent[key] = _at(meta, path) + rng.choice([-1, 1, -(10**6), 10**6])
        elif action == 4:
            return json.dumps(meta).replace(json.dumps(_at(meta, path)), "[" * 700 + "]" * 700, 1)
        else:
            parent[key] = json.loads(json.dumps(rng.choice(HOSTILE_VALUES)))
        return meta

    return mutate


def _metadata_bytes(rng: random.Random) -> Callable[[dict[str, Any]], str]:
    def mutate(meta: dict[str, Any]) -> str:
        text = bytearray(json.dumps(meta, indent=2).encode())
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(len(text))
            text[pos] = rng.choice(b'{}[]",:0123456789-e.ntf \\')
        return text.decode("utf-8", errors="replace")

    return mutate


# --- Avro records ----------------------------------------------------------------------------------------


def _leaves(record: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths to every scalar (and every list or null) in a decoded Avro record."""
    if isinstance(record, dict):
        for key, item in record.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(record, list):
        yield path
        for index, item in enumerate(record):
            yield from _leaves(item, (*path, index))
    else:
        yield path


def _like(rng: random.Random, old: Any) -> Any:
    """A hostile value the field's Avro type can still hold (most of the time: the writer decides)."""
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        return rng.choice([*HOSTILE_INTS, old + 1, old - 1, -old])
    if isinstance(old, str):
        return rng.choice([*HOSTILE_STRINGS, old + "x", old[: len(old) // 2]])
    if isinstance(old, bytes):
        return rng.choice([b"", b"\xff", old[:1], old + b"\x00", bytes(rng.randrange(256) for _ in range(9))])
    if isinstance(old, list):
        return rng.choice([[], old + old, old[:1]])
    return rng.choice([None, 0, -1, "", b""])


def _record_mutation(rng: random.Random) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def mutate(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        action = rng.randrange(8)
        if action == 0 and records:
            return [*records, copy.deepcopy(rng.choice(records))]  # a record twice
        if action == 1 and len(records) > 1:
            victim = rng.randrange(len(records))
            return records[:victim] + records[victim + 1 :]
        record = rng.choice(records)
        path = rng.choice(list(_leaves(record)))
        if not path:
            return records
        parent = _at(record, path[:-1])
        parent[path[-1]] = _like(rng, parent[path[-1]])
        return records

    return mutate


# --- bytes ----------------------------------------------------------------------------------------------


def _byte_mutation(rng: random.Random) -> Callable[[bytes], bytes]:
    def mutate(data: bytes) -> bytes:
        out = bytearray(data)
        action = rng.randrange(3)
        if action == 0:
            return bytes(out[: rng.randrange(len(out))])
        if action == 1:
            pos = rng.randrange(len(out))
            return bytes(out[:pos] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))) + out[pos:])
        for _ in range(rng.randint(1, 8)):
            pos = rng.randrange(len(out))
            out[pos] ^= 1 << rng.randrange(8)
        return bytes(out)

    return mutate


def _first_block(data: bytes) -> tuple[int, bytes]:
    """Where the first block starts and the file's sync marker: after the magic, the header's metadata map
    (blocks of key/value byte strings, a negative count followed by the block's size) and the marker."""
    pos = 4
    while True:
        count, pos = read_zigzag(data, pos)
        if count == 0:
            return pos + 16, data[pos : pos + 16]
        if count < 0:
            count = -count
            _, pos = read_zigzag(data, pos)
        for _ in range(2 * count):
            length, pos = read_zigzag(data, pos)
            pos += length


def _block_mutation(rng: random.Random) -> Callable[[bytes], bytes]:
    """The first block's record count or byte size replaced by a lie, or the block given twice."""

    def mutate(data: bytes) -> bytes:
        start, sync = _first_block(data)
        count, pos = read_zigzag(data, start)
        size, body = read_zigzag(data, pos)
        block = data[body : body + size]
        rest = data[body + size :]
        action = rng.randrange(3)
        if action == 0:
            new_count = rng.choice([0, -1, count + 1, count * 1000, 2**40, -(2**40)])
            return data[:start] + zigzag(new_count) + zigzag(size) + block + rest
        if action == 1:
            new_size = rng.choice([0, -1, size - 1, size + 1, size * 3, 2**40])
            return data[:start] + zigzag(count) + zigzag(new_size) + block + rest
        return data[:start] + zigzag(count) + zigzag(size) + block + sync + zigzag(count) + zigzag(size) + block + rest

    return mutate


def _bomb(rng: random.Random) -> Callable[[bytes], bytes]:
    """A deflate block of zeros that inflates past the limit, in place of the first block (the header says
    deflate: Java and the service both write these files with it)."""

    def mutate(data: bytes) -> bytes:
        start, sync = _first_block(data)
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        chunk = b"\0" * (1024 * 1024)
        zeros = b"".join(compressor.compress(chunk) for _ in range(BOMB_BYTES // len(chunk))) + compressor.flush()
        count = rng.choice([1, 100, 10**6])
        return data[:start] + zigzag(count) + zigzag(len(zeros)) + zeros + sync

    return mutate

"""`indented`: a compact JSON text cut anywhere comes out exactly as orjson's OPT_INDENT_2 writes the whole
(the reference: orjson's own indented dump of the parsed value), chunk by chunk."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from planner_service.wire.json_indent import indented

PRETTY = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
STRINGS = ["", 'a"b', "back\\slash", "\\", '\\"', "x:y,[z]{w}", "é\u2028\U0001f600", "tab\there", " spaced "]


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 5 or roll < 0.3:
        return rng.choice([0, -1, 2**63 - 1, 1.5e-300, None, True, False, *STRINGS])
    if roll < 0.6:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(STRINGS) + str(i): _value(rng, depth + 1) for i in range(rng.randint(0, 4))}


def _cut(text: bytes, rng: random.Random) -> list[bytes]:
    cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(0, 8))))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@pytest.mark.parametrize("seed", range(20))
def test_any_value_cut_anywhere_is_indented_as_orjson_indents_it(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(200):
        value = _value(rng)
        compact = orjson.dumps(value)
        assert b"".join(indented(_cut(compact, rng))) == orjson.dumps(value, option=PRETTY)


def test_a_chunk_a_byte_at_a_time_and_empty_chunks() -> None:
    value = {"a": [], "b": {}, "c": [{"d": 'e\\"f'}, [[]]], "": ""}
    compact = orjson.dumps(value)
    chunks = [compact[i : i + 1] for i in range(len(compact))] + [b""]
    assert b"".join(indented(chunks)) == orjson.dumps(value, option=PRETTY)


def test_whitespace_outside_strings_is_dropped_and_inside_kept() -> None:
    assert (
        b"".join(indented([b'{ "a" : [ 1 ,\n 2 ] , "b c":" d " }']))
        == b'{\n  "a": [\n    1,\n    2\n  ],\n  "b c": " d "\n}\n'
    )

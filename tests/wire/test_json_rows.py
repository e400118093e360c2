"""The compiled JSON row renderer: what it writes parses (with Python's json) back to the columns it was
given, whatever the strings hold; and inconsistent columns are refused before anything is read."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from planner_service.wire import json_rows as rows

STRINGS = ["plain", 'quote " and \\ backslash', "tab\tnew\nline\x00nul\x1f", "é ü 日本 🙂", "", None, "/a/b=c d"]
INT64 = [0, -1, 1, 2**63 - 1, -(2**63), None, 1234567890123]
LISTS = [[4, 12807178], [], None, [-(2**63), 2**63 - 1], [0]]


def _parse(rendered: bytes) -> list[object]:
    parsed: list[object] = json.loads(b"[" + rendered + b"]")
    return parsed


def test_rows_parse_back_to_their_columns() -> None:
    n = len(STRINGS)
    frame = pl.DataFrame(
        {
            "s": STRINGS,
            "i": INT64,
            "l": (LISTS * 2)[:n],
        },
        schema={"s": pl.String, "i": pl.Int64, "l": pl.List(pl.Int64)},
    )
    snippets = ['{"a":1}', "null", '[1,"x"]']
    ids = np.arange(n) % 3
    parts = [
        rows.literal('{"s":'),
        rows.strings(frame["s"]),
        rows.literal(',"i":'),
        rows.ints(frame["i"]),
        rows.literal(',"l":'),
        rows.int_lists(frame["l"]),
        rows.literal(',"n":'),
        rows.ints(np.arange(n) * -3),
        rows.literal(',"p":'),
        rows.snippets(ids, snippets),
        rows.literal("}"),
    ]
    expected = [
        {"s": s, "i": i, "l": lst, "n": k * -3, "p": json.loads(snippets[k % 3])}
        for k, (s, i, lst) in enumerate(zip(STRINGS, INT64, (LISTS * 2)[:n], strict=True))
    ]
    assert _parse(rows.render(n, parts)) == expected


def test_keyed_columns_leave_out_their_nulls() -> None:
    """A column with a key is an optional field: key and value where present, nothing where null."""
    n = len(STRINGS)
    frame = pl.DataFrame(
        {"s": STRINGS, "i": INT64, "l": (LISTS * 2)[:n]},
        schema={"s": pl.String, "i": pl.Int64, "l": pl.List(pl.Int64)},
    )
    parts = [
        rows.literal('{"n":'),
        rows.ints(np.arange(n)),
        rows.strings(frame["s"], key=',"s":'),
        rows.ints(frame["i"].slice(0, n), key=',"i":'),
        rows.int_lists(frame["l"], key=',"l":'),
        rows.ints(np.arange(n) * 2, key=',"m":'),  # (no validity: always there)
        rows.literal("}"),
    ]
    expected = []
    for k, (s, i, lst) in enumerate(zip(STRINGS, INT64, (LISTS * 2)[:n], strict=True)):
        row = {"n": k, "s": s, "i": i, "l": lst, "m": 2 * k}
        expected.append({key: value for key, value in row.items() if value is not None})
    assert _parse(rows.render(n, parts)) == expected
    sliced = frame["i"].slice(3, 4)  # (an Arrow offset into the validity bitmap)
    assert _parse(rows.render(4, [rows.literal("{"), rows.ints(sliced, key='"i":'), rows.literal("}")])) == [
        {"i": v} if v is not None else {} for v in INT64[3:7]
    ]


def test_sliced_and_chunked_columns() -> None:
    base = pl.Series("s", [f"v{i}" for i in range(100)])
    chunked = pl.concat([base.slice(0, 40), base.slice(40, 60)], rechunk=False)
    sliced = base.slice(37, 20)
    assert _parse(rows.render(100, [rows.strings(chunked)])) == base.to_list()
    assert _parse(rows.render(20, [rows.strings(sliced)])) == sliced.to_list()
    lists = pl.Series("l", [[i, i + 1] for i in range(50)]).slice(13, 7)
    assert _parse(rows.render(7, [rows.int_lists(lists)])) == lists.to_list()


def test_splits_of_tasks() -> None:
    offsets = np.array([0, 2, 3, 3, 6])
    file, start, length = np.arange(6), np.arange(6) * 10, np.arange(6) + 100
    rendered = rows.render(3, [rows.splits(offsets, file, start, length, first=1)])
    assert _parse(rendered) == [[[2, 20, 102]], [], [[3, 30, 103], [4, 40, 104], [5, 50, 105]]]


def test_zero_rows() -> None:
    assert rows.render(0, [rows.literal("x"), rows.ints(np.zeros(0, np.int64))]) == b""


@pytest.mark.parametrize(
    "parts",
    [
        [rows.ints(np.arange(3))],  # 3 values for 5 rows
        [rows.snippets(np.array([0, 1, 2, 3, 9]), ["1", "2"])],  # an id past the snippets
        [rows.splits(np.array([0, 1, 9, 9, 9, 9]), np.zeros(2), np.zeros(2), np.zeros(2), 0)],  # past the pieces
        [(rows._STRING, None, np.array([0, 5, 2, 3, 4, 5], np.int64), b"abcde", 0)],  # descending offsets
        [(99, b"x")],
        ["not a tuple"],
    ],
)
def test_inconsistent_columns_are_refused(parts: list[rows.Part]) -> None:
    with pytest.raises(ValueError, match="render_rows"):
        rows.render(5, parts)


def test_random_strings_and_numbers_round_trip() -> None:
    """Escapes anywhere in strings of every length (the renderer scans eight bytes at a time), numbers at
    every power of ten and its neighbours."""
    rng = np.random.default_rng(8)
    alphabet = [chr(c) for c in range(0x20)] + ['"', "\\", "a", "Z", "/", " ", "\x7f", "é", "日", "🙂", "ÿ"]
    strings = ["".join(rng.choice(alphabet, size=int(n))) for n in rng.integers(0, 41, size=400)]
    strings += ["x" * n + ch for n in range(20) for ch in ('"', "\\", "\n", "\x1f", "a")]
    powers = [10**k + d for k in range(19) for d in (-1, 0, 1)]
    numbers = [v for p in powers for v in (p, -p)][: len(strings)]
    numbers += [int(v) for v in rng.integers(-(2**63), 2**63 - 1, size=len(strings) - len(numbers))]
    frame = pl.DataFrame({"s": strings, "i": numbers}, schema={"s": pl.String, "i": pl.Int64})
    parts = [rows.literal("["), rows.strings(frame["s"]), rows.literal(","), rows.ints(frame["i"]), rows.literal("]")]
    assert _parse(rows.render(len(strings), parts)) == [[s, i] for s, i in zip(strings, numbers, strict=True)]

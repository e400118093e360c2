"""Rows of columns rendered as JSON by the compiled renderer (planner_service/csrc/json_rows.c).

A row template is a list of parts: literal text, and columns (numbers, strings, lists of numbers,
pre-rendered snippets picked per row, a task's splits). `render` gives the rows joined by commas. Columns
come from polars, Arrow or numpy without a copy where their layout allows it. A column given a `key` is an
optional field: the key and the value in the rows that have one, nothing in the rows where it is null.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from planner_service import _kernels
from planner_service.metadata.avro_columns import numpy_array

Part = tuple[Any, ...]
_LITERAL, _INT, _STRING, _INTS, _SNIPPET, _SPLITS, _TAIL = range(7)


def render(length: int, parts: list[Part], prefix: bytes = b"") -> bytes:
    """`prefix`, then the rows joined by commas (in one bytes object, written in place)."""
    return _kernels.render_rows(length, parts, prefix)


def literal(text: str) -> Part:
    return (_LITERAL, text.encode())


def ints(values: pl.Series | np.ndarray[Any, Any], key: str | None = None) -> Part:
    """A number per row, or null (with a `key`: the key and the number, or nothing)."""
    if isinstance(values, np.ndarray):
        return _keyed((_INT, None, np.ascontiguousarray(values, dtype=np.int64), 0), key)
    array = _compact(values.cast(pl.Int64).to_arrow())
    validity, data = array.buffers()
    return _keyed((_INT, validity, data, array.offset), key)


def strings(values: pl.Series, key: str | None = None) -> Part:
    """A JSON string per row, or null (with a `key`: the key and the string, or nothing)."""
    array = _compact(values.cast(pl.String).to_arrow().cast(pa.large_string()))
    validity, offsets, data = array.buffers()
    return _keyed((_STRING, validity, offsets, data or b"", array.offset), key)


def string_tails(values: pl.Series) -> Part:
    """Per row, the rest of a JSON string that a snippet opened: the text escaped, and the closing quote."""
    array = _compact(values.cast(pl.String).to_arrow().cast(pa.large_string()))
    if array.null_count:
        raise ValueError("string_tails: a null value")
    _, offsets, data = array.buffers()
    return (_TAIL, None, offsets, data or b"", array.offset)


def int_lists(values: pl.Series, key: str | None = None) -> Part:
    """A JSON array of numbers per row, or null (with a `key`: the key and the array, or nothing)."""
    array = _compact(values.cast(pl.List(pl.Int64)).to_arrow().cast(pa.large_list(pa.int64())))
    child = array.values
    if child.offset:
        array = _compact(array, force=True)
        child = array.values
    return _keyed((_INTS, array.buffers()[0], array.buffers()[1], child.buffers()[1] or b"", array.offset), key)


def _keyed(part: Part, key: str | None) -> Part:
    return part if key is None else (*part, key.encode())


@dataclass(frozen=True)
class SnippetTable:
    """JSON texts encoded once, for many calls of snippets() (the pages of one plan, say)."""

    offsets: np.ndarray[Any, Any]
    data: bytes

    @classmethod
    def of(cls, texts: Sequence[str]) -> SnippetTable:
        encoded = [t.encode() for t in texts]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
        return cls(offsets, b"".join(encoded))


def snippets(ids: np.ndarray[Any, Any], texts: Sequence[str] | SnippetTable) -> Part:
    """For each row, texts[ids[row]] as it is (JSON already)."""
    table = texts if isinstance(texts, SnippetTable) else SnippetTable.of(texts)
    return (_SNIPPET, np.ascontiguousarray(ids, dtype=np.int64), table.offsets, table.data)


def splits(offsets: np.ndarray[Any, Any], file: Any, start: Any, length: Any, first: int) -> Part:
    """[[file, start, length], ...] of the pieces offsets[row + first] .. offsets[row + first + 1] - 1."""
    arrays = (np.ascontiguousarray(a, dtype=np.int64) for a in (offsets, file, start, length))
    return (_SPLITS, *arrays, first)


def _compact(array: pa.Array | pa.ChunkedArray, force: bool = False) -> pa.Array:
    """One contiguous array (a chunked one concatenated; `force`: copied afresh, offsets from 0)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if force:
        array = pa.concat_arrays([array.take(numpy_array(np.arange(len(array))))])
    return array

"""Data-file entries rendered from a plan's columns by the compiled renderer (wire/json_rows.py), a chunk of
rows at a time, for the /plan body's `files` and the REST scan pages' `file-scan-tasks` alike: each entry
is `{"data-file": DataFile` (the Iceberg REST spec's form) followed by what the caller's `tail` renders
(its residual, its delete-file references) and the entry's closing brace.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import orjson
import polars as pl

from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.types import Schema
from planner_service.planning.planned_files import FileTaskColumns
from planner_service.wire import json_rows as rows
from planner_service.wire.content_file_json import partition_json, partition_types
from planner_service.wire.json_rows import SnippetTable

CHUNK_ROWS = 20_000  # data files rendered at a time
Tail = Callable[[int, int], list[rows.Part]]  # the parts after the data file, for files[begin:end]

_DATA_FILE_COLUMNS = [
    "file_name",
    "file_size_in_bytes",
    "record_count",
    "split_offsets",
    "sort_order_id",
    "key_metadata",
    "first_row_id",
    "data_sequence_number",
]
_OPTIONAL: dict[str, tuple[str, Callable[[pl.Series], rows.Part]]] = {  # column: (JSON key, renderer)
    "split_offsets": ("split-offsets", rows.int_lists),
    "sort_order_id": ("sort-order-id", rows.ints),
    "key_metadata": ("key-metadata", lambda s: rows.strings(s.bin.encode("hex").str.to_uppercase())),
    "first_row_id": ("first-row-id", rows.ints),
    "data_sequence_number": ("sequence-number", rows.ints),
}
Snippets = tuple[np.ndarray[Any, Any], SnippetTable]  # each row's index into JSON texts, the texts


def data_file_chunks(
    files: FileTaskColumns,
    specs: dict[int, PartitionSpec],
    schema: Schema,
    tail: Tail,
    begin: int = 0,
    end: int | None = None,
    omit_nulls: bool = False,
) -> Iterator[bytes]:
    """files[begin:end] as comma-separated entries, in chunks of CHUNK_ROWS. An optional field some files of a
    chunk lack is null in those; with `omit_nulls`, left out of them (runs of files alike rendered apart)."""
    index = files.index
    end = len(files) if end is None else end
    types = partition_types(specs, schema)
    partitions = index.memo(  # rendered once per index (and the table's partition types)
        f"partition-json:{types!r}",
        lambda: SnippetTable.of([orjson.dumps(partition_json(types, s, v)).decode() for s, v in index.partitions]),
    )
    format_ids, formats = index.formats
    format_json = index.memo(
        "format-json",
        lambda: SnippetTable.of([orjson.dumps(f.lower() if f is not None else None).decode() for f in formats]),
    )
    directories = index.memo(
        "directory-json", lambda: SnippetTable.of([orjson.dumps(d).decode()[:-1] for d in index.directories])
    )
    columns = {name: index.frame.get_column(name) for name in _DATA_FILE_COLUMNS}
    for chunk_first in range(begin, end, CHUNK_ROWS):
        selected = files.rows[chunk_first : min(chunk_first + CHUNK_ROWS, end)]
        contiguous = len(selected) and selected[-1] - selected[0] == len(selected) - 1  # a slice, not a copy
        start = int(selected[0]) if len(selected) else 0
        chunk = {n: c.slice(start, len(selected)) if contiguous else c.gather(selected) for n, c in columns.items()}
        for a, b in _alike(chunk) if omit_nulls else [(0, len(selected))]:
            run = selected[a:b]
            yield _render(
                {n: c.slice(a, b - a) for n, c in chunk.items()} if b - a < len(selected) else chunk,
                len(run),
                index.spec_id[run],
                (format_ids[run], format_json),
                (index.partition_id[run], partitions),
                (index.directory_id[run], directories),
                tail(chunk_first + a, chunk_first + b),
                b"," if chunk_first + a > begin else b"",
            )


def _alike(chunk: dict[str, pl.Series]) -> list[tuple[int, int]]:
    """The chunk's rows in runs whose optional fields are present alike (one run, most often)."""
    height = len(chunk[_DATA_FILE_COLUMNS[0]])
    present = np.zeros(height, np.int64)
    for bit, name in enumerate(_OPTIONAL):
        column = chunk[name]
        if 0 < column.null_count() < height:  # (all present or all absent: the same in every row)
            present |= (~column.is_null().to_numpy()).astype(np.int64) << bit
    bounds = [0, *(np.flatnonzero(np.diff(present)) + 1).tolist(), height]
    return list(itertools.pairwise(bounds))


def _render(
    chunk: dict[str, pl.Series],
    height: int,
    spec_id: np.ndarray[Any, Any],
    file_format: Snippets,
    partition: Snippets,
    directory: Snippets,
    tail: list[rows.Part],
    prefix: bytes,
) -> bytes:
    """One chunk of entries, comma-separated, after `prefix`. Optional fields that no file of the chunk has are
    left out; where only some files have one, the others carry null. A path is its directory's snippet (the
    string opened, the directory escaped) and its name's tail."""
    col = chunk.__getitem__
    parts = [
        rows.literal('{"data-file":{"spec-id":'),
        rows.ints(spec_id),
        rows.literal(',"content":"data","file-path":'),
        rows.snippets(*directory),
        rows.string_tails(col("file_name")),
        rows.literal(',"file-format":'),
        rows.snippets(*file_format),
        rows.literal(',"partition":'),
        rows.snippets(*partition),
        rows.literal(',"file-size-in-bytes":'),
        rows.ints(col("file_size_in_bytes")),
        rows.literal(',"record-count":'),
        rows.ints(col("record_count")),
    ]
    for name, (key, part) in _OPTIONAL.items():
        if col(name).null_count() < height:
            parts += [rows.literal(f',"{key}":'), part(col(name))]
    parts += [rows.literal("}"), *tail, rows.literal("}")]
    return rows.render(height, parts, prefix)

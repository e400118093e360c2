"""Data-file entries rendered from a plan's columns by the compiled renderer (wire/json_rows.py), a chunk of
rows at a time, for the /plan body's `files` and the REST scan pages' `file-scan-tasks` alike: each entry
is `{"data-file": DataFile` (the Iceberg REST spec's form) followed by what the caller's `tail` renders
(its residual, its delete-file references) and the entry's closing brace.
"""

from __future__ import annotations

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

CHUNK_ROWS = 8192  # data files rendered at a time (a few MB of JSON: what a streamed answer renders ahead)
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
_OPTIONAL: dict[str, tuple[str, Callable[[pl.Series, str | None], rows.Part]]] = {  # column: (JSON key, part)
    "split_offsets": ("split-offsets", rows.int_lists),
    "sort_order_id": ("sort-order-id", rows.ints),
    "key_metadata": ("key-metadata", lambda s, key: rows.strings(s.bin.encode("hex").str.to_uppercase(), key)),
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
    before: Tail | None = None,
    after: Tail | None = None,
) -> Iterator[bytes]:
    """files[begin:end] as comma-separated entries, in chunks of CHUNK_ROWS. An optional field some files of a
    chunk lack is null in those; with `omit_nulls`, left out of them. `before` and `after` render what goes
    before and after each entry, as `tail` does inside it. The rows may come in any order, and more than once."""
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
        contiguous = len(selected) and bool(np.all(np.diff(selected) == 1))  # a slice, not a copy
        start = int(selected[0]) if len(selected) else 0
        chunk = {n: c.slice(start, len(selected)) if contiguous else c.gather(selected) for n, c in columns.items()}
        yield _render(
            chunk,
            len(selected),
            index.spec_id[selected],
            (format_ids[selected], format_json),
            (index.partition_id[selected], partitions),
            (index.directory_id[selected], directories),
            tail(chunk_first, chunk_first + len(selected)),
            b"," if chunk_first > begin else b"",
            omit_nulls,
            [] if before is None else before(chunk_first, chunk_first + len(selected)),
            [] if after is None else after(chunk_first, chunk_first + len(selected)),
        )


def _render(
    chunk: dict[str, pl.Series],
    height: int,
    spec_id: np.ndarray[Any, Any],
    file_format: Snippets,
    partition: Snippets,
    directory: Snippets,
    tail: list[rows.Part],
    prefix: bytes,
    omit_nulls: bool,
    before: list[rows.Part],
    after: list[rows.Part],
) -> bytes:
    """One chunk of entries, comma-separated, after `prefix`. Optional fields that no file of the chunk has are
    left out; where only some files have one, the others carry null, or with `omit_nulls` leave it out. A path
    is its directory's snippet (the string opened, the directory escaped) and its name's tail."""
    col = chunk.__getitem__
    parts = [
        *before,
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
        nulls = col(name).null_count()
        if nulls == height:
            continue
        if nulls and omit_nulls:  # (only some files have it: the key with each value, nothing for the others)
            parts.append(part(col(name), f',"{key}":'))
        else:
            parts += [rows.literal(f',"{key}":'), part(col(name), None)]
    parts += [rows.literal("}"), *tail, rows.literal("}"), *after]
    return rows.render(height, parts, prefix)

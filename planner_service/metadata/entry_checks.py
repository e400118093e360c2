"""Manifest entries that cannot be right, found in the decoded columns of many manifests at once.

Java reads an entry whose status or file format it does not know as an error, and most other values as
they are: a data file "" of -1 rows and -1 bytes, a negative sequence number. A plan built from them is
silently wrong, so each is an error here, naming the manifest and the entry. Whether an entry's content
fits its manifest's is checked where the manifest is used (planner: the same file may be listed as either).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from planner_service.metadata.avro_columns import numpy_of

FILE_FORMATS = frozenset({"PARQUET", "ORC", "AVRO", "PUFFIN", "METADATA"})  # Java's FileFormat, any case
_DATA, _POSITION, _EQUALITY = 0, 1, 2
_NON_NEGATIVE = ("record_count", "file_size_in_bytes", "sequence_number", "file_sequence_number")


def entry_problem(columns: Mapping[str, pa.Array], status: np.ndarray[Any, Any]) -> tuple[int, str] | None:
    """(row, what is wrong with it) for the first entry that cannot be right, or None."""
    found: list[tuple[int, str]] = []

    def first(bad: np.ndarray[Any, Any], what: Any) -> None:
        rows = np.flatnonzero(bad)
        if len(rows):
            row = int(rows[0])
            found.append((row, what(row) if callable(what) else what))

    first((status < 0) | (status > 2), lambda r: f"status {int(status[r])}, not 0, 1 or 2")
    content, _ = numpy_of(columns["content"].cast(pa.int32()))
    first((content < _DATA) | (content > _EQUALITY), lambda r: f"content {int(content[r])}, not 0, 1 or 2")
    no_ids = _filled(pc.equal(pc.list_value_length(columns["equality_ids"]), 0)) | _filled(
        pc.is_null(columns["equality_ids"])
    )
    first((content == _EQUALITY) & no_ids, "content 2 (equality deletes) and no equality_ids")
    paths = columns["file_path"]
    first(_filled(pc.equal(pc.binary_length(paths), 0)), "an empty file_path")
    first(_filled(pc.is_null(paths)), "no file_path")
    first(_filled(pc.equal(pc.binary_length(columns["referenced_data_file"]), 0)), "an empty referenced_data_file")
    formats = columns["file_format"]
    first(_filled(pc.is_null(formats)), "no file_format")
    unknown = [f for f in pc.unique(formats).to_pylist() if f is not None and f.upper() not in FILE_FORMATS]
    if unknown:
        first(_filled(pc.is_in(formats, pa.array(unknown, formats.type))), lambda r: f"file_format {unknown[0]!r}")
    for name in _NON_NEGATIVE:
        values, _ = numpy_of(columns[name].cast(pa.int64()))
        first(values < 0, lambda r, n=name, v=values: f"{n} {int(v[r])}")
    return min(found) if found else None


def _filled(mask: pa.Array) -> np.ndarray[Any, Any]:
    return np.asarray(mask.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)

"""File paths as a directory, interned, and a name: the files of a table share a few directories (one per
partition, in Iceberg's layouts), so an index holds each directory once and each file's name (its bytes
after the last '/'). The split runs in C (planner_service/csrc/paths.c)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from planner_service import _kernels

Int32Array = np.ndarray[Any, np.dtype[np.int32]]


def split_paths(paths: pa.Array | pa.ChunkedArray, directories: dict[bytes, int]) -> tuple[Int32Array, pa.Array]:
    """(each path's directory id, the names as a large_string array); `directories` (bytes -> id, in the order
    first seen) gains the directories it did not hold. Paths are never null (file_path is required)."""
    array = paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths
    array = array.cast(pa.large_string())
    if array.null_count:
        raise ValueError("a file path is null")
    _, offsets, data = array.buffers()
    window = memoryview(offsets)[8 * array.offset : 8 * (array.offset + len(array) + 1)]  # (the offsets are absolute)
    ids, name_offsets, names = _kernels.split_paths(window, data or b"", directories)
    name_array = pa.Array.from_buffers(
        pa.large_string(), len(array), [None, pa.py_buffer(name_offsets), pa.py_buffer(names)]
    )
    return np.frombuffer(ids, dtype=np.int32), name_array

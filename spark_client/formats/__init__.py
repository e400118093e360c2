"""Data and delete files by format: Parquet, ORC and Avro, each read as Arrow with Iceberg's field ids.

A `DataFile` is one open file. It says which of its row ranges a task's byte range covers (Parquet row
groups, ORC stripes, Avro blocks: each belongs to exactly one range of any cut of the file, as Iceberg's
readers assign them), what its statistics say of a column over a range, and reads a range's columns as
Arrow batches. Its `schema` carries Iceberg field ids as Parquet's `PARQUET:field_id` field metadata,
whatever the format keeps them as, so that projection.py matches columns one way for all three.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from iceberg_io import StorageConfig

__all__ = ["Bounds", "DataFile", "RowRange", "UnsupportedFileFormat", "open_data_file", "ranges_at"]


class UnsupportedFileFormat(NotImplementedError):
    """A data or delete file of a format this reader cannot read (the message names the file)."""


@dataclass(frozen=True)
class RowRange:
    """Rows read together: a Parquet row group, an ORC stripe or an Avro block."""

    index: int  # in the file's order
    first_row: int  # the file position of its first row (what position deletes and DVs count)
    num_rows: int


def ranges_at(units: Iterable[tuple[int, int]], start: int, length: int) -> list[RowRange]:
    """Of a file's row ranges, given in file order as (the byte position that places it, its rows), those
    whose position lies in [start, start + length): each belongs to exactly one range of any cut of the file
    (what the position is differs by format: a row group's or stripe's start, an Avro block's sync marker)."""
    if start < 0 or length < 0:
        raise ValueError(f"Invalid file range: start {start}, length {length}")
    out, first_row = [], 0
    for index, (position, rows) in enumerate(units):
        if start <= position < start + length and rows:
            out.append(RowRange(index, first_row, rows))
        first_row += rows
    return out


@dataclass(frozen=True)
class Bounds:
    """A column's statistics over a row range (None: not known)."""

    null_count: int | None
    lower: Any
    upper: Any


class DataFile(Protocol):
    location: str
    schema: pa.Schema  # with PARQUET:field_id metadata where the file has ids

    def ranges(self, start: int, length: int) -> list[RowRange]:
        """The row ranges that a task reading bytes [start, start + length) reads, in file order."""
        ...

    def bounds(self, rows: RowRange, path: list[str]) -> Bounds | None:
        """The statistics of the primitive column at `path` (names through structs) over `rows`, if any."""
        ...

    def read(self, rows: RowRange, columns: list[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        """The top-level `columns` of `rows`, in batches of at most `batch_size` rows."""
        ...

    def read_all(self, columns: list[str]) -> pa.Table:
        """The top-level `columns` of the whole file (a delete file)."""
        ...

    def close(self) -> None:
        """Close the file (its reads are over)."""
        ...


def open_data_file(
    location: str, file_format: str, storage: StorageConfig, urls: Mapping[str, str] | None = None
) -> DataFile:
    """The file at `location` (a data file's `file-format`: parquet, orc or avro, any case), read through
    its presigned URL when `urls` (the plan's `file-urls`) has one, else from its store."""
    kind = str(file_format).lower()
    if kind == "parquet":
        from spark_client.formats.parquet import ParquetFile

        return ParquetFile(location, storage, urls)
    if kind == "orc":
        from spark_client.formats.orc import OrcFile

        return OrcFile(location, storage, urls)
    if kind == "avro":
        from spark_client.formats.avro import AvroFile

        return AvroFile(location, storage, urls)
    raise UnsupportedFileFormat(f"Cannot read {location}: {kind} files are not supported (Parquet, ORC, Avro)")

"""Which Parquet row groups a file scan task reads, and the file position of each one's first row.

A task covers the byte range [start, start + length) of its file. Iceberg's planner cuts Parquet files at
their split offsets, which are the row groups' starting positions (ParquetUtil.getSplitOffsets records
BlockMetaData.getStartingPos()), so a row group belongs to the one range its starting position lies in:
the tasks of a file then read each row group exactly once, however the file was split. (parquet-mr, under
Iceberg's Java reader, assigns a row group by its midpoint instead; for ranges cut at split offsets the two
rules agree, and either one covers every row group exactly once for any cut of the file.)
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow.parquet as pq


@dataclass(frozen=True)
class RowGroup:
    index: int  # in the file's footer
    first_row: int  # the file position of its first row (what position deletes and DVs count)
    num_rows: int


def starting_position(row_group: pq.RowGroupMetaData) -> int:
    """parquet-mr's ColumnChunkMetaData.getStartingPos() of the first column chunk: its dictionary page
    when it has one before the first data page, else the first data page."""
    chunk = row_group.column(0)
    dictionary = chunk.dictionary_page_offset
    if dictionary is not None and 0 < dictionary < chunk.data_page_offset:
        return int(dictionary)
    return int(chunk.data_page_offset)


def row_groups_in_range(metadata: pq.FileMetaData, start: int, length: int) -> list[RowGroup]:
    """The row groups whose starting position lies in [start, start + length), in file order."""
    if start < 0 or length < 0:
        raise ValueError(f"Invalid file range: start {start}, length {length}")
    out = []
    first_row = 0
    for i in range(metadata.num_row_groups):
        rg = metadata.row_group(i)
        if start <= starting_position(rg) < start + length:
            out.append(RowGroup(i, first_row, rg.num_rows))
        first_row += rg.num_rows
    return out

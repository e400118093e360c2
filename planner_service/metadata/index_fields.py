"""One field's column statistics over an assembled index, decoded, on disk: what the metrics evaluator reads of a
field (its value, null and NaN counts, its lower and upper bounds as comparable keys) and each file's record
count, so that a process that did not decode them prunes the files of a big table by a filter on that field
with a few vector operations over mapped pages, without opening the index's segments (metadata/index_file.py)
or decoding the statistics maps of millions of files.

A field's file is an index file (the same envelope and MAC) of kind `field`, named for the assembly it
describes (the list of manifests, with statistics), the field id and its type as the filter binds it: a field
read as another type (a promoted column) has a file of its own. Fields whose bounds have no vector form
(decimal, uuid, binary, boolean: compared as Python values) are not written.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from planner_service.metadata.file_index import STATS_COLUMNS
from planner_service.metadata.index_file import InvalidIndexFile, numbers, sealed, unsealed
from planner_service.metadata.stats_columns import BoundColumn, StatsColumns
from planner_service.metadata.types import PrimitiveType

FIELD = "field"
COUNTS, BOUNDS = STATS_COLUMNS[:3], STATS_COLUMNS[3:]


class NotHeld(LookupError):
    """Statistics that a field file does not hold were wanted: plan from the index instead."""


class HeldStats(StatsColumns):
    """StatsColumns of the fields given by their files (no frame of statistics maps behind them, only
    record_count): anything else wanted raises NotHeld."""

    def __init__(self, frame: pl.DataFrame, held: dict[tuple[str, int], Any]) -> None:
        super().__init__(frame)
        self._cache.update(held)

    def counts(self, column: str, field_id: int) -> Any:
        if (column, field_id) not in self._cache:
            raise NotHeld(f"{column} of field {field_id}")
        return super().counts(column, field_id)

    def raw_bounds(self, column: str, field_id: int) -> pl.Series:
        raise NotHeld(f"the raw {column} of field {field_id}")


def field_file(name: str, stats: StatsColumns, field_id: int, typ: PrimitiveType, key: bytes) -> bytes | None:
    """The file of field `field_id` (bound as `typ`) of the assembly `name`, from its decoded statistics `stats`
    (decoded here as far as they are not yet); None when its bounds have no vector form. Every column reads
    back without a copy: counts in the narrowest integers that hold them, beside their flags (bytes); bounds'
    keys with nulls where a file has none; NaN flags only when a bound is NaN."""
    columns: dict[str, pa.Array] = {"record_count": pa.array(stats.record_count, pa.int64())}
    for column in COUNTS:
        values, present = stats.counts(column, field_id)
        columns[column] = pa.array(_narrowest(values))
        columns[f"{column}.present"] = pa.array(present.view(np.uint8))
    for column in BOUNDS:
        bound = stats.bounds(column, field_id, typ)
        if bound.keys is None:
            return None
        columns[f"{column}.keys"] = bound.keys.to_arrow()
        if bound.is_nan.any():
            columns[f"{column}.nan"] = pa.array(bound.is_nan.view(np.uint8))
    meta = {"name": name, "field": field_id, "type": str(typ)}
    return sealed(FIELD, pa.table(columns), meta, key)


def open_field(
    data: pa.Buffer, name: str, field_id: int, typ: PrimitiveType, key: bytes
) -> tuple[pl.DataFrame, dict[tuple[str, int], Any]]:
    """(each file's record count, as a frame; the statistics of the field as StatsColumns holds them decoded),
    over the pages of the file of field `field_id` bound as `typ` of the assembly `name`; InvalidIndexFile
    unless it is that file, written with `key`."""
    table, meta = unsealed(data, FIELD, key)
    if (meta.get("name"), meta.get("field"), meta.get("type")) != (name, field_id, str(typ)):
        raise InvalidIndexFile("a field's file for another assembly, field or type")
    try:
        held: dict[tuple[str, int], Any] = {}
        for column in COUNTS:
            values = numbers(table.column(column), _INTS[table.schema.field(column).type])
            held[(column, field_id)] = (values, _flags(table, f"{column}.present"))
        for column in BOUNDS:
            keys = pl.Series(column, table.column(f"{column}.keys"))
            present = np.asarray(keys.is_not_null().to_numpy(), dtype=bool)
            names = table.column_names
            is_nan = _flags(table, f"{column}.nan") if f"{column}.nan" in names else np.zeros(len(keys), bool)
            held[(column, field_id)] = BoundColumn(present, is_nan, keys, [], typ)
        frame = pl.from_arrow(table.select(["record_count"]), rechunk=False)
    except (KeyError, TypeError, ValueError, pa.ArrowException) as exc:
        raise InvalidIndexFile(f"a field's file that does not read: {exc}") from None
    assert isinstance(frame, pl.DataFrame)
    return frame, held


_INTS = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64}


def _narrowest(values: Any) -> Any:
    """Counts in the narrowest signed integers that hold them (their differences too: the evaluator subtracts
    counts of one kind from another, both within the type's range)."""
    low, high = (int(values.min()), int(values.max())) if len(values) else (0, 0)
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return values.astype(dtype)
    return values.astype(np.int64, copy=False)


def _flags(table: pa.Table, column: str) -> Any:
    """Flags written as bytes, as bools over the file's pages."""
    return numbers(table.column(column), np.uint8).view(np.bool_)

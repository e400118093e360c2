"""Where each data file lies in a table's sort order, from its column statistics alone.

A sort order (spec: "Sorting") orders rows by a list of fields, each a transform of a source column, a
direction and a null order. A file's keys lie between a first and a last key: per field, the least and the
greatest of what the file may hold (null when its null count is not known to be 0, NaN when its NaN count is
not, its lower and upper bounds, transformed). Rows compare as Spark orders them: NaN above every number
(below with `desc`), -0.0 equal to 0.0, strings by code point, binary by unsigned bytes, UUIDs as their text.
Compared field by field, every key of the file lies between its first and last keys, so two files whose ranges
do not meet hold no equal or interleaved keys.

The usable key is the sort order's longest prefix of fields whose transform keeps order (identity, truncate,
year, month, day, hour; void is constant); a later field cannot order files. A field a file has no bounds for
is unknown: its range there is everything. A file unknown on the first field has no range at all (`bounded`
false). Files are compared by rank: each file's first and last key are numbered in the key's order (equal keys
equal numbers), so that ordering and overlap are integer comparisons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

import value_order
from planner_service.errors import BadRequestError
from planner_service.expressions.transforms import apply_transform
from planner_service.metadata.conversions import from_bytes
from planner_service.metadata.partitioning import Transform
from planner_service.metadata.stats_columns import StatsColumns, decoded_bounds
from planner_service.metadata.table_metadata import TableMetadata
from planner_service.metadata.types import IcebergType, PrimitiveType

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
UNKNOWN = object()  # a field of a key that statistics do not bound
_FLOATS = ("float", "double")
_NEG_ZERO_KEY = -1  # stats_columns' integer key of -0.0 (that of 0.0 is 0)


@dataclass(frozen=True)
class SortField:
    transform: Transform
    source_id: int
    source_type: PrimitiveType
    required: bool
    descending: bool
    nulls_first: bool

    @property
    def result_type(self) -> IcebergType:
        return self.transform.result_type(self.source_type)

    def to_json(self) -> dict[str, Any]:
        return {
            "transform": str(self.transform),
            "source-id": self.source_id,
            "direction": "desc" if self.descending else "asc",
            "null-order": "nulls-first" if self.nulls_first else "nulls-last",
        }


@dataclass(frozen=True)
class SortKey:
    """The part of a table's sort order that files' statistics can order by."""

    order_id: int
    fields: tuple[SortField, ...]

    def to_json(self) -> dict[str, Any]:
        return {"order-id": self.order_id, "fields": [f.to_json() for f in self.fields]}


def table_sort_key(meta: TableMetadata, table_name: str) -> SortKey:
    """The table's default sort order, as far as statistics can order files by it; BadRequestError when the
    table is unsorted or its order starts with a field no statistics order (bucket)."""
    order = next((o for o in meta.sort_orders if o.order_id == meta.default_sort_order_id), None)
    declared = order.fields if order is not None else ()
    fields: list[SortField] = []
    for f in declared:
        source = meta.schema.find_field(f.source_id)
        if source is None or not isinstance(source.type, PrimitiveType):
            break
        if not (f.transform.preserves_order or f.transform.name == "void"):
            break
        fields.append(
            SortField(f.transform, source.field_id, source.type, source.required, f.descending, f.nulls_first)
        )
    if not any(f.transform.name != "void" for f in fields):
        what = (
            "is unsorted"
            if not declared
            else f"has a sort order that starts with {declared[0].transform}, which file bounds do not order"
        )
        raise BadRequestError(
            f"grouping sort-order needs a table sort order: {table_name} {what}; give the table one (in Spark: "
            "ALTER TABLE ... WRITE ORDERED BY ...) or use grouping partition"
        )
    return SortKey(order.order_id if order is not None else 0, tuple(fields))


@dataclass(frozen=True)
class FileRanges:
    """Each file's key range: `first_rank` and `last_rank` are ranks in the key's order, shared by the two (a
    file lies after another when its first rank exceeds the other's last); `bounded` is false for a file with no range.
    `keys` gives files' first or last keys as values (UNKNOWN where a field is not bounded)."""

    key: SortKey
    first_rank: Int64Array
    last_rank: Int64Array
    bounded: BoolArray
    _fields: tuple[_FieldRanges, ...]

    def keys(self, files: Int64Array, last: bool) -> list[tuple[Any, ...]]:
        """The first (or, with `last`, the last) key of each of `files`, as internal values."""
        columns = [f.values(files, f.last[files] if last else f.first[files]) for f in self._fields]
        return list(zip(*columns, strict=True)) if columns else [() for _ in files]


def file_ranges(key: SortKey, stats: StatsColumns, rows: Int64Array) -> FileRanges:
    """The key ranges of the files `rows` of the statistics `stats`, in the order of `rows`."""
    fields = tuple(_field_ranges(f, stats, rows) for f in key.fields)
    n = len(rows)
    if n == 0:
        empty = np.zeros(0, np.int64)
        return FileRanges(key, empty, empty, np.zeros(0, np.bool_), fields)
    firsts = np.stack([f.first for f in fields], axis=1)
    lasts = np.stack([f.last for f in fields], axis=1)
    ranks = _dense_ranks(np.concatenate([firsts, lasts]))
    return FileRanges(key, ranks[:n], ranks[n:], fields[0].bounded, fields)


def _dense_ranks(codes: np.ndarray[Any, Any]) -> Int64Array:
    """Each row's rank among the rows in lexicographic order (equal rows, equal ranks)."""
    order = np.lexsort(codes.T[::-1])
    ordered = codes[order]
    new = np.concatenate(([False], np.any(ordered[1:] != ordered[:-1], axis=1)))
    ranks = np.empty(len(codes), np.int64)
    ranks[order] = np.cumsum(new)
    return ranks


@dataclass(frozen=True)
class _FieldRanges:
    """One field's codes per file: 0 unknown-low, then nulls (first), values and NaN in the field's direction,
    nulls (last), `top` unknown-high."""

    field: SortField
    first: Int64Array
    last: Int64Array
    bounded: BoolArray
    lower_code: Int64Array
    null_code: int
    nan_code: int
    top: int
    bounds: tuple[pl.Series, pl.Series]  # the files' raw lower and upper bounds of the source column

    def values(self, files: Int64Array, codes: Int64Array) -> list[Any]:
        """The field's value each code stands for in its file's range (one code a file of `files`)."""
        lower = pl.Series(codes == self.lower_code[files])
        raw = pl.select(pl.when(lower).then(self.bounds[0].gather(files)).otherwise(self.bounds[1].gather(files)))
        decoded = decoded_bounds(raw.to_series(), self.field.source_type)
        out: list[Any] = []
        for code, value in zip(codes.tolist(), decoded, strict=True):
            if code in (0, self.top):
                out.append(UNKNOWN)
            elif code == self.null_code:
                out.append(None)
            elif code == self.nan_code:
                out.append(math.nan)
            else:
                out.append(_transformed(self.field, value))
        return out


def _field_ranges(field: SortField, stats: StatsColumns, rows: Int64Array) -> _FieldRanges:
    n, fid, typ = len(rows), field.source_id, field.source_type
    lower_all, upper_all = (stats.raw_bounds(column, fid) for column in ("lower_bounds", "upper_bounds"))
    lower_raw, upper_raw = lower_all.gather(rows), upper_all.gather(rows)
    if field.transform.name == "void":  # one value (null) for every row
        codes = np.ones(n, np.int64)
        return _FieldRanges(field, codes, codes, np.ones(n, np.bool_), codes, 1, -1, 2, (lower_raw, upper_raw))
    lower, upper = (
        _bound_keys(field, stats, rows, lower_all, "lower_bounds"),
        _bound_keys(field, stats, rows, upper_all, "upper_bounds"),
    )
    rank, m = _ranks(lower.keys, upper.keys)
    lower_rank, upper_rank = rank[:n], rank[n:]

    def code(r: Int64Array) -> Int64Array:  # values occupy 2..m+1 (asc) or 3..m+2 (desc, NaN first)
        return (m + 3 - r) if field.descending else (1 + r)

    nan_code = 2 if field.descending else m + 2
    null_code = 1 if field.nulls_first else m + 3
    top = m + 4
    values, values_known = stats.counts("value_counts", fid)
    nulls, nulls_known = stats.counts("null_value_counts", fid)
    values, values_known, nulls, nulls_known = values[rows], values_known[rows], nulls[rows], nulls_known[rows]
    is_float = typ.kind in _FLOATS and field.transform.name == "identity"
    if typ.kind in _FLOATS:
        nans, nans_known = stats.counts("nan_value_counts", fid)
        nans, nans_known = nans[rows], nans_known[rows]
    else:
        nans, nans_known = np.zeros(n, np.int64), np.ones(n, np.bool_)
    null_possible = ~nulls_known | (nulls > 0) if not field.required else np.zeros(n, np.bool_)
    nan_possible = (~nans_known | (nans > 0) | lower.nan | upper.nan) if is_float else np.zeros(n, np.bool_)
    counts_known = values_known & nulls_known & nans_known
    has_values = ~counts_known | (values - nulls - nans > 0)
    known = lower.present & upper.present
    big = np.int64(top + 1)  # stands for "no candidate" in a minimum; -1 in a maximum
    lo_code = np.where(lower.nan, nan_code, code(lower_rank))
    hi_code = np.where(upper.nan, nan_code, code(upper_rank))
    low = np.where(known, np.minimum(lo_code, hi_code), 0)
    high = np.where(known, np.maximum(lo_code, hi_code), top)
    first = np.where(has_values, low, big)
    last = np.where(has_values, high, -1)
    first = np.where(null_possible, np.minimum(first, null_code), first)
    last = np.where(null_possible, np.maximum(last, null_code), last)
    first = np.where(nan_possible, np.minimum(first, nan_code), first)
    last = np.where(nan_possible, np.maximum(last, nan_code), last)
    empty = first == big  # a file with no rows: it holds nothing to order; placed with the nulls
    first, last = np.where(empty, null_code, first), np.where(empty, null_code, last)
    return _FieldRanges(
        field,
        first.astype(np.int64),
        last.astype(np.int64),
        ~(has_values & ~known),
        lo_code.astype(np.int64),
        null_code,
        nan_code,
        top,
        (lower_raw, upper_raw),
    )


@dataclass(frozen=True)
class _Keys:
    keys: pl.Series | list[Any]  # comparable in the field's ascending order; null where no bound or NaN
    present: BoolArray  # the file has the bound
    nan: BoolArray  # the bound is NaN (older writers): it stands for the file's NaNs


def _bound_keys(field: SortField, stats: StatsColumns, rows: Int64Array, raw_all: pl.Series, column: str) -> _Keys:
    """The keys of one bound column (`raw_all`: the raw bounds of every file of `stats`) for the files `rows`."""
    typ, raw = field.source_type, raw_all.gather(rows)
    present = np.asarray(raw.is_not_null().to_numpy(), dtype=bool)
    if field.transform.name == "identity":
        bound = stats.bounds(column, field.source_id, typ, raw_all)
        if bound.keys is not None:  # integers, floats as ordered integers, strings: compared as they are
            keys, nan = bound.keys.gather(rows), bound.is_nan[rows]
            if typ.kind in _FLOATS:  # NaN apart, -0.0 as 0.0
                keys = pl.select(pl.when(keys == _NEG_ZERO_KEY).then(0).otherwise(keys)).to_series()
                keys = keys.scatter(np.flatnonzero(nan), None) if nan.any() else keys
            return _Keys(keys, present, nan)
    values = [None if b is None else _transformed(field, from_bytes(typ, b)) for b in raw.to_list()]
    nan = np.fromiter((isinstance(v, float) and v != v for v in values), dtype=bool, count=len(values))
    python_keys = [None if v is None or n else value_order.key(v) for v, n in zip(values, nan, strict=True)]
    return _Keys(python_keys, present, nan)


def _ranks(lower: pl.Series | list[Any], upper: pl.Series | list[Any]) -> tuple[Int64Array, int]:
    """The dense rank (1 up) of each lower then each upper key among all of them, 0 for none; the most."""
    if isinstance(lower, pl.Series) and isinstance(upper, pl.Series):
        ranks = pl.concat([lower, upper]).rank("dense")
        return np.asarray(ranks.fill_null(0).to_numpy(), dtype=np.int64), int(ranks.max() or 0)  # type: ignore[arg-type]
    keys = [*lower, *upper]
    number = {k: i + 1 for i, k in enumerate(sorted({k for k in keys if k is not None}))}
    return np.fromiter((0 if k is None else number[k] for k in keys), np.int64, len(keys)), len(number)


def _transformed(field: SortField, value: Any) -> Any:
    return (
        value
        if value is None or field.transform.name == "identity"
        else apply_transform(field.transform, field.source_type, value)
    )

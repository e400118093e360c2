"""Column statistics of many files at once: the per-file `value_counts`, `null_value_counts`,
`nan_value_counts`, `lower_bounds` and `upper_bounds` maps of a manifest's entries, pulled out per field id
into arrays so that the metrics evaluator prunes a whole manifest with a few vector operations.

Bounds of fixed-width types are turned into integer sort keys that order exactly as Iceberg Java's
comparators (Comparators.forType): floats by their IEEE bits so that -0.0 < 0.0 and NaN is greatest.
Strings compare as polars strings (UTF-8 byte order, which is Unicode code-point order, as Java's
CharSeqComparator). Other types (decimal, uuid, binary, boolean) fall back to Python values.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from planner_service.metadata.conversions import from_bytes, sort_key
from planner_service.metadata.types import IcebergType, PrimitiveType

BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
IntArray = np.ndarray[Any, np.dtype[np.int64]]

_LONG_KINDS = {"long", "time", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"}
# fixed-width kinds: the bytes of a bound and the column they read as
_FIXED: dict[str, tuple[int, Any]] = {
    "int": (4, pl.Int32),
    "date": (4, pl.Int32),
    "float": (4, pl.Float32),
    "double": (8, pl.Float64),
    **{kind: (8, pl.Int64) for kind in _LONG_KINDS},
}
_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
}


def map_value(maps: pl.Series, field_id: int) -> pl.Series:
    """The value stored under `field_id` in each map of a list<struct<key, value>> series (null when absent;
    the first, should a key repeat). From the maps' entries flattened once, not per row: a third of the memory
    and time of a per-row list.eval (measured on 200,000 files' bounds: 31 against 94 MB above the frame,
    32-43 against 48-53 ms)."""
    lengths = maps.list.len().fill_null(0).to_numpy()
    entries = maps.explode(empty_as_null=False, keep_nulls=False)
    keys = entries.struct.field("key").to_numpy()
    hits = np.flatnonzero(keys == field_id)
    rows = np.repeat(np.arange(len(maps), dtype=np.int64), lengths)[hits]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = rows[1:] != rows[:-1]  # (rows ascend: the first entry of each row holding the key)
    values = entries.struct.field("value").gather(hits[first])
    out = pl.repeat(None, len(maps), dtype=values.dtype, eager=True).alias(maps.name)
    return out.scatter(rows[first], values)


@dataclass
class BoundColumn:
    """The lower or upper bounds of one column over N files: comparable keys, or Python values."""

    present: BoolArray
    is_nan: BoolArray
    keys: pl.Series | None  # integer or string keys when the type has a vector form
    values: list[Any]  # decoded internal values (None where absent); filled lazily for the fallback
    typ: PrimitiveType

    def compare(self, op: str, literal: Any) -> BoolArray:
        """`bound OP literal` under Java's comparator, False where the bound is absent."""
        if self.keys is not None:
            key = _vector_key(self.typ, literal)
            return np.asarray(_OPS[op](self.keys, key).fill_null(False).to_numpy(), dtype=bool)
        k = sort_key(self.typ)
        lit = k(literal)
        fn = _OPS[op]
        return np.fromiter((v is not None and fn(k(v), lit) for v in self.values), dtype=bool, count=len(self.values))


@dataclass
class StatsColumns:
    """Statistics of the files of one frame (rows = files), decoded per field id on first use."""

    frame: pl.DataFrame
    _cache: dict[tuple[str, int], Any] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return self.frame.height

    @property
    def record_count(self) -> IntArray:
        return np.asarray(self.frame.get_column("record_count").to_numpy(), dtype=np.int64)

    def counts(self, column: str, field_id: int) -> tuple[IntArray, BoolArray]:
        """(count, present) per file for a count map: value_counts, null_value_counts, nan_value_counts."""
        key = (column, field_id)
        if key not in self._cache:
            series = map_value(self.frame.get_column(column), field_id)
            present = np.asarray(series.is_not_null().to_numpy(), dtype=bool)
            values = np.asarray(series.fill_null(0).to_numpy(), dtype=np.int64)
            self._cache[key] = (values, present)
        out: tuple[IntArray, BoolArray] = self._cache[key]
        return out

    def bounds(self, column: str, field_id: int, typ: IcebergType, raw: pl.Series | None = None) -> BoundColumn:
        """Decoded `lower_bounds` or `upper_bounds` of a column (from `raw`, its raw_bounds, when the caller
        has them already)."""
        key = (column, field_id)
        if key not in self._cache:
            self._cache[key] = _decode_bounds(self.raw_bounds(column, field_id) if raw is None else raw, typ)
        out: BoundColumn = self._cache[key]
        return out

    def raw_bounds(self, column: str, field_id: int) -> pl.Series:
        """The `lower_bounds` or `upper_bounds` of a column as stored (binary; null where absent). Not kept: an
        index keeps only the decoded bounds."""
        return map_value(self.frame.get_column(column), field_id)

    def bound_extreme(self, column: str, field_id: int, typ: PrimitiveType, rows: IntArray, largest: bool) -> Any:
        """The least (or greatest) `column` bound of a column among `rows` under Java's comparator, decoded;
        None when none of them has one."""
        bound = self.bounds(column, field_id, typ)
        chosen = rows[bound.present[rows]]
        if not len(chosen):
            return None
        if bound.keys is not None:
            keys = bound.keys.gather(chosen)
            position = keys.arg_max() if largest else keys.arg_min()
        else:
            key = sort_key(typ)
            values = [bound.values[i] for i in chosen.tolist()]
            pick = max if largest else min
            position = pick(range(len(values)), key=lambda i: key(values[i]))
        assert position is not None
        raw = map_value(self.frame[int(chosen[position])].get_column(column), field_id).item()
        return from_bytes(typ, raw)


def _decode_bounds(raw: pl.Series, typ: IcebergType) -> BoundColumn:
    assert isinstance(typ, PrimitiveType), typ
    present = np.asarray(raw.is_not_null().to_numpy(), dtype=bool)
    n = len(raw)
    no_nan = np.zeros(n, dtype=bool)
    kind = typ.kind
    numbers = _fixed_width(raw, kind)
    if numbers is not None and kind in ("float", "double"):
        is_nan = np.asarray(numbers.is_nan().fill_null(False).to_numpy(), dtype=bool)
        return BoundColumn(present, is_nan, _float_keys(numbers.cast(pl.Float64)), [], typ)
    if numbers is not None:
        return BoundColumn(present, no_nan, numbers.cast(pl.Int64), [], typ)
    if kind == "string":
        return BoundColumn(present, no_nan, _strings(raw, typ), [], typ)
    values = [from_bytes(typ, b) for b in raw.to_list()]
    is_nan = np.fromiter((isinstance(v, float) and v != v for v in values), dtype=bool, count=n)
    return BoundColumn(present, is_nan, None, values, typ)


def decoded_bounds(raw: pl.Series, typ: PrimitiveType) -> list[Any]:
    """Bounds as internal values (None where absent): fixed-width numbers and strings decoded as one column,
    the rest one by one."""
    numbers = _fixed_width(raw, typ.kind)
    if numbers is not None:
        return numbers.to_list()
    if typ.kind == "string":
        return _strings(raw, typ).to_list()
    return [from_bytes(typ, b) for b in raw.to_list()]


def _fixed_width(raw: pl.Series, kind: str) -> pl.Series | None:
    """Bounds of a fixed-width kind read as one numeric column; None for other kinds, or when a bound has
    another width (an int's bound under a column promoted to long: from_bytes widens it)."""
    width, dtype = _FIXED.get(kind, (0, None))
    if dtype is None or not raw.bin.size().drop_nulls().eq(width).all():
        return None
    return raw.bin.reinterpret(dtype=dtype, endianness="little")


def _strings(raw: pl.Series, typ: PrimitiveType) -> pl.Series:
    """String bounds decoded as one column; one that is not UTF-8 is corrupt metadata (as from_bytes says)."""
    try:
        return raw.cast(pl.String)
    except pl.exceptions.ComputeError:
        for b in raw.to_list():
            from_bytes(typ, b)  # raises for the first bad one
        raise


_SIGN_FLIP = np.int64(0x7FFFFFFFFFFFFFFF)
_NAN_KEY = np.int64(0x7FF8000000000000)


def _float_keys(values: pl.Series) -> pl.Series:
    """Integer keys in Java's Double.compare order: -0.0 < 0.0, every NaN equal and above +Infinity."""
    bits = values.fill_null(0.0).to_numpy().astype(np.float64).view(np.int64)
    keys = np.where(bits < 0, bits ^ _SIGN_FLIP, bits)
    keys = np.where(values.is_nan().fill_null(False).to_numpy(), _NAN_KEY, keys)
    return pl.Series(keys).set(values.is_null(), None)


def _vector_key(typ: PrimitiveType, literal: Any) -> Any:
    """The key of a literal comparable with BoundColumn.keys."""
    if typ.kind in ("float", "double"):
        if literal != literal:
            return int(_NAN_KEY)
        bits = int(np.array([float(literal)], dtype=np.float64).view(np.int64)[0])
        return bits ^ int(_SIGN_FLIP) if bits < 0 else bits
    return literal

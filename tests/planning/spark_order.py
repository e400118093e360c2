"""Spark's order of rows by a sort order, written from Spark's rules (SortOrder, SQLOrderingUtil), for tests
that check the planner's order against the rows themselves: nulls first or last by the null order, NaN above
every number (below it descending), -0.0 equal to 0.0, strings by code point; days(ts) is whole days since the
epoch, as Iceberg's transform."""

from __future__ import annotations

import datetime as dt
import functools
import math
from dataclasses import dataclass
from typing import Any

_EPOCH = dt.datetime(1970, 1, 1)


@dataclass(frozen=True)
class SortColumn:
    name: str
    transform: str  # identity or day
    descending: bool
    nulls_first: bool

    def value(self, row: dict[str, Any]) -> Any:
        """The sort field's value of a row read from a data file."""
        value = row[self.name]
        if value is None or self.transform == "identity":
            return value
        assert self.transform == "day", self.transform
        if isinstance(value, dt.datetime):
            return (value.replace(tzinfo=None) - _EPOCH) // dt.timedelta(days=1)
        return (value - _EPOCH.date()).days


@functools.total_ordering
class _Reversed:
    def __init__(self, key: Any) -> None:
        self.key = key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and self.key == other.key

    def __lt__(self, other: _Reversed) -> bool:
        return bool(other.key < self.key)

    def __repr__(self) -> str:
        return f"desc({self.key!r})"


def spark_key(values: tuple[Any, ...], columns: list[SortColumn]) -> tuple[Any, ...]:
    """A key that orders tuples of the columns' values as Spark's ORDER BY does."""
    out: list[tuple[Any, ...]] = []
    for value, column in zip(values, columns, strict=True):
        if value is None:
            out.append((0,) if column.nulls_first else (2,))
            continue
        if isinstance(value, float):
            inner: Any = (1, 0.0) if math.isnan(value) else (0, value + 0.0)
        else:
            inner = (0, value)
        out.append((1, _Reversed(inner) if column.descending else inner))
    return tuple(out)

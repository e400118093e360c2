"""Spark's order of values, as Python keys: how Spark SQL orders the non-null values of one type (ORDER BY,
MIN and MAX, the partitions of a key-grouped scan), for the planner (grouping and sort-order tasks) and the
client (row-group statistics, partial aggregates) alike. It needs the standard library only.

* numbers by value, -0.0 equal to 0.0, NaN above every number and equal to itself (SQLOrderingUtil);
* strings by code point (Spark compares UTF-8 bytes, which is code point order), binary by unsigned bytes;
* UUIDs as their text, lowercase hex (Iceberg's Spark type for a uuid is a string): as unsigned 128-bit numbers;
* booleans false first; decimals, dates, times and timestamps by value.

Iceberg Java orders two of these otherwise (Double.compare puts -0.0 below 0.0; UUID.compareTo compares
signed halves): that order, which pruning follows, is the metadata's (planner_service/metadata/conversions.py).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["ascending", "greatest", "key", "least"]

_NUMBER, _NAN = 0, 1


def key(value: Any) -> Any:
    """A key of a non-null value: keys of two values of one type compare as Spark compares the values."""
    if isinstance(value, float):
        return (_NAN, 0.0) if math.isnan(value) else (_NUMBER, value + 0.0)  # -0.0 + 0.0 is 0.0
    if isinstance(value, uuid.UUID):
        return value.int
    return value


def ascending(values: Iterable[Any]) -> tuple[Any, ...]:
    """A key of a row of values (one type per position) in Spark's ascending order, nulls first."""
    return tuple((0,) if v is None else (1, key(v)) for v in values)


def least(values: Iterable[Any]) -> Any:
    """The least non-null value in Spark's order (the first of equal ones); None when there is none."""
    return _extreme(values, lambda a, b: a < b)


def greatest(values: Iterable[Any]) -> Any:
    """The greatest non-null value in Spark's order (the first of equal ones): NaN above every number."""
    return _extreme(values, lambda a, b: a > b)


def _extreme(values: Iterable[Any], beats: Callable[[Any, Any], bool]) -> Any:
    best, best_key = None, None
    for value in values:
        if value is None:
            continue
        k = key(value)
        if best is None or beats(k, best_key):
            best, best_key = value, k
    return best

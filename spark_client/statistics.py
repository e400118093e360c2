"""What a row group's column statistics say of a row filter: that no row, every row, or only some rows match.

A filter (REST JSON) is judged with Spark's semantics, the ones the reader applies to the rows (residual.py):
a row is kept only when the filter is TRUE, comparisons with null are NULL, NOT NULL is NULL. Each
predicate gets the set of values it may take on the rows of the group: {TRUE, FALSE, NULL} narrowed by the
column's bounds and null count; AND, OR and NOT combine those sets by Kleene's tables (an over-approximation
where both sides read the same rows, so every answer is sound). Then:
* ROWS_CANNOT_MATCH: TRUE is not possible: the group is skipped, unread;
* ROWS_ALL_MATCH: only TRUE is possible: every row matches, the filter need not be evaluated (nor its
  columns read) and, with no deletes, the group's rows are counted from its metadata;
* ROWS_MIGHT_MATCH: the rows are read and filtered.
This reaches beyond Iceberg's readers, which prune by the inclusive question alone (Iceberg Java's
ParquetMetricsRowGroupFilter; the all-match side is its StrictMetricsEvaluator's, over files). Where some
rows may match, the filter left for them is simplified by what the statistics decide: a predicate TRUE
(or FALSE) of every row becomes that constant, so `day = D AND category = 'x'` over a range within day D
leaves `category = 'x'`, and only `category` is read to evaluate it.

Bounds: `lower` is at most and `upper` at least every non-null value (a truncated Parquet bound is still
one), compared as Python values of the column's Iceberg type. What cannot be judged may be anything:
floating-point comparisons (NaN is not in Parquet's min/max, and Spark orders it above every number),
transform terms, nested columns, a column whose file type differs from the scan's.
"""

from __future__ import annotations

import datetime as dt
import enum
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import value_order
from spark_client.values import to_scalar

__all__ = ["ColumnStats", "Verdict", "judge", "residual"]

_TRUE, _FALSE, _NULL = 1, 2, 4  # the values a predicate may take on a group's rows, as bits
_ANY = _TRUE | _FALSE | _NULL
_ORDERED = ("int", "long", "string", "boolean", "date", "time", "timestamp", "timestamptz", "binary", "uuid")
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class Verdict(enum.Enum):
    ROWS_CANNOT_MATCH = "cannot-match"
    ROWS_ALL_MATCH = "all-match"
    ROWS_MIGHT_MATCH = "might-match"


@dataclass(frozen=True)
class ColumnStats:
    """One column over a group of rows. None: not known. `typ`: the column's Iceberg type (a primitive name)."""

    typ: Any
    num_rows: int
    null_count: int | None
    lower: Any = None
    upper: Any = None

    @classmethod
    def constant(cls, typ: Any, value: Any, num_rows: int) -> ColumnStats:
        """A column whose every row holds `value` (an identity partition's; None: a column the file lacks)."""
        if value is None:
            return cls(typ, num_rows, num_rows)
        return cls(typ, num_rows, 0, value, value)


# term name -> the column's stats over the group, or None when they cannot be known
Stats = Callable[[str], ColumnStats | None]


def judge(expr: Any, stats: Stats) -> Verdict:
    """Whether no row, every row, or some rows of a group make `expr` TRUE (see the module docstring)."""
    return residual(expr, stats)[0]


def residual(expr: Any, stats: Stats) -> tuple[Verdict, Any]:
    """judge()'s verdict, and the filter the group's rows still need: `expr` with the predicates the
    statistics decide replaced by true or false (True for ROWS_ALL_MATCH, False for ROWS_CANNOT_MATCH)."""
    possible, simplified = _visit(expr, stats)
    if not possible & _TRUE:
        return Verdict.ROWS_CANNOT_MATCH, False
    if possible == _TRUE:
        return Verdict.ROWS_ALL_MATCH, True
    return Verdict.ROWS_MIGHT_MATCH, simplified


def _visit(expr: Any, stats: Stats) -> tuple[int, Any]:
    """The values `expr` may take on the group's rows, and `expr` simplified by what is decided."""
    if isinstance(expr, bool):
        return (_TRUE if expr else _FALSE), expr
    kind = expr["type"]
    if kind in ("true", "false"):
        return (_TRUE, True) if kind == "true" else (_FALSE, False)
    if kind == "literal":
        return (_TRUE, True) if expr["value"] else (_FALSE, False)
    if kind in ("and", "or"):
        (left, a), (right, b) = _visit(expr["left"], stats), _visit(expr["right"], stats)
        possible = _combine(left, right, _AND if kind == "and" else _OR)
        absorbing = kind == "or"  # x OR true is true; x AND false is false
        if a is absorbing or b is absorbing:
            return possible, absorbing
        if a is (not absorbing):
            return possible, b
        if b is (not absorbing):
            return possible, a
        return possible, {**expr, "left": a, "right": b}
    if kind == "not":
        child, c = _visit(expr["child"], stats)
        possible = (_FALSE if child & _TRUE else 0) | (_TRUE if child & _FALSE else 0) | (child & _NULL)
        return possible, (not c) if isinstance(c, bool) else {**expr, "child": c}
    term = expr.get("term")
    if isinstance(term, dict) and term.get("type") == "reference":
        term = term["term"]
    if not isinstance(term, str):
        return _ANY, expr  # a transform term
    column = stats(term)
    possible = _ANY if column is None else _predicate(kind, expr, column)
    return possible, True if possible == _TRUE else False if possible == _FALSE else expr


# Kleene's AND and OR on single values
_AND = {
    (_TRUE, _TRUE): _TRUE,
    (_FALSE, _TRUE): _FALSE,
    (_FALSE, _FALSE): _FALSE,
    (_FALSE, _NULL): _FALSE,
    (_TRUE, _NULL): _NULL,
    (_NULL, _NULL): _NULL,
}
_OR = {
    (_TRUE, _TRUE): _TRUE,
    (_FALSE, _TRUE): _TRUE,
    (_FALSE, _FALSE): _FALSE,
    (_FALSE, _NULL): _NULL,
    (_TRUE, _NULL): _TRUE,
    (_NULL, _NULL): _NULL,
}


def _combine(left: int, right: int, table: dict[tuple[int, int], int]) -> int:
    out = 0
    for a in (_TRUE, _FALSE, _NULL):
        for b in (_TRUE, _FALSE, _NULL):
            if left & a and right & b:
                out |= table.get((a, b)) or table[(b, a)]
    return out


def _predicate(kind: str, expr: dict[str, Any], column: ColumnStats) -> int:
    nulls = column.null_count
    all_null = nulls is not None and nulls >= column.num_rows
    some_null = nulls is None or nulls > 0
    if kind in ("is-null", "not-null"):
        is_null = (_TRUE if some_null else 0) | (_FALSE if not all_null else 0)
        return is_null if kind == "is-null" else _swap(is_null)
    if kind in ("is-nan", "not-nan"):  # never null: Spark's isnan of null is false; NaN is not in the bounds
        is_nan = _FALSE if all_null else _TRUE | _FALSE
        return is_nan if kind == "is-nan" else _swap(is_nan)
    if all_null:
        return _NULL  # every other predicate of a null is null
    null = _NULL if some_null else 0
    if column.typ not in _ORDERED and not _is_decimal_or_fixed(column.typ):
        return _TRUE | _FALSE | null  # floating point (NaN), nested types
    lower, upper = _comparable(column.lower), _comparable(column.upper)
    if lower is None or upper is None:
        return _TRUE | _FALSE | null
    try:
        if kind in ("in", "not-in"):
            values = [_literal(v, column.typ) for v in expr["values"]]
            outcome = _in(values, lower, upper)
            return (outcome if kind == "in" else _swap(outcome)) | null
        value = _literal(expr["value"], column.typ)
        if kind in ("starts-with", "not-starts-with"):
            outcome = _starts_with(value, lower, upper)
            return (outcome if kind == "starts-with" else _swap(outcome)) | null
        return _compare(kind, value, lower, upper) | null
    except (TypeError, ValueError, KeyError):  # bounds and literal of unlike kinds, an unknown operation
        return _ANY


def _compare(kind: str, value: Any, lower: Any, upper: Any) -> int:
    """The values `column <kind> value` may take for non-null values within [lower, upper]."""
    if kind in ("eq", "not-eq"):
        outcome = (_TRUE if lower <= value <= upper else 0) | (_FALSE if not lower == upper == value else 0)
        return outcome if kind == "eq" else _swap(outcome)
    if kind == "lt":
        return (_TRUE if lower < value else 0) | (_FALSE if upper >= value else 0)
    if kind == "lt-eq":
        return (_TRUE if lower <= value else 0) | (_FALSE if upper > value else 0)
    if kind == "gt":
        return (_TRUE if upper > value else 0) | (_FALSE if lower <= value else 0)
    if kind == "gt-eq":
        return (_TRUE if upper >= value else 0) | (_FALSE if lower < value else 0)
    raise KeyError(kind)


def _in(values: list[Any], lower: Any, upper: Any) -> int:
    inside = any(lower <= v <= upper for v in values)
    return (_TRUE if inside else 0) | (_FALSE if not (lower == upper and lower in values) else 0)


def _starts_with(prefix: Any, lower: Any, upper: Any) -> int:
    """Every value between two strings that start with a prefix starts with it too."""
    n = len(prefix)
    might = lower[:n] <= prefix <= upper[:n]
    every = lower.startswith(prefix) and upper.startswith(prefix)
    return (_TRUE if might else 0) | (_FALSE if not every else 0)


def _swap(outcome: int) -> int:
    return (_FALSE if outcome & _TRUE else 0) | (_TRUE if outcome & _FALSE else 0) | (outcome & _NULL)


def _is_decimal_or_fixed(typ: Any) -> bool:
    return isinstance(typ, str) and (typ.startswith("decimal(") or typ.startswith("fixed["))


def _literal(value: Any, typ: Any) -> Any:
    if isinstance(value, dict) and value.get("type") == "literal":
        value = value["value"]
    if typ in ("int", "long") and isinstance(value, int) and not isinstance(value, bool):
        return value  # compared as numbers, as Spark widens the column to a wider literal's type
    return _comparable(to_scalar(value, typ).as_py())


def _comparable(value: Any) -> Any:
    """One Python form for a bound and a literal of the same type: temporal values as integers (µs, days),
    the rest keyed in Spark's order (value_order); None for what has no order here."""
    if isinstance(value, dt.datetime):
        delta = value - (_EPOCH_UTC if value.tzinfo is not None else _EPOCH)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, dt.date):
        return value.toordinal()
    if isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    if isinstance(value, float):
        return None
    if isinstance(value, bool | int | str | bytes | Decimal | uuid.UUID):
        return value_order.key(value)
    return None

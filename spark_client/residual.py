"""A task's residual filter (Iceberg REST JSON expression) as a pyarrow.compute expression.

Rows are kept with the semantics Spark gives the same filter, since Spark evaluates a query's filters on
the rows an Iceberg scan returns (the residual only lets a reader skip early). So, unlike Iceberg Java's
row Evaluator:
* SQL three-valued logic: a comparison, in / not-in, starts-with / not-starts-with with a null operand is
  null, NOT null is null, and a row is kept only when the filter is true (Spark drops `x != 1` on null x;
  Iceberg's Evaluator would keep it for not-eq, not-in and not-starts-with).
* is-null / not-null / is-nan / not-nan are never null: is-nan of null is false, as Spark's isnan().
* NaN sorts above every number and equals itself (Spark's SQLOrderingUtil): NaN > 1 and NaN >= 1 are true,
  where IEEE comparisons (pyarrow's) say false; -0.0 = 0.0, as in both.
A filter literal is never NaN (Iceberg refuses one; NaN is tested with is-nan).

Terms are column names, nested with dots ("info.a"), or transforms of a column: identity, void, year,
month, day, hour (floor semantics, Iceberg's spec) and truncate[W] of integers and strings. bucket[N]
needs Iceberg's murmur3 of each value and is refused with UnsupportedResidual.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from spark_client.values import to_scalar

# term name -> (the column's expression, its Iceberg type); raises KeyError for an unknown name
Resolver = Callable[[str], tuple[pc.Expression, Any]]

_COMPARISONS = {"lt": "less", "lt-eq": "less_equal", "gt": "greater", "gt-eq": "greater_equal", "eq": "equal"}
_FLOATS = ("float", "double")
_MAX_OR_CHAIN = 64  # in-lists up to this size become OR-ed equalities (prunable by row-group statistics)
_NULL_BOOL = pa.scalar(None, pa.bool_())
_MICROS_PER_HOUR = 3_600_000_000
_TRUNCATE = re.compile(r"truncate\[(\d+)\]", re.ASCII)


class UnsupportedResidual(ValueError):
    """A residual this reader cannot evaluate (a bucket transform term, a nested type in a predicate)."""


def is_true(expr: Any) -> bool:
    return expr is True or expr == {"type": "true"} or expr == {"type": "literal", "value": True}


def referenced_names(expr: Any) -> set[str]:
    """The column names a REST JSON expression reads."""
    if isinstance(expr, bool) or not isinstance(expr, dict):
        return set()
    if expr["type"] in ("and", "or"):
        return referenced_names(expr["left"]) | referenced_names(expr["right"])
    if expr["type"] == "not":
        return referenced_names(expr["child"])
    if "term" not in expr:
        return set()
    term = expr["term"]
    while isinstance(term, dict):
        term = term["term"]
    return {term}


def to_arrow_expression(expr: Any, resolve: Resolver) -> pc.Expression:
    """The pyarrow expression of a REST JSON expression; `resolve` maps a column name to its expression."""
    if isinstance(expr, bool):
        return pc.scalar(expr)
    kind = expr["type"]
    if kind in ("true", "false"):
        return pc.scalar(kind == "true")
    if kind == "literal":
        return pc.scalar(bool(expr["value"]))
    if kind == "and":
        return to_arrow_expression(expr["left"], resolve) & to_arrow_expression(expr["right"], resolve)
    if kind == "or":
        return to_arrow_expression(expr["left"], resolve) | to_arrow_expression(expr["right"], resolve)
    if kind == "not":
        return ~to_arrow_expression(expr["child"], resolve)
    term, typ = _term(expr["term"], resolve)
    return _predicate(kind, term, typ, expr)


def _term(term: Any, resolve: Resolver) -> tuple[pc.Expression, Any]:
    if isinstance(term, str):
        return resolve(term)
    if term["type"] == "reference":
        return resolve(term["term"])
    if term["type"] == "transform":
        inner, typ = _term(term["term"], resolve)
        return _transform(term["transform"], inner, typ)
    raise UnsupportedResidual(f"Unknown term {term!r}")


def _literal(value: Any, typ: Any) -> pc.Expression:
    if isinstance(value, dict) and value.get("type") == "literal":
        value = value["value"]
    return pc.scalar(to_scalar(value, typ))


def _predicate(kind: str, term: pc.Expression, typ: Any, expr: dict[str, Any]) -> pc.Expression:
    if kind == "is-null":
        return term.is_null()
    if kind == "not-null":
        return term.is_valid()
    if kind in ("is-nan", "not-nan"):
        is_nan = term.is_valid() & pc.is_nan(term)  # false, not null, for a null value (Spark's isnan)
        return is_nan if kind == "is-nan" else ~is_nan
    if not isinstance(typ, str):
        raise UnsupportedResidual(f"Cannot compare the nested type {typ!r}: {expr}")
    if kind in _COMPARISONS:
        return _compare(kind, term, _literal(expr["value"], typ), typ)
    if kind == "not-eq":
        return ~_compare("eq", term, _literal(expr["value"], typ), typ)
    if kind in ("in", "not-in"):
        values = [v["value"] if isinstance(v, dict) else v for v in expr["values"]]
        matched = _in(term, values, typ)
        return matched if kind == "in" else ~matched
    if kind in ("starts-with", "not-starts-with"):
        prefix = expr["value"]["value"] if isinstance(expr["value"], dict) else expr["value"]
        starts = pc.starts_with(term, pattern=prefix)
        return starts if kind == "starts-with" else ~starts
    raise UnsupportedResidual(f"Unknown predicate {kind!r}: {expr}")


def _compare(kind: str, term: pc.Expression, literal: pc.Expression, typ: Any) -> pc.Expression:
    compared = getattr(pc, _COMPARISONS[kind])(term, literal)
    if typ in _FLOATS and kind in ("gt", "gt-eq"):
        return compared | pc.is_nan(term)  # Spark: NaN is above every number; null stays null
    return compared


def _in(term: pc.Expression, values: list[Any], typ: Any) -> pc.Expression:
    """x IN (...) with SQL nulls: null for a null x (pyarrow's is_in says false)."""
    if not values:
        return pc.if_else(term.is_valid(), pc.scalar(False), _NULL_BOOL)
    if len(values) <= _MAX_OR_CHAIN:
        out = _compare("eq", term, _literal(values[0], typ), typ)
        for v in values[1:]:
            out = out | _compare("eq", term, _literal(v, typ), typ)
        return out
    value_set = pa.array([to_scalar(v, typ).as_py() for v in values], to_scalar(values[0], typ).type)
    return pc.if_else(term.is_valid(), pc.is_in(term, value_set=value_set), _NULL_BOOL)


def _transform(name: str, term: pc.Expression, typ: Any) -> tuple[pc.Expression, Any]:
    """A partition transform applied to a column, and its result type (Iceberg spec, "Partition Transforms")."""
    if name == "identity":
        return term, typ
    if name == "void":
        return pc.scalar(pa.scalar(None, pa.int32())), "int"
    if name in ("year", "month") and typ in ("date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"):
        years = pc.subtract(pc.year(term), pc.scalar(1970))
        if name == "year":
            return years, "int"
        return pc.add(pc.multiply(years, pc.scalar(12)), pc.subtract(pc.month(term), pc.scalar(1))), "int"
    if name == "day" and typ in ("date", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"):
        return term.cast(pa.date32()), "date"  # Arrow floors timestamps to their date, as the spec does
    if name == "hour" and typ in ("timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"):
        micros = term.cast(pa.timestamp("us", tz="UTC" if "tz" in typ else None)).cast(pa.int64())
        return _floor_div(micros, _MICROS_PER_HOUR).cast(pa.int32()), "int"
    if m := _TRUNCATE.fullmatch(name):
        width = int(m[1])
        if typ in ("int", "long"):
            return pc.multiply(_floor_div(term, width), pc.scalar(width)), typ
        if typ == "string":
            return pc.utf8_slice_codeunits(term, 0, width), typ
    raise UnsupportedResidual(f"Cannot evaluate the transform {name} of a {typ} column in a residual")


def _floor_div(value: pc.Expression, divisor: int) -> pc.Expression:
    """value // divisor rounding towards negative infinity (Arrow's divide truncates towards zero)."""
    quotient = pc.divide(value, pc.scalar(divisor))
    below = pc.less(value, pc.multiply(quotient, pc.scalar(divisor)))
    return pc.subtract(quotient, below.cast(pa.int64()))

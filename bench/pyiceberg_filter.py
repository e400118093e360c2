"""A REST JSON expression as a PyIceberg expression, for `scan(row_filter=...)` in the benchmark.

Covers the forms the benchmark's scenarios use and their near relatives: and/or/not, true/false,
comparisons, in/not-in and the unary predicates on plain column references. Values stay as JSON gives
them (PyIceberg converts a string to a timestamp or date when it binds the predicate to the column, as
Iceberg Java does).
"""

from __future__ import annotations

from typing import Any

from pyiceberg import expressions as ex

_COMPARISONS: dict[str, Any] = {
    "lt": ex.LessThan,
    "lt-eq": ex.LessThanOrEqual,
    "gt": ex.GreaterThan,
    "gt-eq": ex.GreaterThanOrEqual,
    "eq": ex.EqualTo,
    "not-eq": ex.NotEqualTo,
    "starts-with": ex.StartsWith,
    "not-starts-with": ex.NotStartsWith,
}
_SETS: dict[str, Any] = {"in": ex.In, "not-in": ex.NotIn}
_UNARY: dict[str, Any] = {"is-null": ex.IsNull, "not-null": ex.NotNull, "is-nan": ex.IsNaN, "not-nan": ex.NotNaN}


def pyiceberg_expression(node: Any) -> ex.BooleanExpression:
    """The PyIceberg expression of a REST JSON expression; ValueError for a form it does not cover."""
    if isinstance(node, bool):
        return ex.AlwaysTrue() if node else ex.AlwaysFalse()
    kind = node.get("type") if isinstance(node, dict) else None
    if kind in ("true", "false"):
        return ex.AlwaysTrue() if kind == "true" else ex.AlwaysFalse()
    if kind == "and":
        return ex.And(pyiceberg_expression(node["left"]), pyiceberg_expression(node["right"]))
    if kind == "or":
        return ex.Or(pyiceberg_expression(node["left"]), pyiceberg_expression(node["right"]))
    if kind == "not":
        return ex.Not(pyiceberg_expression(node["child"]))
    if kind in _COMPARISONS:
        return _COMPARISONS[kind](_column(node["term"]), node["value"])
    if kind in _SETS:
        return _SETS[kind](_column(node["term"]), set(node["values"]))
    if kind in _UNARY:
        return _UNARY[kind](_column(node["term"]))
    raise ValueError(f"no PyIceberg form for the expression {node!r}")


def _column(term: Any) -> str:
    if isinstance(term, str):
        return term
    if isinstance(term, dict) and term.get("type") == "reference":
        return str(term["term"])
    raise ValueError(f"only column references are covered, not {term!r}")

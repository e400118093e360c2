"""Spark's pushed data source filters (pyspark.sql.datasource, Spark 4.1+) as planner row filters.

`to_rest_expression` turns one filter into a REST JSON expression (the Iceberg REST spec's form, which POST /plan
takes as `filter`), or None when it has no faithful translation; `conjunction` ANDs expressions, also with
a user's filter string (rendered with `to_filter_string`, since /plan takes one filter, either form).

Values are written as JSON the service converts by the column's type, as Iceberg's ExpressionParser
does: a date as 'YYYY-MM-DD', a timestamp as epoch microseconds, a decimal as its text, binary (and fixed,
which Spark holds as binary) as upper-case hex, the REST spec's form.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

__all__ = ["conjunction", "to_filter_string", "to_rest_expression"]

_COMPARISONS = {
    "EqualTo": "eq",
    "GreaterThan": "gt",
    "GreaterThanOrEqual": "gt-eq",
    "LessThan": "lt",
    "LessThanOrEqual": "lt-eq",
}
_UNARY = {"IsNull": "is-null", "IsNotNull": "not-null"}
_SQL_OPERATORS = {"eq": "=", "not-eq": "!=", "lt": "<", "lt-eq": "<=", "gt": ">", "gt-eq": ">="}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class _Untranslatable(Exception):
    pass


def to_rest_expression(spark_filter: Any) -> dict[str, Any] | None:
    """The REST JSON expression of a pyspark.sql.datasource Filter, or None if it cannot be pushed."""
    try:
        return _translate(spark_filter)
    except _Untranslatable:
        return None


def _translate(f: Any) -> dict[str, Any]:
    kind = type(f).__name__
    if kind in _COMPARISONS:
        return {"type": _COMPARISONS[kind], "term": _term(f.attribute), "value": _value(f.value)}
    if kind == "In":
        values = [_value(v) for v in f.value]  # a NULL in the list: not pushed (it can only make rows NULL)
        if not values:
            raise _Untranslatable
        return {"type": "in", "term": _term(f.attribute), "values": values}
    if kind in _UNARY:
        return {"type": _UNARY[kind], "term": _term(f.attribute)}
    if kind == "StringStartsWith":
        if not isinstance(f.value, str):
            raise _Untranslatable
        return {"type": "starts-with", "term": _term(f.attribute), "value": f.value}
    if kind == "Not":
        return {"type": "not", "child": _translate(f.child)}
    raise _Untranslatable  # EqualNullSafe, StringEndsWith, StringContains, ...


def _term(attribute: Sequence[str]) -> str:
    parts = tuple(attribute)
    if not parts or any(not isinstance(p, str) or "." in p for p in parts):
        raise _Untranslatable  # a dot inside a name would read as nesting
    return ".".join(parts)


def _value(value: Any) -> Any:
    if value is None:
        raise _Untranslatable
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Untranslatable  # no JSON for NaN or infinities
        return value
    if isinstance(value, datetime):  # before date: a datetime is a date
        if value.tzinfo is None:  # TIMESTAMP_NTZ: the wall clock, counted as if it were UTC
            value = value.replace(tzinfo=UTC)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise _Untranslatable
        return str(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex().upper()  # the REST spec's binary and fixed values (Java: SingleValueParser)
    raise _Untranslatable  # arrays, structs, variants


def conjunction(
    expressions: Sequence[dict[str, Any]], user_filter: str | Mapping[str, Any] | bool | None
) -> str | Mapping[str, Any] | bool | None:
    """The single /plan filter: the user's filter AND every expression (None when there is nothing)."""
    if not expressions:
        return user_filter
    if isinstance(user_filter, str):
        return " AND ".join([f"({user_filter})", *(to_filter_string(e) for e in expressions)])
    parts: list[Any] = [user_filter, *expressions] if user_filter is not None else list(expressions)
    combined: Mapping[str, Any] = parts[0]
    for part in parts[1:]:
        combined = {"type": "and", "left": combined, "right": part}
    return combined


def to_filter_string(expression: dict[str, Any]) -> str:
    """A filter string for an expression made by to_rest_expression (the same meaning, for the same table)."""
    kind = expression["type"]
    if kind == "and":
        return f"({to_filter_string(expression['left'])} AND {to_filter_string(expression['right'])})"
    if kind == "not":
        return f"NOT ({to_filter_string(expression['child'])})"
    term = ".".join(f"`{part.replace('`', '``')}`" for part in expression["term"].split("."))
    if kind in _SQL_OPERATORS:
        return f"{term} {_SQL_OPERATORS[kind]} {_sql_literal(expression['value'])}"
    if kind == "in":
        return f"{term} IN ({', '.join(_sql_literal(v) for v in expression['values'])})"
    if kind == "is-null":
        return f"{term} IS NULL"
    if kind == "not-null":
        return f"{term} IS NOT NULL"
    if kind == "starts-with":
        escaped = expression["value"].replace("!", "!!").replace("%", "!%").replace("_", "!_")
        return f"{term} LIKE {_sql_literal(escaped + '%')} ESCAPE '!'"
    raise ValueError(f"not an expression of to_rest_expression: {kind}")


def _sql_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise ValueError(f"no filter-string literal for {value!r}")

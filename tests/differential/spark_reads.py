"""Which differential requests are also read through Spark + Iceberg, and how (the Java side reads them).

Standard library only (java_side.py imports it in the pyspark venv). Two reads, each compared with ours:

* grouping: a request whose number is GROUPING_EVERY-th (not an incremental one) is also read by Spark with
  Iceberg's preserve-data-grouping (`spark.sql.iceberg.planning.preserve-data-grouping`) and v2 bucketing:
  the grouping key and file ranges of each of its input partitions, against our grouping="partition" plan.
  The read has the request's snapshot and split options, and neither filter nor select: Spark adds filters
  of its own (`isnotnull` of a compared column) that prune files Iceberg's expression keeps, and projects
  the filter's columns too, so only the unfiltered read means the same scan on both sides (the filter's
  pruning is compared by the plans already).
* rows: up to ROWS_PER_HISTORY requests a history that Java planned, of the current snapshot, a snapshot id
  or a ref, whose select is top-level columns, and whose filter spark_filter() can write as Spark SQL with
  the same meaning, are read by Spark (`spark.read.format("iceberg")`, the filter as SQL) and by our client's
  reader over our plan; both as multisets of rows.

Histories never set a sort order, so grouping="sort-order" is not compared.
"""

from __future__ import annotations

import re
from typing import Any

GROUPING_EVERY = 4  # request numbers 1, 5, 9, ...
ROWS_PER_HISTORY = 3
SPARK_OPTIONS = {  # the request's split options (table property names) as Spark read options
    "read.split.target-size": "split-size",
    "read.split.planning-lookback": "lookback",
    "read.split.open-file-cost": "file-open-cost",
}
_SQL_COMPARISONS = {"eq": "=", "not-eq": "!=", "lt": "<", "lt-eq": "<=", "gt": ">", "gt-eq": ">="}
_INT_RANGE = {"int": 2**31, "long": 2**63}
_FLOAT_MAX = 3.4e38
_OFFSET = re.compile(r"[+-]\d\d:\d\d$")
_DECIMAL = re.compile(r"decimal\((\d+), (\d+)\)")


class Untranslatable(ValueError):
    """A filter whose Spark SQL would not mean what Iceberg's expression means (or has no Spark SQL)."""


def wants_grouping(number: int, request: dict[str, Any]) -> bool:
    return number % GROUPING_EVERY == 1 and request["snapshot"]["kind"] != "appends"


def rows_read(request: dict[str, Any], schema: list[dict[str, Any]]) -> dict[str, Any] | None:
    """{"filter": Spark SQL or None, "select": names or None} when the request's rows can be compared (the
    filter's columns looked up in `schema`, the table's current fields), else None."""
    if request["snapshot"]["kind"] not in ("current", "id", "ref"):
        return None
    select = request.get("select")
    top = {f["name"] for f in schema}
    if select is not None and not set(select) <= top:
        return None
    try:
        sql = None if request["filter"] is None else spark_filter(request["filter"], _types(schema))
    except Untranslatable:
        return None
    return {"filter": sql, "select": select}


def _types(fields: list[dict[str, Any]], prefix: str = "") -> dict[str, Any]:
    """Each field by its dotted name in lower case (Spark resolves names ignoring case), through structs."""
    out: dict[str, Any] = {}
    for f in fields:
        full = prefix + f["name"]
        out[full.lower()] = f["type"]
        if isinstance(f["type"], dict) and f["type"].get("type") == "struct":
            out |= _types(f["type"]["fields"], full + ".")
    return out


def spark_filter(node: Any, types: dict[str, Any]) -> str:
    """An Iceberg JSON filter as Spark SQL of the same rows (SQL's null rules are what both readers apply)."""
    if node is True or node is False:
        return "TRUE" if node else "FALSE"
    kind = node["type"]
    if kind in ("and", "or"):
        return f"({spark_filter(node['left'], types)} {kind.upper()} {spark_filter(node['right'], types)})"
    if kind == "not":
        return f"(NOT {spark_filter(node['child'], types)})"
    term = node["term"]
    if not isinstance(term, str) or term.lower() not in types or not isinstance(types[term.lower()], str):
        raise Untranslatable(f"term {term!r}")
    type_ = types[term.lower()]
    column = ".".join(f"`{part}`" for part in term.split("."))
    if kind in ("is-null", "not-null"):
        return f"({column} IS {'NOT ' if kind == 'not-null' else ''}NULL)"
    if kind in ("is-nan", "not-nan"):
        if type_ not in ("float", "double"):
            raise Untranslatable("a NaN test of a column that is not floating point")
        return f"({'NOT ' if kind == 'not-nan' else ''}isnan({column}))"
    if kind in ("starts-with", "not-starts-with"):
        if type_ != "string":
            raise Untranslatable("starts-with of a column that is not a string")
        return f"({'NOT ' if kind == 'not-starts-with' else ''}startswith({column}, {_literal(node['value'], type_)}))"
    if kind in ("in", "not-in"):
        values = ", ".join(_literal(v, type_) for v in node["values"])
        return f"({column} {'NOT ' if kind == 'not-in' else ''}IN ({values}))"
    if kind in _SQL_COMPARISONS:
        return f"({column} {_SQL_COMPARISONS[kind]} {_literal(node['value'], type_)})"
    raise Untranslatable(kind)


def _literal(value: Any, type_: str) -> str:
    """A literal of exactly the column's type, when the JSON value is one Iceberg converts without loss."""
    if type_ in _INT_RANGE:
        bound = _INT_RANGE[type_]
        if type(value) is not int or not -bound <= value < bound:
            raise Untranslatable(f"{value!r} for {type_}")
        return f"CAST({value} AS {'INT' if type_ == 'int' else 'BIGINT'})"
    if type_ in ("float", "double"):
        if type(value) not in (int, float) or abs(value) > (_FLOAT_MAX if type_ == "float" else 1.7e308):
            raise Untranslatable(f"{value!r} for {type_}")
        return f"CAST('{float(value)!r}' AS {type_.upper()})"
    if type_ == "boolean":
        if type(value) is not bool:
            raise Untranslatable(f"{value!r} for boolean")
        return "TRUE" if value else "FALSE"
    if not isinstance(value, str):
        raise Untranslatable(f"{value!r} for {type_}")
    decimal = _DECIMAL.fullmatch(type_)
    if decimal is not None:
        scale = int(decimal[2])
        if not re.fullmatch(r"-?\d+" + (rf"\.\d{{{scale}}}" if scale else ""), value):
            raise Untranslatable(f"{value!r} for {type_}")
        return f"CAST('{value}' AS DECIMAL({decimal[1]}, {scale}))"
    if type_ == "date" and re.fullmatch(r"\d{4}-\d\d-\d\d", value):
        return f"DATE '{value}'"
    if type_ == "timestamp" and not _OFFSET.search(value):
        return f"CAST('{value.replace('T', ' ')}' AS TIMESTAMP_NTZ)"
    if type_ == "timestamptz" and _OFFSET.search(value):
        return f"CAST('{value.replace('T', ' ')}' AS TIMESTAMP)"
    if type_ == "string":
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if type_ == "binary" and re.fullmatch(r"([0-9A-F]{2})+", value):
        return f"X'{value}'"
    raise Untranslatable(f"{value!r} for {type_}")

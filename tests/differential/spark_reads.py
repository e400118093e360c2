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

* restricted rows: a rows read of a request that carries a principal's read restriction ("restriction", in
  the REST spec's `ReadRestrictions` form; fuzz.py attaches one, chosen by choose_restriction, to the rows
  reads whose snapshot has the current schema) is also read by Spark SQL as restricted_query() writes it:
  the row filter as WHERE on the raw values, each mask written as the spec defines its action, the request's
  filter on the masked values. Ours: the client's reader over our plan under the same restriction.

Histories never set a sort order, so grouping="sort-order" is not compared.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Callable, Collection, Iterable
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
    """{"filter": Spark SQL or None, "select": names or None, "restricted": restricted_query()'s SQL or None}
    when the request's rows can be compared (the filter's columns looked up in `schema`, the table's current
    fields), else None. "restricted" is None without a "restriction" in the request, or when its SQL would
    not mean what the restriction means."""
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
    return {"filter": sql, "select": select, "restricted": _restricted(request, schema)}


def _restricted(request: dict[str, Any], schema: list[dict[str, Any]]) -> str | None:
    """restricted_query() of the request's restriction, if it has one and its SQL means the same."""
    if request.get("restriction") is None:
        return None
    try:
        return restricted_query(request["restriction"], request, schema)
    except Untranslatable:
        return None


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


# --- restricted reads -------------------------------------------------------------------------------------

RESTRICTED_VIEW = "restricted_source"  # java_side.py's temporary view of the request's snapshot
ROW_FILTER_DRAWS = 8  # random filters tried for a row filter that spark_filter can write
# the kinds of the types the histories write (histories.PRIMITIVES)
_EVERY_KIND = (
    "boolean",
    "int",
    "long",
    "float",
    "double",
    "decimal",
    "date",
    "timestamp",
    "timestamptz",
    "string",
    "binary",
)
# Which of the spec's actions each of those types takes, by kind: read_restrictions.actions decides, and
# test_spark_reads holds this table to it. Left out: sha-256-query-local (its salt is random per query: no SQL
# gives its values) and apply-expression (our reader does not apply it).
MASK_KINDS: dict[str, tuple[str, ...]] = {
    "mask-alphanum": ("string",),
    "show-first-4": ("string",),
    "show-last-4": ("string",),
    "mask-to-default": _EVERY_KIND,
    "replace-with-null": _EVERY_KIND,  # of a nullable column only
    "truncate-to-year": ("date", "timestamp", "timestamptz"),
    "truncate-to-month": ("date", "timestamp", "timestamptz"),
    "sha-256-global": ("string", "int", "long", "binary"),
}
# Iceberg's primitive types as Spark SQL writes them (sql.py's too, on the Java side)
SPARK_TYPES: dict[str, str] = {
    "boolean": "BOOLEAN",
    "int": "INT",
    "long": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "date": "DATE",
    "timestamp": "TIMESTAMP_NTZ",
    "timestamptz": "TIMESTAMP",
    "string": "STRING",
    "binary": "BINARY",
}
# mask-to-default's value of each kind as the spec lists it (read_restrictions.actions._DEFAULTS), as SQL
_DEFAULTS = {
    "boolean": "FALSE",
    "int": "999999999",
    "long": "999999999",
    "float": "0.0",
    "double": "0.0",
    "decimal": "0",  # (cast to the column's precision and scale)
    "date": "DATE '9999-12-31'",
    "timestamp": "TIMESTAMP_NTZ '9999-12-31 00:00:00'",
    "timestamptz": "TIMESTAMP '9999-12-31 00:00:00+00:00'",
    "string": "'XXXXXXXX'",
    "binary": "X''",
}
# what mask-alphanum writes as x: all but ASCII digits and ( ) , . - @, as a Java regex (the hyphen escaped)
# in a Spark SQL string literal (whose parser reads the doubled backslash as one)
_ALPHANUM_X = r"'[^0-9(),.\\-@]'"
_HASHED_BYTES = {"int": 4, "long": 8}  # sha-256-global's canonical form of a number: little-endian bytes


def choose_restriction(
    rng: random.Random, schema: list[dict[str, Any]], row_filters: Iterable[Any], unmaskable: Collection[int] = ()
) -> dict[str, Any]:
    """A principal's read restriction for a rows read of a table whose current fields are `schema`, in the
    REST spec's form: mostly a row filter, the first of (up to ROW_FILTER_DRAWS of) `row_filters` that
    spark_filter can write, and 1-3 masks, each on a top-level primitive column (but those `unmaskable`)
    with one of the actions mask_actions() gives it: the action drawn first, then a column it applies to, so
    that the few actions of few columns (the string masks: the histories' strings are mostly nested) are
    drawn as often as the rest."""
    out: dict[str, Any] = {}
    if rng.random() < 0.85:
        types = _types(schema)
        drawn = itertools.islice(row_filters, ROW_FILTER_DRAWS)
        row_filter = next((f for f in drawn if _writable(f, types)), None)
        if row_filter is not None:
            out["required-row-filter"] = row_filter
    maskable = {f["id"]: mask_actions(f) for f in schema if f["id"] not in unmaskable and mask_actions(f)}
    masks = []
    for _ in range(rng.randint(1, 3)):
        if not maskable:
            break
        action = rng.choice(sorted({a for actions in maskable.values() for a in actions}))
        field_id = rng.choice([i for i, actions in maskable.items() if action in actions])
        masks.append({"action": action, "field-id": field_id})
        del maskable[field_id]  # (a column at most once)
    if masks:
        out["required-column-projections"] = masks
    return out


def mask_actions(field: dict[str, Any]) -> list[str]:
    """The actions a top-level field of a table's schema may be masked with in a restricted read: those
    MASK_KINDS gives its type (replace-with-null only when it may hold nulls); none for a nested type."""
    if not isinstance(field["type"], str):
        return []
    kind = _kind(field["type"])
    required = bool(field.get("required"))
    return [a for a, kinds in MASK_KINDS.items() if kind in kinds and not (a == "replace-with-null" and required)]


def _writable(node: Any, types: dict[str, Any]) -> bool:
    try:
        spark_filter(node, types)
    except Untranslatable:
        return False
    return True


def restricted_query(restriction: dict[str, Any], request: dict[str, Any], schema: list[dict[str, Any]]) -> str:
    """Spark SQL of the rows a principal under `restriction` (the spec's form) reads with `request`, from
    RESTRICTED_VIEW (the request's snapshot, whose fields are `schema`): the row filter as WHERE on the raw
    values, every column as it is or masked under its own name, then the request's filter on those values,
    then its select. Untranslatable for a filter spark_filter cannot write or a mask mask_actions() lacks."""
    types = _types(schema)
    actions = {p["field-id"]: p["action"] for p in restriction.get("required-column-projections") or ()}
    masked = f"SELECT {', '.join(_projected(f, actions.get(f['id'])) for f in schema)} FROM {RESTRICTED_VIEW}"
    if restriction.get("required-row-filter") is not None:
        masked += f" WHERE {spark_filter(restriction['required-row-filter'], types)}"
    select = request.get("select")
    query = f"SELECT {'*' if select is None else ', '.join(map(_quoted, select))} FROM ({masked}) AS masked"
    if request["filter"] is not None:
        query += f" WHERE {spark_filter(request['filter'], types)}"
    return query


def _projected(field: dict[str, Any], action: str | None) -> str:
    """A column of the masked SELECT: as it is, or masked under its own name."""
    column = _quoted(field["name"])
    if action is None:
        return column
    if action not in mask_actions(field):
        raise Untranslatable(f"{action} of column {field['name']!r} ({field['type']})")
    return f"{mask_sql(action, column, field['type'])} AS {column}"


def mask_sql(action: str, column: str, type_: str) -> str:
    """Spark SQL of `column` (an SQL expression) of Iceberg type `type_` with `action` applied as the spec
    defines it: of the column's own Spark type, a null staying null."""
    return _MASKS[action](column, type_)


def _alphanum(column: str, type_: str = "string") -> str:
    """mask-alphanum: ASCII digits become n, ( ) , . - @ stay, every other code point becomes x (Java's regex
    character classes match code points)."""
    return f"regexp_replace(regexp_replace({column}, {_ALPHANUM_X}, 'x'), '[0-9]', 'n')"


def _show_first_4(column: str, type_: str) -> str:
    """show-first-4: the first 4 code points (Spark's substring counts characters), the rest as mask-alphanum;
    a string of 4 or fewer unchanged."""
    rest = _alphanum(f"substring({column}, 5)")
    return f"CASE WHEN char_length({column}) <= 4 THEN {column} ELSE concat(substring({column}, 1, 4), {rest}) END"


def _show_last_4(column: str, type_: str) -> str:
    """show-last-4: the last 4 code points, the ones before them as mask-alphanum; 4 or fewer unchanged."""
    rest = _alphanum(f"substring({column}, 1, char_length({column}) - 4)")
    return f"CASE WHEN char_length({column}) <= 4 THEN {column} ELSE concat({rest}, substring({column}, -4)) END"


def _to_default(column: str, type_: str) -> str:
    """mask-to-default: the spec's value of the type for every value but null."""
    return f"CASE WHEN {column} IS NULL THEN NULL ELSE CAST({_DEFAULTS[_kind(type_)]} AS {_spark_type(type_)}) END"


def _to_null(column: str, type_: str) -> str:
    """replace-with-null."""
    return f"CAST(NULL AS {_spark_type(type_)})"


def _truncated(unit: str) -> Callable[[str, str], str]:
    """truncate-to-year / -month: a date by trunc; a timestamp by date_trunc, which works in the session's
    zone (java_side.py checks it is UTC, the spec's zone for the tz types) and answers a TIMESTAMP even for a
    TIMESTAMP_NTZ: cast back, wall clock unchanged in UTC."""

    def truncate(column: str, type_: str) -> str:
        if type_ == "date":
            return f"trunc({column}, '{unit}')"
        return f"CAST(date_trunc('{unit}', {column}) AS {_spark_type(type_)})"

    return truncate


def _sha256_global(column: str, type_: str) -> str:
    """sha-256-global: SHA-256 of the spec's bytes of the value. A string's UTF-8 (the digest as 64 lower-case
    hex digits: Spark's sha2); binary's own bytes (the digest's 32 bytes); an int's 4 or a long's 8 bytes,
    little-endian (the digest's first 4 or 8 bytes read as a little-endian signed int or long)."""
    if type_ == "string":
        return f"sha2({column}, 256)"
    if type_ == "binary":
        return f"unhex(sha2({column}, 256))"
    size = _HASHED_BYTES[type_]
    # hex() of an INT or BIGINT: the two's complement of its 64 bits (no leading zeros), most significant first
    big_endian = f"substr(lpad(hex({column}), 16, '0'), {17 - 2 * size}, {2 * size})"
    digest = f"sha2(unhex({_byte_swapped(big_endian, size)}), 256)"
    number = _byte_swapped(f"substr({digest}, 1, {2 * size})", size)  # most significant first
    if size == 8:
        return f"CAST(conv({number}, 16, -10) AS BIGINT)"  # (a negative to_base: read as signed)
    return f"CAST(shiftright(shiftleft(CAST(conv({number}, 16, 10) AS BIGINT), 32), 32) AS INT)"  # (sign-extended)


def _byte_swapped(hex_digits: str, size: int) -> str:
    """SQL of `size` bytes written as hex digits, in the other byte order."""
    groups = "(..)" * size
    return f"regexp_replace({hex_digits}, '{groups}', '{''.join(f'${i}' for i in range(size, 0, -1))}')"


_MASKS: dict[str, Callable[[str, str], str]] = {
    "mask-alphanum": _alphanum,
    "show-first-4": _show_first_4,
    "show-last-4": _show_last_4,
    "mask-to-default": _to_default,
    "replace-with-null": _to_null,
    "truncate-to-year": _truncated("YEAR"),
    "truncate-to-month": _truncated("MM"),
    "sha-256-global": _sha256_global,
}


def _kind(type_: str) -> str:
    return "decimal" if _DECIMAL.fullmatch(type_) else type_


def _spark_type(type_: str) -> str:
    decimal = _DECIMAL.fullmatch(type_)
    return SPARK_TYPES[type_] if decimal is None else f"DECIMAL({decimal[1]}, {decimal[2]})"


def _quoted(name: str) -> str:
    return f"`{name}`"

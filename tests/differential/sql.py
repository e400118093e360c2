"""How each history op (histories.py) is written as Spark SQL against Iceberg 1.10.2.

Standard library only (java_side.py imports it in the pyspark venv). statements(op, table) gives the SQL
statements of one op in order; equality deletes and the ops that name snapshots are completed by
java_side.py, which alone knows the table's snapshots.
"""

from __future__ import annotations

from typing import Any

from histories import decimal_params, kind
from spark_reads import SPARK_TYPES

CATALOG = "cat"
NAMESPACE = "db"  # reference_tables.Writer's namespace (it writes the equality deletes)
_MODES = ("write.delete.mode", "write.update.mode", "write.merge.mode")


def ident(table: str, branch: str | None = None) -> str:
    return f"{CATALOG}.{NAMESPACE}.{table}" + (f".branch_{branch}" if branch else "")


def name(dotted: str) -> str:
    """A column name, each part quoted: `s`.`f1`."""
    return ".".join(f"`{part}`" for part in dotted.split("."))


def spark_type(type_: Any) -> str:
    k = kind(type_)
    if k == "decimal":
        return "DECIMAL({}, {})".format(*decimal_params(type_))
    if k == "struct":
        return "STRUCT<" + ", ".join(f"`{f['name']}`: {spark_type(f['type'])}" for f in type_["fields"]) + ">"
    if k == "list":
        return f"ARRAY<{spark_type(type_['element'])}>"
    if k == "map":
        return f"MAP<{spark_type(type_['key'])}, {spark_type(type_['value'])}>"
    return str(SPARK_TYPES[k])


def quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def literal(value: Any, type_: Any) -> str:
    """A SQL expression of exactly `type_` for a JSON value (see histories.py for the value forms)."""
    k = kind(type_)
    if value is None:
        return f"CAST(NULL AS {spark_type(type_)})"
    if k == "struct":
        inner = ", ".join(f"{quote(f['name'])}, {literal(value.get(f['name']), f['type'])}" for f in type_["fields"])
        return f"named_struct({inner})"
    if k == "list":
        items = ", ".join(literal(v, type_["element"]) for v in value)
        return f"CAST(array({items}) AS {spark_type(type_)})"
    if k == "map":
        items = ", ".join(f"{literal(key, type_['key'])}, {literal(v, type_['value'])}" for key, v in value.items())
        return f"CAST(map({items}) AS {spark_type(type_)})"
    if k == "boolean":
        return "TRUE" if value else "FALSE"
    if k == "binary":
        return f"X'{value}'"
    if k in ("timestamp", "timestamptz", "date", "string"):
        text = quote(str(value).replace("T", " ") if k != "string" else str(value))
        return f"CAST({text} AS {spark_type(type_)})"
    return f"CAST({quote(str(value))} AS {spark_type(type_)})"


def _values(op: dict[str, Any]) -> str:
    """SELECT * FROM VALUES (...) AS v(columns): the op's rows, typed by its columns."""
    columns = op["columns"]
    rows = ", ".join(
        "(" + ", ".join(literal(v, c["type"]) for v, c in zip(row, columns, strict=True)) + ")" for row in op["rows"]
    )
    names = ", ".join(name(c["name"]) for c in columns)
    hint = f"/*+ REPARTITION({op['files']}) */ " if op.get("files", 1) > 1 else ""
    return f"SELECT {hint}* FROM VALUES {rows} AS v({names})"


def condition(where: dict[str, Any] | None) -> str:
    if where is None:
        return "TRUE"
    column = name(where["column"])
    if where["op"] == "is_null":
        return f"{column} IS NULL"
    return f"{column} {where['op']} {literal(where['value'], where['type'])}"


def partition_term(field: dict[str, Any]) -> str:
    source = name(field["source"])
    transform, param = field["transform"], field["param"]
    if transform == "identity":
        return source
    if param is not None:
        return f"{transform}({param}, {source})"
    return f"{transform}({source})"


def _column_def(column: dict[str, Any]) -> str:
    return f"{name(column['name'])} {spark_type(column['type'])}"


def statements(op: dict[str, Any], table: str) -> list[str]:
    """The SQL of one op (ops that need the table's snapshots, and equality deletes, are java_side's)."""
    t = ident(table)
    kind_ = op["op"]
    if kind_ == "create":
        columns = ", ".join(_column_def(c) for c in op["columns"])
        props = {"format-version": str(op["format_version"]), **op["properties"]}
        tblprops = ", ".join(f"{quote(k)}={quote(v)}" for k, v in props.items())
        partitioned = ", ".join(partition_term(p) for p in op["partition"])
        partitioning = f" PARTITIONED BY ({partitioned})" if partitioned else ""
        return [f"CREATE TABLE {t} ({columns}) USING iceberg{partitioning} TBLPROPERTIES ({tblprops})"]
    if kind_ in ("insert", "branch_write"):
        names = ", ".join(name(c["name"]) for c in op["columns"])
        return [f"INSERT INTO {ident(table, op.get('branch'))} ({names}) {_values(op)}"]
    if kind_ == "add_column":
        full = f"{op['parent']}.{op['name']}" if op["parent"] else op["name"]
        position = " FIRST" if op["position"] == "first" else ""
        return [f"ALTER TABLE {t} ADD COLUMN {name(full)} {spark_type(op['type'])}{position}"]
    if kind_ == "drop_column":
        return [f"ALTER TABLE {t} DROP COLUMN {name(op['name'])}"]
    if kind_ == "rename_column":
        return [f"ALTER TABLE {t} RENAME COLUMN {name(op['name'])} TO `{op['to']}`"]
    if kind_ == "widen":
        return [f"ALTER TABLE {t} ALTER COLUMN {name(op['name'])} TYPE {spark_type(op['to'])}"]
    if kind_ == "move_first":
        return [f"ALTER TABLE {t} ALTER COLUMN {name(op['name'])} FIRST"]
    if kind_ == "add_partition_field":
        return [f"ALTER TABLE {t} ADD PARTITION FIELD {partition_term(op['field'])}"]
    if kind_ == "drop_partition_field":
        return [f"ALTER TABLE {t} DROP PARTITION FIELD {partition_term(op['field'])}"]
    if kind_ == "replace_partition_field":
        return [
            f"ALTER TABLE {t} REPLACE PARTITION FIELD {partition_term(op['field'])} WITH {partition_term(op['to'])}"
        ]
    if kind_ in ("delete", "update", "merge"):
        modes = ", ".join(f"{quote(p)}={quote(op['mode'])}" for p in _MODES)
        out = [f"ALTER TABLE {t} SET TBLPROPERTIES ({modes})"]
        if kind_ == "delete":
            out.append(f"DELETE FROM {ident(table, op.get('branch'))} WHERE {condition(op['where'])}")
        elif kind_ == "update":
            column, type_, value = op["set"]
            out.append(f"UPDATE {t} SET {name(column)} = {literal(value, type_)} WHERE {condition(op['where'])}")
        else:
            out.append(
                f"MERGE INTO {t} USING ({_values(op)}) s ON {t}.`id` = s.`id` "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
            )
        return out
    if kind_ == "overwrite":
        mode = "dynamic" if op["dynamic"] else "static"
        return [f"SET spark.sql.sources.partitionOverwriteMode={mode}", f"INSERT OVERWRITE {t} {_values(op)}"]
    if kind_ == "rewrite_data_files":
        where = "" if op["where"] is None else f", where => {quote(condition(op['where']))}"
        options = f"map('min-input-files', '{op['min_input_files']}', 'rewrite-all', 'true')"
        return [
            f"CALL {CATALOG}.system.rewrite_data_files(table => '{NAMESPACE}.{table}', options => {options}{where})"
        ]
    if kind_ == "rewrite_position_deletes":
        return [
            f"CALL {CATALOG}.system.rewrite_position_delete_files(table => '{NAMESPACE}.{table}', "
            "options => map('rewrite-all', 'true'))"
        ]
    if kind_ == "create_tag":
        return [f"ALTER TABLE {t} CREATE TAG `{op['name']}`"]
    if kind_ == "drop_tag":
        return [f"ALTER TABLE {t} DROP TAG `{op['name']}`"]
    if kind_ == "upgrade":
        return [f"ALTER TABLE {t} SET TBLPROPERTIES ('format-version'='{op['format_version']}')"]
    raise ValueError(f"{kind_} is not plain SQL (java_side applies it)")

"""Seeded random table histories: the ops a differential run applies with Spark + Iceberg 1.10.2.

Plain data and the standard library only: java_side.py imports it inside the pyspark venv, the tests in the
project's venv. A history is a list of plain-JSON ops, the first one {"op": "create", ...}; sql.py says how
each is applied. HistoryGenerator(seed) proposes one op at a time from a model of the table (its columns,
partition fields, refs, format version); the caller applies it and reports back with applied(op, ok), so
that an op Spark rejects leaves the model as it was (it is recorded as skipped, not a crash).

Types are written as Iceberg names: "boolean", "int", "long", "float", "double", "decimal(P, S)", "date",
"timestamp" (without zone: Spark's TIMESTAMP_NTZ), "timestamptz" (Spark's TIMESTAMP), "string", "binary";
nested types as {"type": "struct", "fields": [{"name", "type"}]}, {"type": "list", "element": T} and
{"type": "map", "key": T, "value": T}. Values are JSON: numbers, strings (decimals as their text, dates and
times in ISO form, binary as hex, NaN and the infinities as "NaN", "Infinity", "-Infinity"), lists, objects.
"""

from __future__ import annotations

import copy
import random
import re
from typing import Any

PRIMITIVES = (
    "boolean",
    "int",
    "long",
    "float",
    "double",
    "decimal(9, 2)",
    "decimal(5, 1)",
    "date",
    "timestamp",
    "timestamptz",
    "string",
    "binary",
)
_WORDS = ("apple", "apricot", "banana", "band", "bandit", "cherry", "chess", "date", "é-acute", "zz", "")
_DECIMAL = re.compile(r"decimal\((\d+), (\d+)\)")

# transforms a partition field may apply to a source type (Iceberg's Transform.canTransform)
_TRANSFORMS: dict[str, tuple[str, ...]] = {
    "boolean": ("identity",),
    "int": ("identity", "bucket", "truncate"),
    "long": ("identity", "bucket", "truncate"),
    "decimal": ("identity", "bucket", "truncate"),
    "date": ("identity", "bucket", "years", "months", "days"),
    "timestamp": ("identity", "bucket", "years", "months", "days", "hours"),
    "timestamptz": ("identity", "bucket", "years", "months", "days", "hours"),
    "string": ("identity", "bucket", "truncate"),
    "binary": ("bucket", "truncate"),
}
WIDENINGS = {"int": "long", "float": "double"}  # plus a decimal's precision (widen_decimal)


def kind(type_: Any) -> str:
    """A type's kind: the primitive's name without parameters ("decimal"), or "struct", "list", "map"."""
    if isinstance(type_, dict):
        return str(type_["type"])
    return "decimal" if type_.startswith("decimal") else str(type_)


def decimal_params(type_: str) -> tuple[int, int]:
    match = _DECIMAL.fullmatch(type_)
    assert match is not None, type_
    return int(match[1]), int(match[2])


def random_value(rng: random.Random, type_: Any, null_rate: float = 0.15) -> Any:
    """A value of `type_` from a small domain, so that filters over the same domain hit and miss files."""
    if null_rate and rng.random() < null_rate:
        return None
    k = kind(type_)
    if k == "struct":
        return {f["name"]: random_value(rng, f["type"]) for f in type_["fields"]}
    if k == "list":
        return [random_value(rng, type_["element"], 0.1) for _ in range(rng.randrange(3))]
    if k == "map":
        keys = {random_value(rng, type_["key"], 0) for _ in range(rng.randrange(3))}
        return {key: random_value(rng, type_["value"], 0.1) for key in sorted(keys)}
    return random_literal(rng, type_)


def random_literal(rng: random.Random, type_: str) -> Any:
    """A non-null primitive value in the domain the histories write (and a little beyond it)."""
    k = kind(type_)
    if k == "boolean":
        return rng.random() < 0.5
    if k == "int":
        return rng.randint(-3, 30)
    if k == "long":
        return rng.choice((rng.randint(-3, 60), rng.randint(-3, 60), 2**40 + rng.randint(0, 3)))
    if k in ("float", "double"):
        special = ("NaN", "Infinity", "-Infinity", -0.0, 0.0)
        return rng.choice(special) if rng.random() < 0.12 else round(rng.uniform(-10, 100), 2)
    if k == "decimal":
        precision, scale = decimal_params(type_)
        bound = 10 ** min(precision, 4) - 1
        unscaled = rng.randint(-bound // 10, bound)
        return f"{unscaled / 10**scale:.{scale}f}" if scale else str(unscaled)
    if k == "date":
        year = rng.choice((1969, 2024, 2024, 2025))
        return f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if k in ("timestamp", "timestamptz"):
        day = rng.choice(("1969-12-31", "2024-01-01", "2024-01-02", "2024-03-15"))
        micros = rng.choice(("", "", f".{rng.randrange(10**6):06d}"))
        return f"{day}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}{micros}"
    if k == "string":
        word = rng.choice(_WORDS)
        return word + rng.choice(("", "", f"-{rng.randrange(20)}", "-long-enough-to-be-truncated-in-bounds"))
    if k == "binary":
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4))).hex().upper()
    raise ValueError(f"no values for {type_!r}")


def _random_type(rng: random.Random, nested: bool) -> Any:
    if nested and rng.random() < 0.25:
        shape = rng.choice(("struct", "list", "map"))
        if shape == "struct":
            fields = [{"name": f"f{i}", "type": rng.choice(PRIMITIVES)} for i in range(rng.randint(1, 3))]
            return {"type": "struct", "fields": fields}
        if shape == "list":
            return {"type": "list", "element": rng.choice(("int", "string", "double"))}
        return {"type": "map", "key": "string", "value": rng.choice(("int", "string"))}
    return rng.choice(PRIMITIVES)


def primitive_columns(columns: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(dotted name, type) of every primitive field reachable through structs (Iceberg filters on these)."""
    out: list[tuple[str, str]] = []
    for c in columns:
        if isinstance(c["type"], str):
            out.append((c["name"], c["type"]))
        elif kind(c["type"]) == "struct":
            out += [(f"{c['name']}.{n}", t) for n, t in primitive_columns(c["type"]["fields"])]
    return out


class HistoryGenerator:
    """Proposes a valid next op for the table as it stands; `applied` tells it what Spark did with it."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.columns: list[dict[str, Any]] = []
        self.partition: list[dict[str, Any]] = []  # {"transform", "param", "source"}
        self.format_version = 2
        self.branches: list[str] = []
        self.tags: list[str] = []
        self._names = 0
        self._proposed = 0

    # --- the model --------------------------------------------------------------------------------------

    def applied(self, op: dict[str, Any], ok: bool) -> None:
        """Update the model with an op that Spark applied (ok) or rejected (then nothing changes)."""
        if not ok:
            return
        name = op["op"]
        if name == "create":
            self.columns = copy.deepcopy(op["columns"])
            self.partition = copy.deepcopy(op["partition"])
            self.format_version = op["format_version"]
        elif name == "add_column":
            parent = self._struct(op["parent"])
            parent.insert(len(parent) if op["position"] is None else 0, {"name": op["name"], "type": op["type"]})
        elif name == "drop_column":
            self.columns = [c for c in self.columns if c["name"] != op["name"]]
        elif name == "rename_column":
            column = next(c for c in self.columns if c["name"] == op["name"])
            column["name"] = op["to"]
            for p in self.partition:
                if p["source"] == op["name"]:
                    p["source"] = op["to"]
        elif name == "widen":
            next(c for c in self.columns if c["name"] == op["name"])["type"] = op["to"]
        elif name == "move_first":
            column = next(c for c in self.columns if c["name"] == op["name"])
            self.columns = [column, *(c for c in self.columns if c is not column)]
        elif name == "add_partition_field":
            self.partition.append(op["field"])
        elif name == "drop_partition_field":
            self.partition = [p for p in self.partition if p != op["field"]]
        elif name == "replace_partition_field":
            self.partition = [op["to"] if p == op["field"] else p for p in self.partition]
        elif name == "upgrade":
            self.format_version = op["format_version"]
        elif name == "create_branch":
            self.branches.append(op["name"])
        elif name == "create_tag":
            self.tags.append(op["name"])
        elif name == "drop_tag":
            self.tags.remove(op["name"])

    def _struct(self, parent: str | None) -> list[dict[str, Any]]:
        if parent is None:
            return self.columns
        column = next(c for c in self.columns if c["name"] == parent)
        fields: list[dict[str, Any]] = column["type"]["fields"]
        return fields

    def _fresh(self, prefix: str) -> str:
        self._names += 1
        return f"{prefix}{self._names}"

    # --- proposing ops ----------------------------------------------------------------------------------

    def first_op(self) -> dict[str, Any]:
        rng = self.rng
        columns = [{"name": "id", "type": "long"}]
        for _ in range(rng.randint(2, 6)):
            name = self._fresh(rng.choice(("c", "c", "Mixed")))
            columns.append({"name": name, "type": _random_type(rng, nested=True)})
        self.columns = columns
        partition = [self._partition_field() for _ in range(rng.choice((0, 0, 1, 1, 2)))]
        partition = [p for i, p in enumerate(partition) if p is not None and p not in partition[:i]]
        properties = {"write.distribution-mode": "none"}
        if rng.random() < 0.3:  # several row groups (stripes) per tiny file: split offsets to split at
            properties |= {
                "write.parquet.row-group-size-bytes": "64",
                "write.parquet.row-group-check-min-record-count": "1",
                "write.parquet.row-group-check-max-record-count": "2",
            }
        if rng.random() < 0.2:
            properties["write.format.default"] = rng.choice(("avro", "orc"))
        return {
            "op": "create",
            "format_version": rng.choice((1, 2, 2, 3)),
            "columns": columns,
            "partition": partition,
            "properties": properties,
        }

    def _partition_field(self) -> dict[str, Any] | None:
        rng = self.rng
        sources = [(n, t) for n, t in primitive_columns(self.columns) if kind(t) in _TRANSFORMS]
        if not sources:
            return None
        source, type_ = rng.choice(sources)
        transform = rng.choice(_TRANSFORMS[kind(type_)])
        param = {"bucket": rng.choice((1, 2, 4, 16)), "truncate": rng.choice((1, 2, 3, 10))}.get(transform)
        return {"transform": transform, "param": param, "source": source}

    def next_op(self) -> dict[str, Any]:
        """A random op that is valid for the model (Spark may still refuse it)."""
        rng = self.rng
        choices: list[tuple[float, str]] = [
            (6, "insert"),
            (1.5, "add_column"),
            (1, "drop_column"),
            (1, "rename_column"),
            (0.7, "widen"),
            (0.5, "move_first"),
            (1, "add_partition_field"),
            (0.8, "drop_partition_field"),
            (0.5, "replace_partition_field"),
            (2, "delete"),
            (1.5, "update"),
            (1, "merge"),
            (6, "equality_delete"),  # (only while unpartitioned and v2+: proposed often to be applied at all)
            (1, "overwrite"),
            (0.7, "rewrite_data_files"),
            (0.5, "rewrite_position_deletes"),
            (0.5, "expire_snapshots"),
            (0.6, "create_branch"),
            (0.6, "create_tag"),
            (0.2, "drop_tag"),
            (1.2, "branch_write"),
            (0.3, "upgrade"),
        ]
        weights = [w for w, _ in choices]
        self._proposed += 1
        if self._proposed <= 2:  # data first: most ops act on rows
            return {"op": "insert", **self._insert()}
        while True:
            name = rng.choices([n for _, n in choices], weights)[0]
            op = getattr(self, f"_{name}")()
            if op is not None:
                return {"op": name, **op}

    def _rows(self, count: int) -> dict[str, Any]:
        columns = copy.deepcopy(self.columns)
        rows = [[random_value(self.rng, c["type"], 0 if c["name"] == "id" else 0.15) for c in columns]]
        rows += [[random_value(self.rng, c["type"], 0.15) for c in columns] for _ in range(count - 1)]
        return {"columns": columns, "rows": rows}

    def _insert(self) -> dict[str, Any]:
        return {**self._rows(self.rng.randint(1, 8)), "files": self.rng.randint(1, 3)}

    def _branch_write(self) -> dict[str, Any] | None:
        if not self.branches:
            return None
        return {**self._rows(self.rng.randint(1, 4)), "files": 1, "branch": self.rng.choice(self.branches)}

    def _top_level(self, primitive_only: bool = False) -> list[dict[str, Any]]:
        return [c for c in self.columns if c["name"] != "id" and (not primitive_only or isinstance(c["type"], str))]

    def _add_column(self) -> dict[str, Any]:
        rng = self.rng
        structs = [c["name"] for c in self.columns if kind(c["type"]) == "struct"]
        parent = rng.choice(structs) if structs and rng.random() < 0.3 else None
        type_ = rng.choice(PRIMITIVES) if parent else _random_type(rng, nested=True)
        position = "first" if rng.random() < 0.15 else None
        return {"parent": parent, "name": self._fresh("a"), "type": type_, "position": position}

    def _drop_column(self) -> dict[str, Any] | None:
        candidates = self._top_level()
        return {"name": self.rng.choice(candidates)["name"]} if len(candidates) > 1 else None

    def _rename_column(self) -> dict[str, Any] | None:
        candidates = self._top_level()
        if not candidates:
            return None
        return {"name": self.rng.choice(candidates)["name"], "to": self._fresh("r")}

    def _widen(self) -> dict[str, Any] | None:
        candidates = [c for c in self._top_level(True) if c["type"] in WIDENINGS or kind(c["type"]) == "decimal"]
        if not candidates:
            return None
        column = self.rng.choice(candidates)
        if column["type"] in WIDENINGS:
            return {"name": column["name"], "to": WIDENINGS[column["type"]]}
        precision, scale = decimal_params(column["type"])
        return {"name": column["name"], "to": f"decimal({min(38, precision + self.rng.randint(1, 8))}, {scale})"}

    def _move_first(self) -> dict[str, Any] | None:
        candidates = self._top_level()
        return {"name": self.rng.choice(candidates)["name"]} if candidates else None

    def _add_partition_field(self) -> dict[str, Any] | None:
        field = self._partition_field()
        return None if field is None or field in self.partition else {"field": field}

    def _drop_partition_field(self) -> dict[str, Any] | None:
        return {"field": self.rng.choice(self.partition)} if self.partition else None

    def _replace_partition_field(self) -> dict[str, Any] | None:
        field = self._partition_field()
        if not self.partition or field is None or field in self.partition:
            return None
        return {"field": self.rng.choice(self.partition), "to": field}

    def _condition(self) -> dict[str, Any] | None:
        """A row condition over a top-level primitive column, for DELETE, UPDATE and MERGE."""
        rng = self.rng
        candidates = [c for c in self.columns if isinstance(c["type"], str) and c["type"] != "binary"]
        column = rng.choice(candidates)
        op = rng.choice(("=", "<", ">", "<=", "is_null"))
        if op == "is_null" or kind(column["type"]) == "boolean":
            return {"column": column["name"], "type": column["type"], "op": "is_null"}
        return {
            "column": column["name"],
            "type": column["type"],
            "op": op,
            "value": random_literal(rng, column["type"]),
        }

    def _mode(self) -> str:
        return "merge-on-read" if self.format_version >= 2 and self.rng.random() < 0.7 else "copy-on-write"

    def _delete(self) -> dict[str, Any] | None:
        branch = self.rng.choice(self.branches) if self.branches and self.rng.random() < 0.2 else None
        return {"where": self._condition(), "mode": self._mode(), "branch": branch}

    def _update(self) -> dict[str, Any] | None:
        targets = self._top_level(primitive_only=True)
        if not targets:
            return None
        column = self.rng.choice(targets)
        value = random_value(self.rng, column["type"], 0.2)
        return {"where": self._condition(), "mode": self._mode(), "set": [column["name"], column["type"], value]}

    def _merge(self) -> dict[str, Any]:
        return {**self._rows(self.rng.randint(1, 4)), "mode": self._mode()}

    def _equality_delete(self) -> dict[str, Any] | None:
        """Equality deletes (Iceberg's own writer; Spark cannot write them) by a string or int column,
        scoped to the whole table: only while the spec is unpartitioned."""
        if self.format_version < 2 or self.partition:
            return None
        candidates = [c for c in self.columns if c["type"] in ("string", "int")]
        if not candidates:
            return None
        column = self.rng.choice(candidates)
        values = sorted({random_literal(self.rng, column["type"]) for _ in range(self.rng.randint(1, 3))})
        return {"column": column["name"], "values": values}

    def _overwrite(self) -> dict[str, Any]:
        return {**self._rows(self.rng.randint(1, 5)), "files": 1, "dynamic": self.rng.random() < 0.5}

    def _rewrite_data_files(self) -> dict[str, Any]:
        return {
            "min_input_files": self.rng.choice((1, 2)),
            "where": self._condition() if self.rng.random() < 0.3 else None,
        }

    def _rewrite_position_deletes(self) -> dict[str, Any] | None:
        return {} if self.format_version >= 2 else None

    def _expire_snapshots(self) -> dict[str, Any]:
        return {"retain_last": self.rng.randint(1, 3)}

    def _create_branch(self) -> dict[str, Any]:
        return {"name": self._fresh("b"), "as_of": "log:1" if self.rng.random() < 0.3 else None}

    def _create_tag(self) -> dict[str, Any]:
        return {"name": self._fresh("t")}

    def _drop_tag(self) -> dict[str, Any] | None:
        return {"name": self.rng.choice(self.tags)} if self.tags else None

    def _upgrade(self) -> dict[str, Any] | None:
        return {"format_version": self.format_version + 1} if self.format_version < 3 else None


def history_length(rng: random.Random, size: str) -> int:
    """How many ops after the create: a few for the suite's short tier, more for the long runs."""
    return {"short": rng.randint(4, 9), "long": rng.randint(6, 16)}[size]

"""Seeded random scan requests over a history's final table (its metadata.json, read as plain JSON).

A request is a conformance case as tests/conformance/generate.py's new_scan reads it (snapshot, options,
filter, case_sensitive, with_schema) plus "select". Snapshot values stay symbolic ("log:N", "ref:NAME",
see tests/conformance/cases.py) so that a request still means something after shrinking drops ops; the Java
side resolves them, or calls the request invalid for that history.

Filters follow a grammar over the schema of the snapshot asked for (the current one for branches and
incremental scans): every comparison on every primitive type, null and NaN tests, in/not-in, starts-with,
and/or/not, nested struct fields, transform terms, names in another case when the scan ignores case; now and
then a mistake Java refuses (a NaN test on a string, an unknown column) to compare the errors too. A filter
on a binary column is parsed by Java with the schema ("with_schema", as the conformance cases do), and then
only compares columns of _SCHEMA_SAFE types.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from tests.differential.histories import kind, random_literal

SPLIT_SIZE = "read.split.target-size"
LOOKBACK = "read.split.planning-lookback"
OPEN_FILE_COST = "read.split.open-file-cost"
SPLIT_SIZES = (300, 700, 1024, 2000, 4096, 16384, 65536, 1024 * 1024, 128 * 1024 * 1024)
OPEN_FILE_COSTS = (0, 1, 100, 4096, 4 * 1024 * 1024)
_COMPARISONS = ("eq", "not-eq", "lt", "lt-eq", "gt", "gt-eq")
# Java's ExpressionParser given the schema (binary literals need it) types every literal: dates, times,
# floats and decimals come back from a residual's JSON in another form than the schema-less parse writes
_SCHEMA_SAFE = ("binary", "string", "int", "long", "boolean", "double")


class TableShape:
    """What requests are drawn from: a table's snapshot log, refs, schemas and partition sources, from its
    metadata.json."""

    def __init__(self, metadata_location: str) -> None:
        meta = json.loads(Path(metadata_location).read_text())
        self.log: list[int] = [entry["snapshot-id"] for entry in meta.get("snapshot-log", [])]
        self.refs: dict[str, str] = {name: ref["type"] for name, ref in meta.get("refs", {}).items()}
        self.schemas: dict[int, list[dict[str, Any]]] = {s["schema-id"]: s["fields"] for s in meta["schemas"]}
        self.current_schema_id: int = meta["current-schema-id"]
        self.snapshot_schema: dict[int, int] = {
            s["snapshot-id"]: s.get("schema-id", self.current_schema_id) for s in meta.get("snapshots", [])
        }
        self.ref_schema: dict[str, int] = {
            name: self.snapshot_schema.get(ref["snapshot-id"], self.current_schema_id)
            for name, ref in meta.get("refs", {}).items()
        }
        self.partition_sources: set[int] = {  # the field ids any partition spec's fields are taken from
            f["source-id"] for spec in meta.get("partition-specs", []) for f in spec["fields"]
        }


def primitives(fields: list[dict[str, Any]], prefix: str = "") -> list[tuple[str, str]]:
    """(dotted name, Iceberg type) of every primitive field of an Iceberg schema reachable through structs."""
    out: list[tuple[str, str]] = []
    for f in fields:
        full = prefix + f["name"]
        if isinstance(f["type"], str):
            out.append((full, f["type"]))
        elif f["type"]["type"] == "struct":
            out += primitives(f["type"]["fields"], full + ".")
    return out


def top_level_names(fields: list[dict[str, Any]]) -> list[str]:
    return [f["name"] for f in fields]


class RequestGenerator:
    def __init__(self, seed: int | str, shape: TableShape) -> None:
        self.rng = random.Random(seed)
        self.shape = shape

    def request(self, number: int) -> dict[str, Any]:
        rng = self.rng
        snapshot, schema_id = self._snapshot()
        fields = self.shape.schemas[schema_id]
        columns = primitives(fields)
        case_sensitive = rng.random() < 0.8
        depth = rng.choice((0, 1, 1, 2, 3))
        filter_ = self._filter(columns, case_sensitive, depth) if rng.random() < 0.85 else None
        if _mentions_binary(filter_, columns):  # parsed with the schema: only types whose JSON it keeps as is
            filter_ = self._filter([c for c in columns if kind(c[1]) in _SCHEMA_SAFE], case_sensitive, depth)
        options: dict[str, str] = {}
        if rng.random() < 0.6:
            options[SPLIT_SIZE] = str(rng.choice(SPLIT_SIZES))
        if rng.random() < 0.4:
            options[LOOKBACK] = str(rng.randint(1, 10))
        if rng.random() < 0.4:
            options[OPEN_FILE_COST] = str(rng.choice(OPEN_FILE_COSTS))
        select = None
        if rng.random() < 0.3:
            names = top_level_names(fields) + [name for name, _ in columns if "." in name]
            select = sorted(rng.sample(names, rng.randint(1, min(3, len(names)))))
            if rng.random() < 0.05:  # a name the schema lacks (Java ignores it)
                select.append("no_such_column")
        return {
            "id": f"request-{number}",
            "snapshot": snapshot,
            "options": options,
            "filter": filter_,
            "case_sensitive": case_sensitive,
            "with_schema": _mentions_binary(filter_, columns),
            "select": select,
        }

    def _snapshot(self) -> tuple[dict[str, Any], int]:
        """A snapshot choice and the schema its filter is drawn from."""
        rng, shape = self.rng, self.shape
        current = shape.current_schema_id
        n = len(shape.log)
        roll = rng.random()
        if n == 0 or roll < 0.4:
            return {"kind": "current"}, current
        index = rng.randrange(n)
        schema = shape.snapshot_schema.get(shape.log[index], current)
        if roll < 0.55:
            return {"kind": "id", "value": f"log:{index + 1}"}, schema
        if roll < 0.65:
            suffix = rng.choice(("", "+", "-")) if index == 0 else rng.choice(("", "+"))
            return {"kind": "as_of", "value": f"log:{index + 1}{suffix}"}, schema
        if roll < 0.8 and shape.refs:
            ref = rng.choice(sorted(shape.refs))
            is_tag = shape.refs[ref] == "tag"
            return {"kind": "ref", "value": ref}, shape.ref_schema.get(ref, current) if is_tag else current
        start = f"log:{index + 1}"
        ends: list[Any] = [None, None] + [f"log:{i + 1}" for i in range(index, n)]
        ends += [f"ref:{r}" for r in shape.refs]
        return {"kind": "appends", "start": start, "end": rng.choice(ends)}, current

    # --- filters ----------------------------------------------------------------------------------------

    def row_filter(self, fields: list[dict[str, Any]]) -> Any:
        """A filter over a schema's `fields` as a request's is drawn, its names as the schema writes them (a
        read restriction's row filter, which binds case-sensitively: spark_reads.choose_restriction)."""
        return self._filter(primitives(fields), True, self.rng.choice((0, 1, 1, 2)))

    def _filter(self, columns: list[tuple[str, str]], case_sensitive: bool, depth: int) -> Any:
        rng = self.rng
        if depth == 0 or rng.random() < 0.3:
            return self._predicate(columns, case_sensitive)
        shape = rng.choice(("and", "and", "or", "or", "not"))
        if shape == "not":
            return {"type": "not", "child": self._filter(columns, case_sensitive, depth - 1)}
        return {
            "type": shape,
            "left": self._filter(columns, case_sensitive, depth - 1),
            "right": self._filter(columns, case_sensitive, depth - 1),
        }

    def _predicate(self, columns: list[tuple[str, str]], case_sensitive: bool) -> Any:
        rng = self.rng
        if not columns or rng.random() < 0.03:
            return rng.choice((True, False))
        if rng.random() < 0.02:
            return {"type": "eq", "term": "no_such_column", "value": 1}
        name, type_ = rng.choice(columns)
        k = kind(type_)
        term: Any = name
        if not case_sensitive and rng.random() < 0.5:
            term = name.upper() if rng.random() < 0.5 else name.swapcase()
        ops = [*_COMPARISONS, "in", "not-in", "is-null", "not-null"]
        if k in ("float", "double"):
            ops += ["is-nan", "not-nan"] * 2
        if k == "string":
            ops += ["starts-with", "not-starts-with"] * 2
        if rng.random() < 0.02:  # a predicate Java refuses for this type
            ops = ["is-nan"] if k not in ("float", "double") else ["starts-with"]
        op = rng.choice(ops)
        if op in ("is-null", "not-null", "is-nan", "not-nan"):
            return {"type": op, "term": term}
        transformed = self._transform_term(term, k) if op in _COMPARISONS and rng.random() < 0.12 else None
        if transformed is not None:
            return {"type": op, "term": transformed[0], "value": transformed[1]}
        if op in ("in", "not-in"):
            return {"type": op, "term": term, "values": [self._literal(type_) for _ in range(rng.randint(1, 4))]}
        if op in ("starts-with", "not-starts-with"):
            value = self._literal("string") if k == "string" else "1"
            return {"type": op, "term": term, "value": value[: rng.randint(0, len(value))]}
        return {"type": op, "term": term, "value": self._literal(type_)}

    def _transform_term(self, term: str, k: str) -> tuple[Any, Any] | None:
        """A transform term over the column (what a partition field applies) and a value of its result."""
        rng = self.rng
        if k in ("date", "timestamp", "timestamptz"):
            unit = rng.choice(("year", "month", "day") + (("hour",) if k != "date" else ()))
            value: Any = rng.randint(-2, 700) if unit != "day" else rng.choice(("2024-01-02", "1969-12-31", 19724))
            return {"type": "transform", "transform": unit, "term": term}, value
        if k in ("int", "long", "string", "decimal") and rng.random() < 0.5:
            n = rng.choice((2, 4, 16))
            return {"type": "transform", "transform": f"bucket[{n}]", "term": term}, rng.randrange(n)
        if k in ("int", "long", "string"):
            width = rng.choice((1, 2, 3, 10))
            value = self._literal("string" if k == "string" else "int")
            return {"type": "transform", "transform": f"truncate[{width}]", "term": term}, value
        return None

    def _literal(self, type_: str) -> Any:
        """A JSON literal as ExpressionParser reads it for `type_` (now and then one of another type)."""
        rng = self.rng
        k = kind(type_)
        value = random_literal(rng, type_)
        if k in ("float", "double"):
            return value if isinstance(value, float) else rng.choice((1e300, -1e300, 0.5))
        if k == "decimal" and rng.random() < 0.2:
            return float(value)  # a JSON number for a decimal: Java's conversion decides
        if k == "timestamptz":
            return value + rng.choice(("+00:00", "+00:00", "+00:00", "-05:30", ""))
        if k == "timestamp" and rng.random() < 0.1:
            return value + "+00:00"  # a zoned literal for a column without zone
        if k in ("int", "long") and rng.random() < 0.05:
            return rng.choice((2**40, -(2**35), "7"))
        return value


def _mentions_binary(node: Any, columns: list[tuple[str, str]]) -> bool:
    """Whether a filter compares a binary column (its hex literals need the schema to parse in Java)."""
    binary = {name.lower() for name, type_ in columns if kind(type_) == "binary"}
    text = json.dumps(node).lower()
    return any(f'"{name}"' in text for name in binary)

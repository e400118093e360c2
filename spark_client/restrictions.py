"""A principal's read restrictions as a plan carries them (its `read-restrictions`, in the form of Iceberg's
REST spec: `required-row-filter`, an expression over the plan's column names, and
`required-column-projections`, actions by field id), and the column masks the reader applies.

The reader (reader.py) enforces them in each range of each file, in this order:
1. the required row filter on the file's own values: a row where it is false or null is dropped (the spec:
   it is evaluated before masks). Statistics may skip a range or spare its evaluation, as for any filter,
   but it is never replaced by a residual: a filter the reader cannot evaluate fails the read;
2. position and equality deletes, on the file's own values too;
3. each masked column, or field of a struct, replaced by its action's result under its own name
   (read_restrictions.applied; sha-256-query-local with the query's salt);
4. the scan's own filter, on the masked values: a filter on a masked column matches masked values only, so
   it cannot probe the hidden ones; it, too, is never replaced by a residual.
The service masks the identity-partition values of masked columns in a restricted plan (and nulls other
transforms' values of them), so the reader never takes a masked column's value from the partition: it
reads the file's column and masks it itself. An action the reader does not know or cannot apply to the
column's type (the spec's `apply-expression`, say), or a mask inside a list or a map, fails the read:
nothing is ever passed through unmasked.

The salt of sha-256-query-local is one per query: the driver makes it (query_salt) and every task payload
carries it (SALT_KEY, hex), so that equal values hash equally across the query's tasks, and differently in
another query. read_restrictions is imported only for a restricted plan: an executor that reads none needs
nothing it did not need before.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import pyarrow as pa

from spark_client.residual import is_true
from spark_client.schema import field_id, fields_by_id

__all__ = [
    "PLAN_KEY",
    "SALT_KEY",
    "Mask",
    "ReadRestrictions",
    "RestrictionError",
    "non_null_field_ids",
    "query_salt",
]

PLAN_KEY = "read-restrictions"  # the plan's key (absent: the principal's reads are not restricted)
SALT_KEY = "query-salt"  # a task payload's key: the query's salt for sha-256-query-local, in hex


class RestrictionError(ValueError):
    """Read restrictions this reader cannot enforce as the spec asks: the read fails, returning nothing."""


@dataclass(frozen=True)
class Mask:
    """One column projection bound to the plan's schema: the field's id, dotted name, type (its JSON form)
    and required flag, and the spec's action."""

    field_id: int
    name: str
    action: str
    typ: Any
    required: bool


@dataclass(frozen=True)
class ReadRestrictions:
    """A plan's read restrictions, checked against its schema. `row_filter`: the required row filter (REST
    JSON; None: none); `masks` by field id; `hidden`: the masked fields' ids and those of every field within
    them (no value of theirs is taken from a partition or judged by statistics after masking); `salt`: the
    query's, for sha-256-query-local."""

    row_filter: Any
    masks: Mapping[int, Mask]
    hidden: frozenset[int]
    salt: bytes
    _touched: frozenset[int]  # the masked fields and the structs holding one

    @classmethod
    def of(cls, plan: Mapping[str, Any], salt: bytes = b"") -> ReadRestrictions | None:
        """The plan's restrictions (None when it carries none); RestrictionError for any this reader cannot
        apply, naming the column and why."""
        raw = plan.get(PLAN_KEY)
        if raw is None:
            return None
        from read_restrictions import ACTIONS, applicable

        if not isinstance(raw, Mapping):
            raise RestrictionError(f"the plan's {PLAN_KEY} is not an object: {raw!r}")
        row_filter = raw.get("required-row-filter")
        fields = _schema_fields(plan["schema"])
        masks: dict[int, Mask] = {}
        masked: set[int] = set()
        for projection in raw.get("required-column-projections") or ():
            action = projection.get("action") if isinstance(projection, Mapping) else None
            fid = projection.get("field-id") if isinstance(projection, Mapping) else None
            if not isinstance(fid, int) or fid in masked:
                raise RestrictionError(f"a column projection names field {fid!r} twice or not at all: {projection}")
            masked.add(fid)
            found = fields.get(fid)
            where = f"field {fid}"
            if found is not None:
                where = f"column {found.name!r} ({where}, {_type_text(found.type)})"
            if action not in ACTIONS:  # (the spec: an action the reader does not know fails it, read or not)
                why = applicable(str(action), "string", False)
                raise RestrictionError(f"cannot apply the column projection {action!r} to {where}: {why}")
            if found is None:
                continue  # a column the plan's rows do not carry (masks are by id: a renamed one is still found)
            name, f, in_collection, _ = found
            if in_collection:
                raise RestrictionError(f"{where} is masked with {action} inside a list or a map: not applied here")
            if (why := applicable(str(action), f["type"], bool(f.get("required")))) is not None:
                raise RestrictionError(f"cannot apply the column projection {action!r} to {where}: {why}")
            if action == "sha-256-query-local" and len(salt) < 16:
                raise RestrictionError(f"{where} is masked with {action}, and no query salt came with the task")
            masks[fid] = Mask(fid, name, str(action), f["type"], bool(f.get("required")))
        hidden = _within(fields, masked)  # (a column only an equality delete reads, too)
        touched = set(masks) | {struct for fid in masks for struct in fields[fid].structs}
        return cls(None if is_true(row_filter) else row_filter, masks, hidden, salt, frozenset(touched))

    def masked(self, batch: pa.RecordBatch, columns: Collection[int]) -> pa.RecordBatch:
        """`batch` (the reader's arrays, each field carrying its id) with every masked column and struct field
        among its top-level `columns` (by id: those returned or filtered after masking) replaced by its
        action's result; the same schema. The other columns are left as they are, to be dropped."""
        touched = [i for i, f in enumerate(batch.schema) if field_id(f) in columns and field_id(f) in self._touched]
        if not touched:  # (a batch of no columns, e.g. to count rows, keeps its row count)
            return batch
        arrays = list(batch.columns)
        for i in touched:
            arrays[i] = self._masked(arrays[i], batch.schema.field(i))
        return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)

    def _masked(self, array: pa.Array, f: pa.Field) -> pa.Array:
        from read_restrictions import applied

        fid = field_id(f)
        mask = self.masks.get(fid) if fid is not None else None
        if mask is not None:
            try:
                return applied(mask.action, array, mask.typ, self.salt, mask.required)
            except (ValueError, pa.ArrowException) as exc:
                raise RestrictionError(f"cannot apply {mask.action} to column {mask.name!r}: {exc}") from None
        if fid in self._touched and isinstance(array, pa.StructArray):
            children = [self._masked(child, f.type.field(i)) for i, child in enumerate(array.flatten())]
            nulls = array.is_null() if array.null_count else None
            return pa.StructArray.from_arrays(children, fields=list(f.type), mask=nulls)
        return array


def query_salt(plan: Mapping[str, Any]) -> bytes | None:
    """A new salt for one query of a restricted plan (read_restrictions.new_salt), made once in the driver
    and sent with each of its tasks; None for a plan without restrictions."""
    if PLAN_KEY not in plan:
        return None
    from read_restrictions import new_salt

    return new_salt()


def non_null_field_ids(plan: Mapping[str, Any]) -> list[int]:
    """The plan's non-null-field-ids less the masked fields and those within them: a mask may write nulls
    (replace-with-null) where the file holds none, and the reader's values are what Spark is told of."""
    ids: list[int] = list(plan.get("non-null-field-ids") or ())
    raw = plan.get(PLAN_KEY)
    if not isinstance(raw, Mapping) or not ids:
        return ids
    masked = [p.get("field-id") for p in raw.get("required-column-projections") or ()]
    hidden = _within(_schema_fields(plan["schema"]), masked)
    return [i for i in ids if i not in hidden]


class _SchemaField(NamedTuple):
    name: str  # dotted, from the top level
    field: dict[str, Any]  # {"name", "type", "required"}
    in_collection: bool  # it lies in a list or a map
    structs: tuple[int, ...]  # the ids of the structs it lies in

    @property
    def type(self) -> Any:
        return self.field["type"]


def _schema_fields(schema: Mapping[str, Any]) -> dict[int, _SchemaField]:
    """Every field of a schema JSON, by id."""
    out: dict[int, _SchemaField] = {}

    def visit(typ: Any, prefix: str, in_collection: bool, structs: tuple[int, ...]) -> None:
        if isinstance(typ, str):
            return
        kind = typ["type"]
        if kind == "struct":
            for f in typ["fields"]:
                name = f"{prefix}{f['name']}"
                out[f["id"]] = _SchemaField(name, f, in_collection, structs)
                visit(f["type"], f"{name}.", in_collection, (*structs, f["id"]))
        elif kind == "list":
            element = {"name": "element", "type": typ["element"], "required": typ["element-required"]}
            out[typ["element-id"]] = _SchemaField(f"{prefix}element", element, True, structs)
            visit(typ["element"], f"{prefix}element.", True, structs)
        elif kind == "map":
            key = {"name": "key", "type": typ["key"], "required": True}
            value = {"name": "value", "type": typ["value"], "required": typ["value-required"]}
            out[typ["key-id"]] = _SchemaField(f"{prefix}key", key, True, structs)
            out[typ["value-id"]] = _SchemaField(f"{prefix}value", value, True, structs)
            visit(typ["key"], f"{prefix}key.", True, structs)
            visit(typ["value"], f"{prefix}value.", True, structs)

    visit(schema, "", False, ())
    return out


def _within(fields: Mapping[int, _SchemaField], ids: Iterable[Any]) -> frozenset[int]:
    """`ids` and the ids of every field within them (a struct's, a list's or a map's)."""
    out = {i for i in ids if isinstance(i, int)}
    for i in list(out):
        if i in fields and isinstance(fields[i].type, dict):
            out |= set(fields_by_id(fields[i].type))
    return frozenset(out)


def _type_text(typ: Any) -> str:
    return typ if isinstance(typ, str) else str(typ.get("type", typ))

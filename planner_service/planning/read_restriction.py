"""A scan under a principal's read restrictions: the row filter it must not see past and the columns it sees
masked, as Iceberg's REST spec writes them (`ReadRestrictions`: the filter's columns named as in the table's
current schema, the masks by field id), and the filter the scan is planned with.

Planned is `rf AND user'`, where `rf` is the row filter and `user'` the request's filter with every
predicate on a masked column taken out (made TRUE, after NOTs are pushed down: only ever wider), while
column metrics judge `rf AND (user' OR NOT rf)`:

- `rf`: a file is planned only when its partition and statistics leave a row the principal may see;
- `user'`: what the principal filters on a masked column decides nothing here, since its statistics and
  partition values are of the raw values: it is applied by the reader, to the masked values. The rest
  prunes manifests and partitions as any filter does (a file's partition values are those of each of its
  rows, visible ones too);
- `OR NOT rf`, for metrics alone: the request's filter prunes by a file's column statistics only where `rf`
  is proved for every row of the file (the inclusive evaluation of `NOT rf` is "some row may fail rf"),
  since elsewhere they are statistics of hidden rows too: that a file is planned never tells whether a
  hidden row matches.

Row by row both are `rf AND user'` (with SQL's null rules alike); residuals are of the planned one."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import quote_plus

import numpy as np
import pyarrow as pa

from planner_service.access.restrictions import Restriction
from planner_service.errors import BadRequestError, ForbiddenError
from planner_service.expressions.binding import bind
from planner_service.expressions.expression import TRUE, Expression, Reference, UnboundPredicate, and_, not_, or_
from planner_service.expressions.expression_json import expression_from_json, expression_to_json
from planner_service.expressions.visitor import RebuildingVisitor, bound_predicates, rewrite_not, visit
from planner_service.metadata.conversions import java_equality_key
from planner_service.metadata.json_values import to_json_value
from planner_service.metadata.table_metadata import TableMetadata
from planner_service.metadata.types import PrimitiveType, Schema
from planner_service.planning.planned_files import FileTaskColumns
from read_restrictions import applied, default_value

__all__ = ["ScanRestriction", "masked_constant", "masked_files"]


@dataclass(frozen=True)
class ScanRestriction:
    """`read-restrictions` of one principal on one table version (row_filter TRUE: none)."""

    row_filter: Expression  # unbound: the current schema's names, bound case-sensitively
    masks: tuple[tuple[int, str], ...]  # (field id, action)

    @classmethod
    def of_rule(cls, restriction: Restriction, schema: Schema, table: str) -> ScanRestriction:
        """A policy's restriction of a principal's reads of `table`, bound to `schema` (a 403 naming the rule
        when it does not bind), as a scan carries it."""
        return cls.from_json(restriction.bound(schema, table).to_json())

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScanRestriction:
        """The spec's form (BadRequestError when it is not one)."""
        try:
            row_filter = data.get("required-row-filter")
            masks = tuple((int(m["field-id"]), str(m["action"])) for m in data.get("required-column-projections", ()))
        except (KeyError, TypeError, ValueError) as exc:
            raise BadRequestError(f"Not a read-restrictions object: {exc}") from None
        return cls(TRUE if row_filter is None else expression_from_json(row_filter), masks)

    def to_json(self) -> dict[str, Any]:
        """The spec's form (what is absent, absent)."""
        out: dict[str, Any] = {}
        if self.row_filter is not TRUE:
            out["required-row-filter"] = expression_to_json(self.row_filter)
        if self.masks:
            out["required-column-projections"] = [{"action": a, "field-id": fid} for fid, a in self.masks]
        return out

    @cached_property
    def masked(self) -> frozenset[int]:
        return frozenset(fid for fid, _ in self.masks)

    def bound_filter(self, schema: Schema) -> Expression:
        """The row filter bound to the table's current schema."""
        return bind(schema, self.row_filter, case_sensitive=True)

    def planned_filter(self, schema: Schema, request_filter: Expression, case_sensitive: bool) -> Expression:
        """What the scan is planned with (unbound, as the request's filter: residuals keep its literals as
        written, as Java's do): see the module's words. `schema` is the table's current one."""
        return and_(self.row_filter, self._visible(schema, request_filter, case_sensitive))

    def metrics_filter(self, schema: Schema, request_filter: Expression, case_sensitive: bool) -> Expression:
        """What column metrics judge: the request's filter only where the row filter holds for every row."""
        user = self._visible(schema, request_filter, case_sensitive)
        if self.row_filter is TRUE:
            return user
        return and_(self.row_filter, or_(user, not_(self.row_filter)))

    def _visible(self, schema: Schema, request_filter: Expression, case_sensitive: bool) -> Expression:
        """The request's filter without its predicates on masked columns."""
        if not self.masks:
            return request_filter
        return visit(rewrite_not(request_filter), _Without(schema, self.masked, case_sensitive))

    def field_ids(self, schema: Schema) -> set[int]:
        """The columns the row filter reads (the reader evaluates it: they are in the plan's schema)."""
        return {p.term.field_id for p in bound_predicates(self.bound_filter(schema))}


class _Without(RebuildingVisitor):
    """A filter without NOTs, each predicate on a masked column (or a field within one: a struct's
    mask-to-default masks its fields) made TRUE: the filter only widens. A name the schema does not have is
    left for binding to refuse."""

    def __init__(self, schema: Schema, masked: frozenset[int], case_sensitive: bool) -> None:
        self._schema, self._masked, self._cs = schema, masked, case_sensitive

    def visit_unbound_predicate(self, pred: UnboundPredicate) -> Expression:
        term = pred.term
        found = self._schema.find_field_by_name(term.name if isinstance(term, Reference) else term.ref.name, self._cs)
        if found is None:
            return pred
        ids = [found.field_id] + [a.field_id for a in self._schema.ancestors(found.field_id)]
        return TRUE if any(i in self._masked for i in ids) else pred


def masked_files(files: FileTaskColumns, restriction: ScanRestriction, meta: TableMetadata) -> FileTaskColumns:
    """`files` as a restricted principal is told of them: each partition value of a masked source column
    masked as the reader masks the column (an identity partition's; null for other transforms, whose values
    no action is defined for), in the data files and their delete files alike. The index is a copy sharing
    the rows: the plan caches' indexes, other principals' answers, stay as they are."""
    masks = _partition_masks(meta, restriction)
    if not any(any(m) for m in masks.values()):
        return files
    used = np.unique(files.index.partition_id[files.rows]).tolist()  # (the index holds the snapshot's)
    _check_paths(files, meta, masks, used)
    memo: dict[tuple[int, int, Any], Any] = {}  # (spec, field, value) -> masked: partitions share values

    def masked(spec_id: int, values: tuple[Any, ...]) -> tuple[Any, ...]:
        fields = masks.get(spec_id, ())
        out = list(values)
        for i, (v, m) in enumerate(zip(values, fields, strict=False)):
            if m is not None:
                key = (spec_id, i, java_equality_key(v))
                out[i] = memo[key] if key in memo else memo.setdefault(key, m(v))
        return tuple(out)

    partitions = list(files.index.partitions)
    for pid in used:  # those of the planned files alone: no other is sent
        spec_id, values = partitions[pid]
        partitions[pid] = (spec_id, masked(spec_id, values))
    index = dataclasses.replace(files.index, partitions=tuple(partitions), _cache={})
    deletes = tuple(
        dataclasses.replace(f, partition=masked(f.spec_id, f.partition)) if any(masks.get(f.spec_id, ())) else f
        for f in files.delete_files
    )
    return dataclasses.replace(files, index=index, delete_files=deletes)


_Mask = Callable[[Any], Any] | None


def _check_paths(
    files: FileTaskColumns, meta: TableMetadata, masks: dict[int, tuple[_Mask, ...]], used: list[int]
) -> None:
    """A 403 when a planned file's path names a partition value of a masked column (Hive-style directories,
    `tier=GOLD/`, as Iceberg's default location provider writes them): the plan cannot be sent without
    telling the value. Only the distinct partitions and directories of the planned files are looked at."""
    index, rows = files.index, files.rows
    needles: set[str] = set()
    for pid in used:
        spec_id, values = index.partitions[pid]
        spec, fields = meta.specs[spec_id], masks.get(spec_id, ())
        partition_type = spec.partition_type(meta.schema)
        for field, value, mask, typed in zip(spec.fields, values, fields, partition_type.fields, strict=False):
            if mask is not None and value is not None:
                text = str(to_json_value(typed.type, value))
                needles |= {f"{field.name}={text}/", f"{field.name}={quote_plus(text)}/"}
    if not needles:
        return
    paths = [index.directories[d] for d in np.unique(index.directory_id[rows]).tolist()]
    paths += [f.path for f in files.delete_files]
    if any(n in path for path in paths for n in needles):
        masked_sources = sorted({meta.schema.column_name(fid) or str(fid) for fid, _ in _masked_sources(meta, masks)})
        raise ForbiddenError(
            f"The files of {meta.location} are named by the values of masked column(s) {', '.join(masked_sources)} "
            "(partition directories such as name=value): a plan under these read restrictions would tell those "
            "values, so none is made. Mask another column, or write the table's files without partition values "
            "in their paths (write.object-storage.enabled=true with write.object-storage.partitioned-paths=false)"
        )


def _masked_sources(meta: TableMetadata, masks: dict[int, tuple[_Mask, ...]]) -> set[tuple[int, int]]:
    """(source field id, spec id) of each partition field sent masked."""
    return {
        (f.source_id, spec_id)
        for spec_id, fields in masks.items()
        for f, m in zip(meta.specs[spec_id].fields, fields, strict=False)
        if m is not None
    }


def _partition_masks(meta: TableMetadata, restriction: ScanRestriction) -> dict[int, tuple[_Mask, ...]]:
    """Per spec, per field: how its values are sent (None: as they are)."""
    schema, actions = meta.schema, dict(restriction.masks)
    out: dict[int, tuple[_Mask, ...]] = {}
    for spec_id, spec in meta.specs.items():
        fields: list[_Mask] = []
        for f in spec.fields:
            source = schema.find_field(f.source_id)
            enclosing = [f.source_id] + [a.field_id for a in schema.ancestors(f.source_id)]
            action = next((actions[i] for i in enclosing if i in actions), None)
            if action is None or source is None:
                fields.append(None)
            elif f.transform.name == "identity" and f.source_id in actions and isinstance(source.type, PrimitiveType):
                fields.append(functools.partial(masked_constant, action, source.type))
            else:
                fields.append(_nothing)
        out[spec_id] = tuple(fields)
    return out


def _nothing(value: Any) -> None:
    return None


_EPOCH_DAY = dt.date(1970, 1, 1)
_ARROW_TEMPORAL = {  # internal numbers -> Arrow types the actions work on
    "date": (pa.int32(), pa.date32()),
    "timestamp": (pa.int64(), pa.timestamp("us")),
    "timestamptz": (pa.int64(), pa.timestamp("us", "UTC")),
    "timestamp_ns": (pa.int64(), pa.timestamp("ns")),
    "timestamptz_ns": (pa.int64(), pa.timestamp("ns", "UTC")),
}
_ARROW_PLAIN = {"string": pa.string(), "int": pa.int32(), "long": pa.int64(), "binary": pa.binary()}


def masked_constant(action: str, typ: PrimitiveType, value: Any) -> Any:
    """One internal value (a partition's) with `action` applied, as the reader applies it to the column's
    values; None when the action makes a null, or when it cannot be applied here: sha-256-query-local's salt
    is the query's, which only the reader knows."""
    if value is None or action in ("replace-with-null", "sha-256-query-local"):
        return None
    kind, typ_json = typ.kind, typ.to_json()
    if action == "mask-to-default":
        return _internal(kind, default_value(typ_json))
    if kind in _ARROW_TEMPORAL:
        stored, arrow = _ARROW_TEMPORAL[kind]
        values = pa.array([value], stored).cast(arrow)
        return applied(action, values, typ_json)[0].cast(stored).as_py()
    if kind in _ARROW_PLAIN:
        return applied(action, pa.array([value], _ARROW_PLAIN[kind]), typ_json)[0].as_py()
    return None  # (no other type has an action but mask-to-default)


def _internal(kind: str, value: Any) -> Any:
    """A default value (a Python date, datetime, ...) as the internal value of a partition tuple."""
    if kind == "date":
        return (value - _EPOCH_DAY).days
    if kind in _ARROW_TEMPORAL:
        return pa.scalar(value, _ARROW_TEMPORAL[kind][1]).cast(pa.int64()).as_py()
    if kind == "time":
        return 0
    return value


def reader_json(restriction: ScanRestriction, current: Schema, read: Schema) -> dict[str, Any]:
    """`read-restrictions` for the reader of a plan whose schema is `read` (the snapshot's, when
    time-travelling): the row filter's columns named as `read` names them (by field id)."""
    out = restriction.to_json()
    if "required-row-filter" in out:
        out["required-row-filter"] = _renamed(out["required-row-filter"], current, read)
    return out


def _renamed(node: Any, current: Schema, read: Schema) -> Any:
    """An expression's JSON with each column's name as `read` has it (unchanged where it has no such field)."""
    if isinstance(node, list):
        return [_renamed(n, current, read) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _renamed(v, current, read) for k, v in node.items() if k != "term"}
    if "term" in node:
        term = node["term"]
        if isinstance(term, str):
            out["term"] = _name_in(term, current, read)
        else:
            out["term"] = {**term, "term": _name_in(term["term"], current, read)}
    return out


def _name_in(name: str, current: Schema, read: Schema) -> str:
    found = current.find_field_by_name(name)
    renamed = read.column_name(found.field_id) if found is not None else None
    return renamed if renamed is not None else name

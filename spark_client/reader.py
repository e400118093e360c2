"""Read one CombinedScanTask of a /plan response with pyarrow: what a Spark partition does on an executor.

For each file scan task, in order:
1. the Parquet row groups of its byte range (row_groups.py), less those whose statistics prove the
   residual cannot match (pyarrow's row-group statistics, the residual translated to the file's columns);
2. the columns the scan's schema needs, matched by field id (projection.py), plus those only the equality
   deletes compare; identity-partition values replace their source columns;
3. rows deleted by position deletes, deletion vectors and equality deletes dropped (deletes.py);
4. the residual applied with Spark's semantics (residual.py).
Batches have exactly the Arrow schema of plan["schema"] (schema.arrow_schema). The reader knows the plan
only as JSON: it imports nothing from the planner.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from spark_client.deletes import EqualityDeletes, TaskDeletes, equality_mask
from spark_client.projection import find_by_id, project_struct, with_ids
from spark_client.residual import UnsupportedResidual, is_true, to_arrow_expression
from spark_client.row_groups import RowGroup, row_groups_in_range
from spark_client.schema import arrow_schema, arrow_type, fields_by_id
from spark_client.storage import resolve
from spark_client.values import iceberg_type_of, to_scalar

DEFAULT_BATCH_SIZE = 65_536


class UnsupportedFileFormat(NotImplementedError):
    """A data file this reader cannot read (Avro, ORC): the message names the file."""


@dataclass(frozen=True)
class _Plan:
    """What every file of a plan shares: the scan's schema, its columns by name, the specs, the mapping."""

    schema: dict[str, Any]
    arrow: pa.Schema
    by_id: dict[int, dict[str, Any]]
    by_name: dict[str, tuple[list[str], int]]  # "info.a" -> (["info", "a"], field id)
    specs: dict[int, dict[str, Any]]
    name_mapping: list[dict[str, Any]] | None
    delete_files: list[dict[str, Any]]
    scan_filter: Any  # the scan's whole filter (REST JSON), when the plan carries it

    @classmethod
    def of(cls, plan: Mapping[str, Any]) -> _Plan:
        schema = plan["schema"]
        by_name: dict[str, tuple[list[str], int]] = {}

        def names(fields: list[dict[str, Any]], prefix: list[str]) -> None:
            for f in fields:
                path = [*prefix, f["name"]]
                by_name[".".join(path)] = (path, f["id"])
                if isinstance(f["type"], dict) and f["type"]["type"] == "struct":
                    names(f["type"]["fields"], path)

        names(schema["fields"], [])
        return cls(
            schema=schema,
            arrow=arrow_schema(schema),
            by_id=fields_by_id(schema),
            by_name=by_name,
            specs={s["spec-id"]: s for s in plan.get("partition-specs", [])},
            name_mapping=plan.get("name-mapping"),
            delete_files=plan.get("delete-files", []),
            scan_filter=plan.get("filter", True),
        )

    def column(self, name: str) -> tuple[list[str], int]:
        """A residual's column: by its exact name, else ignoring case (a case-insensitive plan)."""
        if name in self.by_name:
            return self.by_name[name]
        matches = [v for k, v in self.by_name.items() if k.lower() == name.lower()]
        if len(matches) != 1:
            raise UnsupportedResidual(f"The residual reads {name!r}, which is not a column of the plan's schema")
        return matches[0]

    def constants(self, data_file: dict[str, Any]) -> dict[int, Any]:
        """Identity-partition values by source field id, as JSON (Java's PartitionUtil.constantsMap)."""
        spec = self.specs.get(data_file.get("spec-id", 0))
        if spec is None:
            return {}
        partition = data_file.get("partition") or []
        return {
            f["source-id"]: value
            for f, value in zip(spec["fields"], partition, strict=False)
            if f["transform"] == "identity"
        }


def read_task(
    task: Mapping[str, Any],
    plan: Mapping[str, Any],
    storage: dict[str, Any] | None = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> Iterator[pa.RecordBatch]:
    """The rows of one CombinedScanTask (an element of plan["tasks"]) as batches of plan["schema"]'s Arrow schema.

    `storage` configures S3 (see storage.py). Raises UnsupportedFileFormat for Avro and ORC data files.
    """
    context = _Plan.of(plan)
    deletes = TaskDeletes(context.delete_files, storage)
    for file_task in task["files"]:
        yield from _read_file(file_task, context, deletes, storage, batch_size)


def _read_file(
    file_task: Mapping[str, Any], plan: _Plan, deletes: TaskDeletes, storage: dict[str, Any] | None, batch_size: int
) -> Iterator[pa.RecordBatch]:
    data_file = file_task["data-file"]
    location = data_file["file-path"]
    file_format = str(data_file.get("file-format", "parquet")).lower()
    if file_format != "parquet":
        raise UnsupportedFileFormat(
            f"Cannot read {location}: {file_format} data files are not supported (Parquet only)"
        )
    fs, path = resolve(location, storage)
    fragment = pads.ParquetFileFormat().make_fragment(path, filesystem=fs)
    fragment.ensure_complete_metadata()
    file_schema = with_ids(fragment.physical_schema, plan.name_mapping)
    raw_constants = plan.constants(data_file)
    constants = {i: to_scalar(v, plan.by_id[i]["type"]) for i, v in raw_constants.items() if i in plan.by_id}
    residual = file_task.get("residual-filter", True)
    row_filter = _row_filter(plan, residual)

    row_groups = row_groups_in_range(fragment.metadata, file_task["start"], file_task["length"])
    if row_filter is not None:
        row_groups = _prune(fragment, row_groups, residual, plan, file_schema, constants)
    if not row_groups:
        return
    refs = file_task.get("delete-file-references", [])
    positions = deletes.deleted_positions(location, refs)
    equality = deletes.equality_deletes(refs)

    wanted = {f["id"] for f in plan.schema["fields"] if f["id"] not in constants}
    wanted |= {i for d in equality for i in d.field_ids}
    columns = [file_schema.field(p[0]).name for i in wanted if (p := find_by_id(list(file_schema), i)) is not None]
    reader = pq.ParquetFile(fs.open_input_file(path), metadata=fragment.metadata, coerce_int96_timestamp_unit="us")
    for group in row_groups:
        position = group.first_row
        batches = reader.iter_batches(
            batch_size, row_groups=[group.index], columns=sorted(set(columns)), use_threads=False
        )
        for batch in batches:
            out = _rows(batch, position, plan, file_schema, constants, raw_constants, positions, equality)
            position += batch.num_rows
            if row_filter is not None and out.num_rows:
                out = _filtered(out, row_filter)
            if out.num_rows:
                yield out


def _filtered(batch: pa.RecordBatch, row_filter: pc.Expression) -> pa.RecordBatch:
    """The rows passing the filter. Through a Table: pyarrow 17's RecordBatch.filter(Expression) raises
    IndexError when no row passes (apache/arrow#44366), and pyspark 3.5 environments often pin it."""
    table = pa.Table.from_batches([batch]).filter(row_filter)
    return table.combine_chunks().to_batches()[0] if table.num_rows else batch.slice(0, 0)


def _row_filter(plan: _Plan, residual: Any) -> pc.Expression | None:
    """What to apply to the rows. Spark applies the query's whole filter with SQL's null rules, while
    Iceberg's residual leaves out what the partition guarantees by Iceberg's rules, under which a null
    partition value passes `x != 'b'`; so the scan's filter is applied when it can be, else the residual."""
    if not is_true(plan.scan_filter):
        try:
            return to_arrow_expression(plan.scan_filter, lambda n: _output_term(plan, n))
        except UnsupportedResidual:
            pass  # e.g. a bucket[N] term: the residual still holds all the planner left for the reader
    return None if is_true(residual) else to_arrow_expression(residual, lambda n: _output_term(plan, n))


def _rows(
    batch: pa.RecordBatch,
    position: int,
    plan: _Plan,
    file_schema: pa.Schema,
    constants: dict[int, pa.Scalar],
    raw_constants: dict[int, Any],
    positions: np.ndarray | None,
    equality: list[EqualityDeletes],
) -> pa.RecordBatch:
    """One batch of file rows (starting at file position `position`) projected, less the deleted rows."""
    n = batch.num_rows
    file_fields = [file_schema.field(name) for name in batch.schema.names]
    arrays = project_struct(batch.columns, file_fields, plan.schema["fields"], n, constants)
    out = pa.RecordBatch.from_arrays(arrays, schema=plan.arrow) if arrays else batch.select([])
    keep = np.ones(n, dtype=bool)
    if positions is not None:
        deleted = positions[np.searchsorted(positions, position) : np.searchsorted(positions, position + n)]
        keep[deleted - position] = False
    for d in equality:
        keys = [_key(i, d, out, batch, file_fields, raw_constants, plan) for i in d.field_ids]
        keep &= equality_mask(keys, d).to_numpy(zero_copy_only=False)
    return out if keep.all() else out.filter(pa.array(keep))


def _key(
    field_id: int,
    deletes: EqualityDeletes,
    out: pa.RecordBatch,
    batch: pa.RecordBatch,
    file_fields: list[pa.Field],
    raw_constants: dict[int, Any],
    plan: _Plan,
) -> pa.Array:
    """A row's value of an equality field: as projected when the scan reads it, else a partition value, the
    file's column, or null (a column added after the file was written)."""
    path = find_by_id(list(plan.arrow), field_id)
    if path is not None:
        return _walk(out.column(path[0]), path[1:])
    delete_type = deletes.rows.column(str(field_id)).type
    if field_id in raw_constants:
        return pa.repeat(to_scalar(raw_constants[field_id], iceberg_type_of(delete_type)), out.num_rows)
    path = find_by_id(file_fields, field_id)
    if path is not None:
        return _walk(batch.column(path[0]), path[1:])
    return pa.nulls(out.num_rows, delete_type)


def _walk(array: pa.Array, path: list[int]) -> pa.Array:
    for i in path:
        array = array.flatten()[i]  # a null struct makes its fields null
    return array


# --- The residual: over the output columns, and over the file's columns for row-group statistics ----------


def _output_term(plan: _Plan, name: str) -> tuple[pc.Expression, Any]:
    path, field_id = plan.column(name)
    return pc.field(*path), plan.by_id[field_id]["type"]


class _NotPushable(Exception):
    """The residual cannot be judged on this file's statistics."""


def _prune(
    fragment: pads.ParquetFileFragment,
    row_groups: list[RowGroup],
    residual: Any,
    plan: _Plan,
    file_schema: pa.Schema,
    constants: dict[int, pa.Scalar],
) -> list[RowGroup]:
    """The row groups whose statistics do not rule the residual out (pyarrow's row-group statistics)."""

    def file_term(name: str) -> tuple[pc.Expression, Any]:
        _, field_id = plan.column(name)
        typ = plan.by_id[field_id]["type"]
        if typ in ("float", "double") or not isinstance(typ, str):
            raise _NotPushable  # NaN is not in Parquet's min/max, but Spark's ordering puts it above them
        if field_id in constants:
            return pc.scalar(constants[field_id]), typ
        path = find_by_id(list(file_schema), field_id)
        if path is None:
            return pc.scalar(pa.scalar(None, arrow_type(typ))), typ
        names, fields = [], list(file_schema)
        for i in path:
            names.append(fields[i].name)
            leaf = fields[i]
            fields = [leaf.type.field(j) for j in range(leaf.type.num_fields)] if pa.types.is_struct(leaf.type) else []
        if leaf.type != arrow_type(typ):
            raise _NotPushable  # a promoted column: compare after the cast, row by row
        return pc.field(*names), typ

    try:
        kept = {rg.id for rg in fragment.subset(filter=to_arrow_expression(residual, file_term)).row_groups}
    except (_NotPushable, UnsupportedResidual, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return row_groups
    return [g for g in row_groups if g.index in kept]

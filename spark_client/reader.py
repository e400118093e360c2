"""Read one CombinedScanTask of a /plan response with pyarrow: what a Spark partition does on an executor.

For each file scan task, in order, and each row range (row group, stripe, block) its byte range covers
(formats/):
1. the range's statistics judge the row filter (statistics.py): a range no row of which can match is
   skipped unread; in one whose every row matches, the filter is not evaluated and the columns only it
   reads are not read; elsewhere what the statistics decide is dropped from the filter, and only the
   columns the rest reads are read for it;
2. the columns the caller wants (`columns`, by default the scan's schema), matched by field id
   (projection.py), plus those the filter still has to evaluate and those only the equality deletes
   compare; identity-partition values replace their source columns; when no file column is needed at all
   (a count, a partition column) the range is not decoded: its rows are counted from its metadata;
3. rows deleted by position deletes, deletion vectors and equality deletes dropped (deletes.py);
4. the filter applied with Spark's semantics (residual.py).
A plan that carries the principal's read restrictions (restrictions.py) also has its required row filter
judged and applied like the filter but before the deletes, on the file's own values, its masks applied after
the deletes, and the filter then applied to the masked values; neither filter is then ever replaced by a
residual, and no masked column's value is taken from a partition.
A file the plan carries a presigned URL for (its `file-urls`: a restricted plan's files on S3) is read
through that URL (iceberg_io/presigned.py), any other from its store with the storage configuration given.
Batches have exactly the Arrow schema of plan["schema"]'s fields named by `columns` (schema.arrow_schema).
The reader knows the plan only as JSON: it imports nothing from the planner.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from iceberg_io import StorageConfig
from iceberg_io.locations import parse_location
from iceberg_io.presigned import PresignedUrlRefused
from spark_client.deletes import EqualityDeletes, TaskDeletes
from spark_client.formats import DataFile, RowRange, UnsupportedFileFormat, open_data_file
from spark_client.projection import find_by_id, with_ids
from spark_client.range_projection import RangeProjection
from spark_client.residual import UnsupportedResidual, is_true, referenced_names, to_arrow_expression
from spark_client.restrictions import ReadRestrictions, RestrictionError
from spark_client.schema import arrow_type, fields_by_id
from spark_client.statistics import ColumnStats, Verdict, residual
from spark_client.values import to_scalar
from spark_client.vended import Storage

__all__ = ["DEFAULT_BATCH_SIZE", "NullInNonNullColumn", "RestrictionError", "UnsupportedFileFormat", "read_task"]

DEFAULT_BATCH_SIZE = 65_536
# a file of an object store that fails to read or decode (a body the store cut short: pyarrow hands back the
# length asked for, the rest whatever its buffer held) is read again from its start, at most this many times
# in all, the rows already handed on skipped; then the task fails and Spark retries it
STORE_READ_ATTEMPTS = 3
STORE_READ_BACKOFF_SECONDS = 0.1  # before the second attempt; doubled before each next one


@dataclass(frozen=True)
class _Filter:
    """The row filter a task's files are read with: its JSON, its pyarrow form, the top-level fields it reads."""

    expr: Any
    arrow: pc.Expression
    field_ids: frozenset[int]  # top-level fields of the scan's schema


@dataclass
class _ReadContext:
    """What every file of a plan shares: the scan's schema, its columns by name, the specs, the mapping."""

    schema: dict[str, Any]
    output: list[dict[str, Any]]  # the top-level fields to return, in the schema's order
    by_id: dict[int, dict[str, Any]]
    by_name: dict[str, tuple[list[str], int]]  # "info.a" -> (["info", "a"], field id)
    specs: dict[int, dict[str, Any]]
    name_mapping: list[dict[str, Any]] | None
    delete_files: list[dict[str, Any]]
    scan_filter: Any  # the scan's whole filter (REST JSON), when the plan carries it
    post_scan: Any  # what of it Spark + Iceberg evaluate again on the rows (the plan's post-scan-filter)
    restrictions: ReadRestrictions | None  # the principal's read restrictions, when the plan carries them
    file_urls: dict[str, str]  # presigned GET URLs by file path, when the plan carries them (its file-urls)
    _filters: dict[str, _Filter | None] = field(default_factory=dict)  # compiled(), by the filter's JSON

    @classmethod
    def of(cls, plan: Mapping[str, Any], columns: Sequence[str] | None, salt: bytes = b"") -> _ReadContext:
        schema = plan["schema"]
        by_name: dict[str, tuple[list[str], int]] = {}

        def names(fields: list[dict[str, Any]], prefix: list[str]) -> None:
            for f in fields:
                path = [*prefix, f["name"]]
                by_name[".".join(path)] = (path, f["id"])
                if isinstance(f["type"], dict) and f["type"]["type"] == "struct":
                    names(f["type"]["fields"], path)

        names(schema["fields"], [])
        if columns is None:
            output = list(schema["fields"])
        else:
            unknown = [c for c in columns if c not in {f["name"] for f in schema["fields"]}]
            if unknown:
                raise ValueError(f"columns {unknown} are not top-level columns of the plan's schema")
            output = [f for f in schema["fields"] if f["name"] in set(columns)]
        context = cls(
            schema=schema,
            output=output,
            by_id=fields_by_id(schema),
            by_name=by_name,
            specs={s["spec-id"]: s for s in plan.get("partition-specs", [])},
            name_mapping=plan.get("name-mapping"),
            delete_files=plan.get("delete-files", []),
            scan_filter=plan.get("filter", True),
            post_scan=plan.get("post-scan-filter", plan.get("filter", True)),
            restrictions=ReadRestrictions.of(plan, salt),
            file_urls=dict(plan.get("file-urls") or {}),
        )
        if context.restrictions is not None:  # both filters evaluable as they are, or no read at all
            context.enforced(context.restrictions.row_filter, "the required row filter of the read restrictions")
            context.enforced(context.scan_filter, "the scan's filter (applied to the masked values)")
        return context

    @property
    def hidden(self) -> frozenset[int]:
        """The masked fields and those within them (none without restrictions)."""
        return self.restrictions.hidden if self.restrictions is not None else frozenset()

    def column(self, name: str) -> tuple[list[str], int]:
        """A filter's column: by its exact name, else ignoring case (a case-insensitive plan)."""
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

    def row_filter(self, residual: Any) -> Any:
        """What to apply to a file's rows (REST JSON, None for nothing). Spark + Iceberg apply to the rows,
        with SQL's null rules, the conjuncts of the query's filter that do not select whole partitions (the
        plan's post-scan-filter: planning/post_scan.py), while Iceberg's residual leaves out what the
        partition guarantees by Iceberg's rules, under which a null partition value passes `x != 'b'`; so
        the post-scan filter is applied when it can be, else the residual. Under read restrictions, always
        the scan's whole filter: the residual was computed from values the masked ones are not."""
        if self.restrictions is not None:
            return None if is_true(self.scan_filter) else self.scan_filter
        if not is_true(self.post_scan) and self.compiled(self.post_scan) is not None:
            return self.post_scan
        return None if is_true(residual) else residual

    def compiled(self, expr: Any) -> _Filter | None:
        """A filter's pyarrow form and the fields it reads, made once per distinct filter of the plan (a
        plan's files and row groups share a few); None when this reader cannot evaluate it (a bucket term)."""
        key = repr(expr)
        if key not in self._filters:
            try:
                arrow = to_arrow_expression(expr, self._output_term)
            except UnsupportedResidual:
                self._filters[key] = None
            else:
                tops = {self.by_name[self.column(n)[0][0]][1] for n in referenced_names(expr)}
                self._filters[key] = _Filter(expr, arrow, frozenset(tops))
        return self._filters[key]

    def enforced(self, expr: Any, what: str) -> None:
        """RestrictionError when this reader cannot evaluate `expr` (REST JSON; None or true: nothing): under
        read restrictions no residual stands in for a filter, and no row is read unfiltered."""
        if expr is None or is_true(expr):
            return
        try:
            compiled = self.compiled(expr)
        except (KeyError, TypeError, ValueError, pa.ArrowException) as exc:  # (not an expression as written)
            why = f"{type(exc).__name__}: {exc}"
        else:
            if compiled is not None:
                return
            why = "a term this reader does not evaluate (a bucket transform, a nested type)"
        raise RestrictionError(f"Cannot evaluate {what} {json.dumps(expr)}: {why}; the read fails rather than skip it")

    def _output_term(self, name: str) -> tuple[pc.Expression, Any]:
        path, field_id = self.column(name)
        return pc.field(*path), self.by_id[field_id]["type"]


def read_task(
    task: Mapping[str, Any],
    plan: Mapping[str, Any],
    storage: Storage = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    columns: Sequence[str] | None = None,
    non_null: Collection[str] = (),
    salt: bytes = b"",
) -> Iterator[pa.RecordBatch]:
    """The rows of one CombinedScanTask (an element of plan["tasks"]) as batches of plan["schema"]'s Arrow
    schema, or of its top-level `columns` alone (in the schema's order; [] for rows without columns, e.g.
    to count them).

    `storage` configures the object stores (an iceberg_io.StorageConfig, or Iceberg's storage properties
    such as s3.endpoint). Raises UnsupportedFileFormat for a file of a format this reader cannot read, and
    NullInNonNullColumn when a batch holds a null in one of the `non_null` columns (declared non-nullable to
    Spark on the word of the table's metadata). A plan with `read-restrictions` is read under them (`salt`:
    the query's, for sha-256-query-local), and RestrictionError raised for any it cannot enforce.
    """
    context = _ReadContext.of(plan, columns, salt)
    config = StorageConfig.of(storage)
    deletes = TaskDeletes(context.delete_files, config, context.file_urls)
    for file_task in task["files"]:
        batches = _FileRead(file_task, context, deletes, config, batch_size).batches()
        yield from _checked(batches, non_null, file_task["data-file"]["file-path"]) if non_null else batches


class NullInNonNullColumn(ValueError):
    """A column declared non-nullable (the plan's metadata says it holds no null) holds one: the metadata lies."""


def _checked(batches: Iterator[pa.RecordBatch], non_null: Collection[str], location: str) -> Iterator[pa.RecordBatch]:
    """The batches, each checked to hold no null in the `non_null` columns (Arrow keeps a column's null count:
    no scan of its values)."""
    for batch in batches:
        for name in non_null:
            nulls = batch.column(name).null_count
            if nulls:
                raise NullInNonNullColumn(
                    f"{location}: column {name!r} holds {nulls} null(s), but it was declared non-nullable because "
                    "the table's metadata (its required flag, or a null count of 0 in this file's manifest entry) "
                    "says it holds none. The metadata is wrong: rewrite the file's entry (for instance with "
                    "rewrite_data_files), or read with nullability='table' to declare only the required columns"
                )
        yield batch


class _FileRead:
    """One file scan task: its ranges, each judged, read, projected, less its deletes, filtered."""

    def __init__(
        self,
        file_task: Mapping[str, Any],
        plan: _ReadContext,
        deletes: TaskDeletes,
        storage: StorageConfig,
        batch_size: int,
    ) -> None:
        self.task = file_task
        self.plan = plan
        self.deletes = deletes
        self.storage = storage
        self.batch_size = batch_size
        data_file = file_task["data-file"]
        self.location: str = data_file["file-path"]
        constants = plan.constants(data_file)
        # a masked column's partition value is the service's masked one: its values come from the file
        self.masked_partitions = sorted(i for i in constants if i in plan.hidden)
        self.raw_constants = {i: v for i, v in constants.items() if i not in plan.hidden}
        self.constants = {
            i: to_scalar(v, plan.by_id[i]["type"]) for i, v in self.raw_constants.items() if i in plan.by_id
        }
        self.row_filter = plan.row_filter(file_task.get("residual-filter", True))
        self.required = plan.restrictions.row_filter if plan.restrictions is not None else None

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The file's rows. A read from an object store that fails (not a missing file) is read again from
        the start (STORE_READ_ATTEMPTS in all): the same file reads to the same rows in the same order, so
        the rows already handed on are skipped, never repeated. A presigned URL the store refused (expired)
        is not asked again: only a new plan has a good one."""
        handed = 0
        for attempt in range(1, STORE_READ_ATTEMPTS + 1):
            seen = 0
            try:
                for batch in self._read_once():
                    if seen + batch.num_rows > handed:
                        out = batch.slice(handed - seen) if seen < handed else batch
                        handed += out.num_rows
                        yield out
                    seen += batch.num_rows
                return
            except (FileNotFoundError, PresignedUrlRefused):
                raise
            except (OSError, pa.ArrowInvalid):
                if attempt == STORE_READ_ATTEMPTS or not parse_location(self.location).is_object_store:
                    raise
                time.sleep(STORE_READ_BACKOFF_SECONDS * 2 ** (attempt - 1))

    def _read_once(self) -> Iterator[pa.RecordBatch]:
        data_file = self.task["data-file"]
        file_format = data_file.get("file-format", "parquet")
        source = open_data_file(self.location, file_format, self.storage, self.plan.file_urls)
        with closing(source):  # at the end, or when Spark stops the task's generator early (a limit)
            yield from self._ranges(source)

    def _ranges(self, source: DataFile) -> Iterator[pa.RecordBatch]:
        ranges = source.ranges(self.task["start"], self.task["length"])
        if not ranges:
            return
        file_schema = with_ids(source.schema, self.plan.name_mapping)
        refs = self.task.get("delete-file-references", [])
        positions = self.deletes.deleted_positions(self.location, refs)
        equality = self.deletes.equality_deletes(refs)
        read = set(self.plan.by_id).union(*(d.field_ids for d in equality))
        for i in self.masked_partitions:
            if i in read and find_by_id(list(file_schema), i) is None:
                raise RestrictionError(
                    f"{self.location} does not hold masked column (field {i}), an identity partition column whose "
                    "partition value the service masked: it cannot be read"
                )
        projections: dict[frozenset[int], RangeProjection] = {}
        restrictions = self.plan.restrictions
        for rows in ranges:
            # the required row filter is judged by the file's own values, the filter by what the reader
            # returns: a masked column's statistics say nothing of its masked values
            skip, required = self._judged(self.required, partial(self._stats, source, file_schema, rows, frozenset()))
            if skip:
                continue
            hidden = self.plan.hidden
            skip, row_filter = self._judged(self.row_filter, partial(self._stats, source, file_schema, rows, hidden))
            if skip:
                continue
            reads = row_filter.field_ids if row_filter is not None else frozenset()
            if required is not None:
                reads |= required.field_ids
            if reads not in projections:
                projections[reads] = self._projection(file_schema, equality, reads)
            projection = projections[reads]
            deleted = None
            if positions is not None:
                end = rows.first_row + rows.num_rows
                deleted = positions[np.searchsorted(positions, rows.first_row) : np.searchsorted(positions, end)]
            position = rows.first_row
            for batch in projection.file_batches(source, rows, self.batch_size):
                out = projection.rows(batch, position, deleted, equality, self.raw_constants)
                position += batch.num_rows
                if required is not None and out.num_rows:
                    out = _filtered(out, required.arrow)
                if restrictions is not None and out.num_rows:  # what is returned, or filtered after masking
                    out = restrictions.masked(
                        out, projection.output_ids | (row_filter.field_ids if row_filter else set())
                    )
                if row_filter is not None and out.num_rows:
                    out = _filtered(out, row_filter.arrow)
                if out.num_rows:
                    yield projection.output(out)

    def _judged(self, expr: Any, stats: Callable[[str], ColumnStats | None]) -> tuple[bool, _Filter | None]:
        """A filter (None: none) over one range, as its statistics leave it: whether no row can match (skip
        the range), and what is left to evaluate (None: every row matches)."""
        if expr is None:
            return False, None
        verdict, left = residual(expr, stats)
        if verdict is not Verdict.ROWS_MIGHT_MATCH:
            return verdict is Verdict.ROWS_CANNOT_MATCH, None
        compiled = self.plan.compiled(left)
        if compiled is None:
            raise UnsupportedResidual(f"Cannot evaluate the filter {left} on {self.location}")
        return False, compiled

    def _projection(
        self, file_schema: pa.Schema, equality: list[EqualityDeletes], filter_fields: frozenset[int]
    ) -> RangeProjection:
        """What to read and build for a range: the output fields, plus those its filter reads."""
        wanted = {f["id"] for f in self.plan.output} | filter_fields
        fields = [f for f in self.plan.schema["fields"] if f["id"] in wanted]
        needed = {f["id"] for f in fields if f["id"] not in self.constants}
        needed |= {i for d in equality for i in d.field_ids}
        columns = sorted({file_schema.field(p[0]).name for i in needed if (p := find_by_id(list(file_schema), i))})
        return RangeProjection(fields, file_schema, columns, self.constants, [f["name"] for f in self.plan.output])

    def _stats(
        self, source: DataFile, file_schema: pa.Schema, rows: RowRange, hidden: frozenset[int], name: str
    ) -> ColumnStats | None:
        """A filter column's statistics over `rows`: an identity partition's value, nulls for a column the
        file lacks, else the file's own (for a column of the scan's type: a promoted one is compared after
        the cast, row by row); none for a column in `hidden`."""
        _, field_id = self.plan.column(name)
        typ = self.plan.by_id[field_id]["type"]
        if not isinstance(typ, str) or field_id in hidden:
            return None
        if field_id in self.constants:
            return ColumnStats.constant(typ, self.constants[field_id].as_py(), rows.num_rows)
        path = find_by_id(list(file_schema), field_id)
        if path is None:
            return ColumnStats.constant(typ, None, rows.num_rows)
        names, fields = [], list(file_schema)
        for i in path:
            leaf = fields[i]
            names.append(leaf.name)
            fields = [leaf.type.field(j) for j in range(leaf.type.num_fields)] if pa.types.is_struct(leaf.type) else []
        if leaf.type != arrow_type(typ):
            return None
        bounds = source.bounds(rows, names)
        if bounds is None:
            return None
        return ColumnStats(typ, rows.num_rows, bounds.null_count, bounds.lower, bounds.upper)


def _filtered(batch: pa.RecordBatch, row_filter: pc.Expression) -> pa.RecordBatch:
    """The rows passing the filter. Through a Table: pyarrow 17's RecordBatch.filter(Expression) raises
    IndexError when no row passes (apache/arrow#44366), and pyspark 3.5 environments often pin it."""
    table = pa.Table.from_batches([batch]).filter(row_filter)
    return table.combine_chunks().to_batches()[0] if table.num_rows else batch.slice(0, 0)

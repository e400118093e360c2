"""Aggregates from metadata: COUNT(*), COUNT(col), MIN(col) and MAX(col) of a scan, from its data files'
record counts and column stats, as Iceberg's AggregateEvaluator computes them for Spark's aggregate
push-down (SparkScanBuilder.pushAggregation), and only where the answer is exact.

Per file, as Java's aggregates: COUNT(*) adds record_count; COUNT(col) adds value_count - null_count (both
needed); MIN/MAX take the lower/upper bound, a file whose values are all null adding nothing. An aggregate
is exact only if
- no planned file has delete files (their rows must be read: Java refuses the whole push-down);
- every planned file's residual is TRUE: the filter selects all of its rows (Java asks the stronger
  "the filter selects whole partitions in every spec");
- every file has the stats the aggregate needs;
- MIN/MAX bounds are not truncated: string and binary bounds under a truncate(N) metrics mode (the default,
  truncate(16)) may be (Java checks strings only; binary bounds are truncated the same way);
- MIN/MAX of float and double see no NaN: bounds leave NaN out, while Spark's MIN/MAX do not (NaN is the
  largest double), so NaN counts must be present and zero (Iceberg refuses these too).
Otherwise the aggregate says why, and the caller reads the rows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from planner_service.errors import BadRequestError
from planner_service.expressions.expression import TRUE
from planner_service.metadata.types import (
    IcebergType,
    NestedField,
    PrimitiveType,
    Schema,
    java_type_string,
    unknown_column,
)
from planner_service.planning.planned_files import FileTaskColumns

Op = Literal["count_star", "count", "min", "max"]
LONG = PrimitiveType("long")
MAX_AGGREGATES = 100
DEFAULT_METRICS_MODE = "truncate(16)"  # TableProperties.DEFAULT_WRITE_METRICS_MODE_DEFAULT
_AGGREGATE = re.compile(r"\s*(count|min|max)\s*\(\s*(.*?)\s*\)\s*", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Aggregate:
    op: Op
    column: str | None = None  # None for count(*)

    @property
    def name(self) -> str:
        """Java's BoundAggregate.describe(): count(*), count(col), min(col), max(col)."""
        return "count(*)" if self.op == "count_star" else f"{self.op}({self.column})"


@dataclass(frozen=True)
class AggregateValue:
    aggregate: Aggregate
    type: IcebergType  # long for the counts, the column's type for min and max
    value: Any  # the internal value (None: null, or not exact)
    exact: bool
    reason: str | None = None  # why it is not exact


def parse_aggregate(text: str) -> Aggregate:
    """`count(*)`, `count(col)`, `min(col)`, `max(col)` (any case; dotted names for nested columns)."""
    match = _AGGREGATE.fullmatch(text)
    if match is None or not match[2]:
        raise BadRequestError(f"Invalid aggregate '{text[:200]}': expected count(*), count(col), min(col) or max(col)")
    op, column = match[1].lower(), match[2]
    if column == "*":
        if op != "count":
            raise BadRequestError(f"Invalid aggregate '{text[:200]}': only count takes *")
        return Aggregate("count_star")
    return Aggregate("count" if op == "count" else op, column)  # type: ignore[arg-type]


def parse_aggregates(texts: Sequence[str]) -> list[Aggregate]:
    if not texts:
        raise BadRequestError("No aggregates: give at least one of count(*), count(col), min(col), max(col)")
    if len(texts) > MAX_AGGREGATES:
        raise BadRequestError(f"{len(texts)} aggregates: at most {MAX_AGGREGATES} per request")
    return [parse_aggregate(text) for text in texts]


def evaluate_aggregates(
    files: FileTaskColumns | None,
    schema: Schema,
    properties: Mapping[str, str],
    aggregates: Sequence[Aggregate],
    case_sensitive: bool = True,
) -> list[AggregateValue]:
    """Each aggregate over the planned files (planFiles() with column stats; None: the table has no
    snapshot, so no rows). Columns bind to `schema`, the scan's; an unknown column is a BadRequestError."""
    fields = [_bind(schema, a, case_sensitive) for a in aggregates]
    blocker = _scan_blocker(files) if files is not None else None
    out = []
    for aggregate, fld in zip(aggregates, fields, strict=True):
        typ = LONG if aggregate.op in ("count_star", "count") else fld.type if fld is not None else LONG
        if blocker is not None:
            out.append(AggregateValue(aggregate, typ, None, False, blocker))
            continue
        reason = _mode_blocker(aggregate, fld, schema, properties) if fld is not None else None
        if reason is not None:
            out.append(AggregateValue(aggregate, typ, None, False, reason))
            continue
        value, reason = _evaluate(files, aggregate, fld) if files is not None else (_empty(aggregate), None)
        out.append(AggregateValue(aggregate, typ, value if reason is None else None, reason is None, reason))
    return out


def _bind(schema: Schema, aggregate: Aggregate, case_sensitive: bool) -> NestedField | None:
    if aggregate.column is None:
        return None
    fld = schema.find_field_by_name(aggregate.column, case_sensitive)
    if fld is None:
        raise BadRequestError(
            f"Invalid aggregate {aggregate.name}: cannot find field '{aggregate.column}'"
            f"{unknown_column(schema, aggregate.column)}"
        )
    return fld


def _scan_blocker(files: FileTaskColumns) -> str | None:
    """Why no aggregate of this scan can come from metadata: deletes, or a filter that keeps part of a file."""
    n = len(files)
    if files.delete_offsets is not None and len(files.delete_refs):
        with_deletes = int(np.count_nonzero(np.diff(files.delete_offsets)))
        if with_deletes:
            return f"{with_deletes} of {n} data files have delete files: their rows must be read"
    partial = [i for i, residual in enumerate(files.residuals) if residual != TRUE]
    if partial:
        partial_files = int(np.count_nonzero(np.isin(files.residual_id, partial)))
        if partial_files:
            return (
                f"the filter does not select whole partitions of {partial_files} of {n} data files "
                "(their residual is not true): their rows must be read"
            )
    return None


def metrics_mode(properties: Mapping[str, str], column: str) -> str:
    """The column's metrics mode as MetricsConfig reads it: write.metadata.metrics.column.<name>, else
    write.metadata.metrics.default, else truncate(16)."""
    mode = properties.get(f"write.metadata.metrics.column.{column}")
    if mode is None:
        mode = properties.get("write.metadata.metrics.default", DEFAULT_METRICS_MODE)
    return mode.strip().lower()


def _mode_blocker(aggregate: Aggregate, fld: NestedField, schema: Schema, properties: Mapping[str, str]) -> str | None:
    if aggregate.op not in ("min", "max"):
        return None
    if not isinstance(fld.type, PrimitiveType):
        return f"{aggregate.name}: {java_type_string(fld.type)} columns have no bounds"
    if fld.type.kind not in ("string", "binary"):
        return None
    column = schema.column_name(fld.field_id) or aggregate.column or ""
    mode = metrics_mode(properties, column)
    if mode.startswith("truncate"):
        return (
            f"{aggregate.name}: {fld.type.kind} bounds may be truncated (metrics mode {mode}); with "
            f"write.metadata.metrics.column.{column}=full new files keep whole bounds"
        )
    return None


def _empty(aggregate: Aggregate) -> Any:
    return 0 if aggregate.op in ("count_star", "count") else None


def _evaluate(files: FileTaskColumns, aggregate: Aggregate, fld: NestedField | None) -> tuple[Any, str | None]:
    """(value, None), or (None, why it is not exact)."""
    n = len(files)
    if n == 0:
        return _empty(aggregate), None
    stats = files.index.stats
    rows = files.rows
    if aggregate.op == "count_star":
        records = stats.record_count[rows]
        if (records < 0).any():
            return None, f"{int(np.count_nonzero(records < 0))} data files have no record count"
        return int(records.sum()), None
    assert fld is not None
    fid = fld.field_id
    values, has_values = (a[rows] for a in stats.counts("value_counts", fid))
    nulls, has_nulls = (a[rows] for a in stats.counts("null_value_counts", fid))
    if aggregate.op == "count":
        missing = ~(has_values & has_nulls)
        if missing.any():
            return (
                None,
                f"{aggregate.name}: {int(np.count_nonzero(missing))} of {n} data files have no value or "
                "null counts for the column",
            )
        return int((values - nulls).sum()), None
    typ = fld.type
    assert isinstance(typ, PrimitiveType)
    if typ.kind in ("float", "double"):
        nans, has_nans = (a[rows] for a in stats.counts("nan_value_counts", fid))
        if (has_nans & (nans > 0)).any():
            return (
                None,
                f"{aggregate.name}: {int(np.count_nonzero(nans > 0))} data files hold NaN values, which "
                "bounds leave out",
            )
        if not has_nans.all():
            return None, f"{aggregate.name}: {int(np.count_nonzero(~has_nans))} data files have no NaN counts"
    column = "lower_bounds" if aggregate.op == "min" else "upper_bounds"
    bounds = stats.bounds(column, fid, typ)
    present = bounds.present[rows]
    all_null = has_values & has_nulls & (values > 0) & (values == nulls)
    lacking = ~(present | all_null)
    if lacking.any():
        side = "lower" if aggregate.op == "min" else "upper"
        return (
            None,
            f"{aggregate.name}: {int(np.count_nonzero(lacking))} of {n} data files have no {side} bound for the column",
        )
    return stats.bound_extreme(column, fid, typ, rows, largest=aggregate.op == "max"), None

"""COUNT(*), COUNT(col), MIN(col) and MAX(col) of one task's rows, computed where the task is read: what
aggregate() runs on the executors when the service cannot answer from metadata.

Each task reads only the columns its aggregates name (the row filter's only where it must be evaluated,
and none at all for COUNT(*) of ranges whose statistics decide the filter: reader.py), aggregates them with
pyarrow and hands Spark one row of partial values; the driver collects those rows (one stage: Spark's own
combining would shuffle them through a second) and combine() adds the counts and takes the least and
greatest of the partial minima and maxima, by the same rules. Rows cross from Python to the JVM once per
task, not once per row, and Spark's own semantics hold:
* COUNT(col) counts non-null values; a field of a null struct is null;
* MIN and MAX skip nulls (null when there is no value); floating point as Spark orders it, NaN above every
  number: a task's MAX is NaN if it saw one, its MIN is NaN only if it saw nothing else;
* strings and binaries compare by their unsigned bytes, as Spark's do.
Values are taken in Spark's Arrow types (read_payload's batches), so the partial row has the final types.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import value_order
from spark_client.partitions import read_payload
from spark_client.vended import Storage

__all__ = ["AggregateColumn", "PartialAggregates", "combine", "partial_schema"]


@dataclass(frozen=True)
class AggregateColumn:
    """One aggregate over read_payload's batches: `op` count, min, max (or sum, of partial counts); `path`
    the column's names from the top level down through structs (empty for count(*))."""

    op: str
    path: tuple[str, ...] = ()


def leaf_type(schema: pa.Schema, path: Sequence[str]) -> pa.DataType:
    """The Arrow type at `path` (names through structs) of a batch schema."""
    typ: pa.DataType = schema.field(path[0]).type
    for name in path[1:]:
        typ = typ.field(name).type
    return typ


def partial_schema(aggregates: Sequence[AggregateColumn], read_schema: pa.Schema) -> pa.Schema:
    """The partial row: p0, p1, ... a long per count, the column's type per min and max."""
    return pa.schema(
        [
            pa.field(f"p{i}", pa.int64() if a.op == "count" else leaf_type(read_schema, a.path))
            for i, a in enumerate(aggregates)
        ]
    )


class PartialAggregates:
    """A task function (dataframe.map_tasks): a task's payload in, one partial row out."""

    def __init__(self, aggregates: Sequence[AggregateColumn], read_schema: pa.Schema, batch_size: int) -> None:
        self.aggregates = list(aggregates)
        self.read_schema = read_schema
        self.schema = partial_schema(self.aggregates, read_schema)
        self.batch_size = batch_size

    def __call__(
        self, payload: str | Mapping[str, Any], schema: pa.Schema, storage: Storage, max_rows: int
    ) -> Iterator[pa.RecordBatch]:
        states = [_State(a) for a in self.aggregates]
        for batch in read_payload(payload, self.read_schema, storage, self.batch_size):
            for state in states:
                state.add(batch)
        yield pa.RecordBatch.from_arrays(
            [pa.array([s.value()], f.type) for s, f in zip(states, self.schema, strict=True)], schema=self.schema
        )


def combine(ops: Sequence[str], partials: pa.Table) -> list[Any]:
    """The final values of the partial rows p0, p1, ... (one row per task) of aggregates `ops` (count, min,
    max): the counts added, the least of the minima and the greatest of the maxima, NaN as Spark orders it."""
    states = [_State(AggregateColumn("sum" if op == "count" else op, (f"p{i}",))) for i, op in enumerate(ops)]
    for batch in partials.to_batches():
        for state in states:
            state.add(batch)
    return [state.value() for state in states]


class _State:
    def __init__(self, aggregate: AggregateColumn) -> None:
        self.op, self.path = aggregate.op, aggregate.path
        self.count = 0
        self.least: Any = None
        self.greatest: Any = None

    def add(self, batch: pa.RecordBatch) -> None:
        if not self.path:  # count(*)
            self.count += batch.num_rows
            return
        values = batch.column(self.path[0])
        for name in self.path[1:]:
            values = values.flatten()[values.type.get_field_index(name)]  # a null struct makes its fields null
        if self.op == "count":
            self.count += len(values) - values.null_count
            return
        if self.op == "sum":
            self.count += pc.sum(values).as_py() or 0
            return
        seen = []
        if pa.types.is_floating(values.type):  # arrow's min_max passes over NaN: Spark orders it above numbers
            is_nan = pc.fill_null(pc.is_nan(values), False)
            if pc.any(is_nan).as_py():
                seen.append(math.nan)
            values = values.filter(pc.invert(is_nan))
        if len(values) > values.null_count:
            bounds = pc.min_max(values)
            seen += [bounds["min"].as_py(), bounds["max"].as_py()]
        self.least = value_order.least([self.least, *seen])
        self.greatest = value_order.greatest([self.greatest, *seen])

    def value(self) -> Any:
        if self.op in ("count", "sum"):
            return self.count
        return self.greatest if self.op == "max" else self.least

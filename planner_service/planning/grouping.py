"""Partition-aware tasks: every task holds splits of one partition tuple only (Iceberg's preserve-data-grouping:
SparkPartitioningAwareScan, TableScanUtil.planTaskGroups with a grouping key, 1.10).

The grouping key (Partitioning.groupingKeyType) is the partition fields that every spec of the planned files
has and none of them voids, whose source column the scan reads, ordered by partition field id. Each file's
partition tuple is projected onto it by field id; keys are equal as Java's StructLikeWrapper compares them
(nulls equal, NaN equal to NaN, -0.0 not 0.0, binary by content). The files of each key are split and
bin-packed on their own, with the scan's split size, lookback and open-file cost, in planFiles() order.

Java returns the keys in HashMap order (of identity hashes: a different order each run); Spark, given a
key-grouped scan, orders its partitions by key, ascending with nulls first. Tasks here follow Spark's order
of keys, each key's tasks in Java's bin order.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner_service.metadata.file_index import FileIndex
from planner_service.metadata.partitioning import PartitionField, PartitionSpec
from planner_service.metadata.types import Schema
from planner_service.splitting.combine import CombinedTasks, FileColumns, combine

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
GROUPINGS = ("none", "partition")


@dataclass(frozen=True)
class TaskGrouping:
    """How a grouped plan's tasks are grouped: the key's partition fields, each distinct key (internal values,
    in the fields' order, ascending) and the key of each task."""

    fields: tuple[PartitionField, ...]
    keys: tuple[tuple[Any, ...], ...]
    task_key: Int64Array


def grouping_fields(specs: Iterable[PartitionSpec], schema: Schema) -> tuple[PartitionField, ...]:
    """Partitioning.groupingKeyType: the fields (by partition field id, ascending) that every spec has, none
    voids, and whose source column `schema` (the scan's) holds; each as the highest spec id defines it."""
    common: dict[int, PartitionField] | None = None
    for spec in sorted(specs, key=lambda s: s.spec_id):
        active = {
            f.field_id: f
            for f in spec.fields
            if f.transform.name != "void" and schema.find_field(f.source_id) is not None
        }
        common = active if common is None else {fid: active[fid] for fid in common if fid in active}
    return tuple(common[fid] for fid in sorted(common)) if common else ()


def group_tasks(
    index: FileIndex,
    rows: Int64Array,
    specs: dict[int, PartitionSpec],
    schema: Schema,
    columns: FileColumns,
    split_size: int,
    lookback: int,
    open_file_cost: int,
) -> tuple[CombinedTasks, TaskGrouping | None]:
    """The tasks of the files `rows` of `index` (whose splitting columns are `columns`), grouped by partition;
    no grouping (the plain tasks, None) when the key has no field."""
    used = np.unique(index.spec_id[rows]) if len(rows) else np.zeros(0, np.int64)
    fields = grouping_fields((specs[int(s)] for s in used), schema)
    if not fields:
        return combine(columns, split_size, lookback, open_file_cost), None
    key_of_partition, keys = _keys(index, fields, specs)
    file_key = key_of_partition[index.partition_id[rows]]
    order = sorted(range(len(keys)), key=lambda k: _ascending(keys[k]))
    rank = np.empty(len(keys), np.int64)
    rank[order] = np.arange(len(keys))
    file_rank = rank[file_key]
    by_key = np.argsort(file_rank, kind="stable")  # the files key after key, each key's in planFiles() order
    bounds = np.searchsorted(file_rank[by_key], np.arange(len(keys) + 1))
    parts: list[tuple[CombinedTasks, Int64Array]] = []
    present: list[tuple[Any, ...]] = []
    for position, k in enumerate(order):
        files = by_key[bounds[position] : bounds[position + 1]].astype(np.int64)
        if len(files):
            parts.append((combine(_take(columns, files), split_size, lookback, open_file_cost), files))
            present.append(keys[k])
    task_key = np.repeat(np.arange(len(parts), dtype=np.int64), [len(t) for t, _ in parts])
    return _concat(parts), TaskGrouping(fields, tuple(present), task_key)


def _keys(
    index: FileIndex, fields: Sequence[PartitionField], specs: dict[int, PartitionSpec]
) -> tuple[Int64Array, list[tuple[Any, ...]]]:
    """Each interned partition's key id, and the distinct keys (first appearance first)."""
    ids: dict[tuple[Any, ...], int] = {}
    keys: list[tuple[Any, ...]] = []
    of_partition = np.empty(len(index.partitions), np.int64)
    positions: dict[int, list[int]] = {}
    for p, (spec_id, values) in enumerate(index.partitions):
        where = positions.get(spec_id)
        if where is None:
            by_id = {f.field_id: i for i, f in enumerate(specs[spec_id].fields)}
            where = positions[spec_id] = [by_id[f.field_id] for f in fields]
        key = tuple(values[i] if i < len(values) else None for i in where)
        identity = tuple(_java_equality(v) for v in key)
        found = ids.get(identity)
        if found is None:
            found = ids[identity] = len(keys)
            keys.append(key)
        of_partition[p] = found
    return of_partition, keys


def _java_equality(value: Any) -> Any:
    """What makes two key values equal in Java (Comparators.forType): NaN equals NaN, -0.0 is not 0.0."""
    if isinstance(value, float):
        return ("float", struct.pack(">d", math.nan if math.isnan(value) else value))
    return value


def _ascending(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """Spark's natural ascending order of keys, nulls first (NaN after every number)."""
    return tuple(
        (0,) if v is None else (1, 1, 0.0) if isinstance(v, float) and math.isnan(v) else (1, 0, v) for v in key
    )


def _take(columns: FileColumns, files: Int64Array) -> FileColumns:
    """The columns of some files, in the given order."""
    counts = columns.offset_counts[files]
    starts = (np.cumsum(columns.offset_counts) - columns.offset_counts)[files]
    before = np.cumsum(counts) - counts  # where each file's offsets start in the result
    positions = np.repeat(starts - before, counts) + np.arange(int(counts.sum()), dtype=np.int64)
    return FileColumns(
        columns.sizes[files],
        columns.splittable[files],
        counts,
        columns.flat_offsets[positions],
        columns.record_counts[files],
        columns.delete_bytes[files],
        columns.delete_counts[files],
    )


def _concat(parts: Sequence[tuple[CombinedTasks, Int64Array]]) -> CombinedTasks:
    """One CombinedTasks of the parts' tasks in turn, their pieces' files mapped back to the plan's."""
    assert parts, "a plan with files has a key"
    offsets = [np.zeros(1, np.int64)]
    base = 0
    for tasks, _ in parts:
        offsets.append(tasks.offsets[1:] + base)
        base += int(tasks.offsets[-1])
    return CombinedTasks(
        np.concatenate(offsets),
        np.concatenate([files[tasks.file] for tasks, files in parts]),
        np.concatenate([tasks.start for tasks, _ in parts]),
        np.concatenate([tasks.length for tasks, _ in parts]),
        np.concatenate([tasks.is_split for tasks, _ in parts]),
        np.concatenate([tasks.size_bytes for tasks, _ in parts]),
        np.concatenate([tasks.estimated_rows for tasks, _ in parts]),
    )

"""Partition-aware tasks: every task holds splits of one partition tuple only (Iceberg's preserve-data-grouping:
SparkPartitioningAwareScan, TableScanUtil.planTaskGroups with a grouping key, 1.10).

The grouping key (Partitioning.groupingKeyType) is the partition fields that every spec of the planned files
has and none of them voids, whose source column the scan reads, ordered by partition field id. Each file's
partition tuple is projected onto it by field id; keys are equal as Java's StructLikeWrapper compares them
(nulls equal, NaN equal to NaN, -0.0 not 0.0, binary by content). The files of each key are split and
bin-packed on their own, with the scan's split size, lookback and open-file cost, in planFiles() order.

Java returns the keys in HashMap order (of identity hashes: a different order each run); Spark, given a
key-grouped scan, orders its partitions by key, ascending with nulls first. Tasks here follow Spark's order
of keys, each key's tasks in Java's bin order. grouping=sort-order (planning/sort_grouping.py) groups by the
same key, then orders each key's files by the table's sort order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

import numpy as np

import value_order
from planner_service.errors import BadRequestError, quoted
from planner_service.metadata.conversions import java_equality_key
from planner_service.metadata.file_index import FileIndex
from planner_service.metadata.partitioning import PartitionField, PartitionSpec
from planner_service.metadata.types import Schema
from planner_service.planning.sort_ranges import SortKey
from planner_service.splitting.combine import CombinedTasks, FileColumns, Packing, combine, run_positions

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
# How a scan's tasks are grouped: by size alone, by partition tuple, or also by the table's sort order (the
# one list of the values: the /plan body, the CLI and the checks of a request take them from here)
Grouping = Literal["none", "partition", "sort-order"]
GROUPINGS: tuple[Grouping, ...] = get_args(Grouping)


def grouping_of(value: object) -> Grouping:
    """`value` as a Grouping; BadRequestError naming the values when it is none of them."""
    for grouping in GROUPINGS:
        if value == grouping:
            return grouping
    raise BadRequestError(f"grouping must be one of {', '.join(GROUPINGS)}, not {quoted(str(value))}")


@dataclass(frozen=True)
class KeyRanges:
    """grouping=sort-order: the sort key, and each task's first and last key (internal values, a prefix of the
    key's fields where statistics bound no more; None for a task of a file without bounds)."""

    key: SortKey
    task_spans: tuple[tuple[tuple[Any, ...], tuple[Any, ...]] | None, ...]  # by task: (first key, last key)


@dataclass(frozen=True)
class TaskGrouping:
    """How a grouped plan's tasks are grouped: the key's partition fields, each distinct key (internal values,
    in the fields' order, ascending), the key of each task and, ordered by a sort order, each task's range."""

    fields: tuple[PartitionField, ...]
    keys: tuple[tuple[Any, ...], ...]
    task_key: Int64Array
    ranges: KeyRanges | None = None

    @property
    def kind(self) -> str:
        return "partition" if self.ranges is None else "sort-order"

    @property
    def nbytes(self) -> int:
        """An estimate of the memory held: each task's key id, the keys, and each task's range as Python tuples
        (measured: about 220 bytes a task for a one-field sort key)."""
        ranged = 0 if self.ranges is None else len(self.ranges.task_spans) * (120 + 100 * len(self.ranges.key.fields))
        return 8 * len(self.task_key) + 64 * len(self.keys) * max(1, len(self.fields)) + ranged


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
    *,
    specs: dict[int, PartitionSpec],
    schema: Schema,
    columns: FileColumns,
    packing: Packing,
) -> tuple[CombinedTasks, TaskGrouping | None]:
    """The tasks of the files `rows` of `index` (whose splitting columns are `columns`), grouped by partition;
    no grouping (the plain tasks, None) when the key has no field."""
    fields = grouping_fields(specs_of(index, rows, specs), schema)
    if not fields:
        return combine(columns, packing), None
    file_key, keys = partition_keys(index, rows, fields, specs)
    by_key = np.argsort(file_key, kind="stable")  # the files key after key, each key's in planFiles() order
    starts = np.diff(file_key[by_key], prepend=-1) != 0  # where each key's files begin
    tasks = combine(take_files(columns, by_key), packing, groups=starts)
    task_files = by_key[tasks.file[tasks.offsets[:-1]]]  # each task's first file
    used, task_key = np.unique(file_key[task_files], return_inverse=True)
    grouping = TaskGrouping(fields, tuple(keys[k] for k in used.tolist()), task_key.astype(np.int64))
    return with_plan_files(tasks, by_key), grouping


def partition_keys(
    index: FileIndex, rows: Int64Array, fields: Sequence[PartitionField], specs: dict[int, PartitionSpec]
) -> tuple[Int64Array, list[tuple[Any, ...]]]:
    """Each file's key (its rank among the distinct keys, ascending as Spark orders them) and the keys."""
    key_of_partition, keys = _keys(index, np.unique(index.partition_id[rows]), fields, specs)
    order = sorted(range(len(keys)), key=lambda k: value_order.ascending(keys[k]))
    rank = np.empty(len(keys), np.int64)
    rank[order] = np.arange(len(keys))
    return rank[key_of_partition[index.partition_id[rows]]], [keys[k] for k in order]


def specs_of(index: FileIndex, rows: Int64Array, specs: dict[int, PartitionSpec]) -> list[PartitionSpec]:
    used = np.unique(index.spec_id[rows]) if len(rows) else np.zeros(0, np.int64)
    return [specs[int(s)] for s in used]


def _keys(
    index: FileIndex, used: Int64Array, fields: Sequence[PartitionField], specs: dict[int, PartitionSpec]
) -> tuple[Int64Array, list[tuple[Any, ...]]]:
    """The key id of each interned partition in `used` (the partitions of the planned files: the index may
    hold others, of specs without the key's fields when it is the whole snapshot's), and the distinct keys
    (first appearance first). Partitions not used have no key (-1)."""
    ids: dict[tuple[Any, ...], int] = {}
    keys: list[tuple[Any, ...]] = []
    of_partition = np.full(len(index.partitions), -1, np.int64)
    positions: dict[int, list[int]] = {}
    for p in used.tolist():
        spec_id, values = index.partitions[p]
        where = positions.get(spec_id)
        if where is None:
            by_id = {f.field_id: i for i, f in enumerate(specs[spec_id].fields)}
            where = positions[spec_id] = [by_id[f.field_id] for f in fields]
        key = tuple(values[i] if i < len(values) else None for i in where)
        identity = tuple(java_equality_key(v) for v in key)
        found = ids.get(identity)
        if found is None:
            found = ids[identity] = len(keys)
            keys.append(key)
        of_partition[p] = found
    return of_partition, keys


def take_files(columns: FileColumns, files: Int64Array) -> FileColumns:
    """The columns of some files, in the given order."""
    counts = columns.offset_counts[files]
    positions = run_positions((np.cumsum(columns.offset_counts) - columns.offset_counts)[files], counts)
    return FileColumns(
        columns.sizes[files],
        columns.splittable[files],
        counts,
        columns.flat_offsets[positions],
        columns.record_counts[files],
        columns.delete_bytes[files],
        columns.delete_counts[files],
    )


def with_plan_files(tasks: CombinedTasks, files: Int64Array) -> CombinedTasks:
    """`tasks` made of the files `files` lists, their pieces' files mapped back to the plan's."""
    return replace(tasks, file=files[tasks.file])

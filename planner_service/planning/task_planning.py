"""planTasks(): a plan's files split and bin-packed into tasks, grouped as the scan asks.

`none` packs every file together (TableScanUtil.planTaskGroups); `partition` packs each partition key's files
on their own, keys in Spark's order (grouping.py); `sort-order` also orders each key's files by the table's
sort order, into tasks of files that do not overlap on it (sort_grouping.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.table_metadata import TableMetadata
from planner_service.metadata.types import Schema
from planner_service.planning.grouping import Grouping, TaskGrouping, group_tasks
from planner_service.planning.planned_files import FileTaskColumns
from planner_service.planning.sort_grouping import order_tasks
from planner_service.planning.sort_ranges import SortKey, table_sort_key
from planner_service.splitting.combine import CombinedTasks, Packing, combine


@dataclass(frozen=True)
class GroupBy:
    """How a scan groups its tasks: the kind, the table's specs and the scan's schema (whose columns the
    partition key may use) and, for sort-order, the part of the table's sort order that statistics order."""

    kind: Grouping
    specs: dict[int, PartitionSpec]
    schema: Schema
    sort_key: SortKey | None = None

    @classmethod
    def of(cls, kind: Grouping, meta: TableMetadata, schema: Schema, table_name: str) -> GroupBy:
        """The grouping `kind` of a scan of `meta` reading `schema`; BadRequestError for sort-order when the
        table has no sort order that statistics order."""
        sort_key = table_sort_key(meta, table_name) if kind == "sort-order" else None
        return cls(kind, meta.specs, schema, sort_key)

    @property
    def reads_bounds(self) -> bool:
        """Whether grouping reads the files' column bounds (sort-order does)."""
        return self.sort_key is not None


def plan_tasks(
    files: FileTaskColumns, packing: Packing, group_by: GroupBy
) -> tuple[CombinedTasks, TaskGrouping | None]:
    """The tasks of `files` split and packed as `packing` says, and how they are grouped (None: not grouped).
    (The splitting columns are made in each call, held by the packer alone: it lets the split offsets go
    before it merges the tasks.)"""
    if group_by.kind == "partition":
        return group_tasks(
            files.index,
            files.rows,
            specs=group_by.specs,
            schema=group_by.schema,
            columns=files.columns(),
            packing=packing,
        )
    if group_by.sort_key is not None:
        return order_tasks(
            files.index,
            files.rows,
            specs=group_by.specs,
            schema=group_by.schema,
            key=group_by.sort_key,
            columns=files.columns(),
            packing=packing,
        )
    return combine(files.columns(), packing), None

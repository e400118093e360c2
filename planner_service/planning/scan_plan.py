"""The planner's answer: the plan of one scan (planFiles and planTasks as columns, the scan's projected
schema, the options it was split with) and its metrics (Java's ScanReport counters and stage timings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from planner_service.catalog.base import LoadedTable
from planner_service.expressions.expression import TRUE, Expression
from planner_service.metadata.table_metadata import Snapshot
from planner_service.metadata.types import PrimitiveType, Schema
from planner_service.planning.explain import Explain
from planner_service.planning.grouping import TaskGrouping
from planner_service.planning.options import SplitOptions
from planner_service.planning.planned_files import CombinedScanTask, FileScanTask, FileTaskColumns, combined_objects
from planner_service.planning.read_restriction import ScanRestriction
from planner_service.splitting.combine import CombinedTasks


@dataclass
class ScanMetrics:
    total_planning_ms: float = 0.0
    stage_ms: dict[str, float] = field(default_factory=dict)
    total_data_manifests: int = 0
    skipped_data_manifests: int = 0
    total_delete_manifests: int = 0
    skipped_delete_manifests: int = 0
    scanned_data_files: int = 0
    skipped_data_files: int = 0
    total_delete_files: int = 0  # indexed: the live delete files that may apply (Java's indexed-delete-files)
    skipped_delete_files: int = 0  # live delete files of the kept manifests that the filter rules out
    equality_delete_files: int = 0  # of the indexed ones: equality deletes, position delete files, DVs
    positional_delete_files: int = 0
    dvs: int = 0
    total_file_size_bytes: int = 0
    total_delete_file_size_bytes: int = 0
    cut_short: bool | None = None  # with a limit: whether the plan stopped before the last file


@dataclass(frozen=True, kw_only=True)
class ScanPlan:
    """Made by keyword and checked: tasks only of files, a grouping only of tasks, as many keys as tasks."""

    table: LoadedTable
    snapshot: Snapshot | None
    schema: Schema  # the scan's schema, projected to the selected columns and those the filter reads
    options: SplitOptions
    files: FileTaskColumns | None  # planFiles(), as columns (None: the table has no snapshot)
    combined: CombinedTasks | None  # planTasks(), as columns (None: not combined)
    metrics: ScanMetrics
    explain: Explain | None = None
    row_filter: Expression = TRUE  # the scan's filter, unbound
    case_sensitive: bool = True
    restriction: ScanRestriction | None = None  # the read restrictions it was planned under
    incremental: bool = False  # an incremental append scan (Java reports no ScanReport for those)
    grouping: TaskGrouping | None = None  # the tasks' partition keys, when grouped (planning/grouping.py)

    def __post_init__(self) -> None:
        if self.combined is not None and self.files is None:
            raise ValueError("A plan's tasks are of its files: tasks without files")
        if self.grouping is not None and (self.combined is None or len(self.grouping.task_key) != len(self.combined)):
            raise ValueError("A plan's grouping gives each of its tasks a key: the counts differ")

    @cached_property
    def non_null_field_ids(self) -> list[int]:
        """The top-level columns of `schema` known to hold no null in this scan: the required ones, and the
        optional primitive ones that every planned data file gives a null count of 0 (deletes remove rows and
        residuals keep some: neither adds a null). Nested fields keep their own required flags. Under read
        restrictions, the required ones alone: null counts count hidden rows too."""
        files = self.files
        proven = files.null_free if files is not None and len(files) and self.restriction is None else frozenset()
        return [
            f.field_id
            for f in self.schema.fields
            if f.required
            or (
                proven is not None
                and f.field_id in proven
                and isinstance(f.type, PrimitiveType)
                and f.type.kind != "unknown"
            )
        ]

    @cached_property
    def file_tasks(self) -> list[FileScanTask]:
        """planFiles() as objects (made on first use)."""
        return self.files.to_objects() if self.files is not None else []

    @cached_property
    def tasks(self) -> list[CombinedScanTask]:
        """planTasks() as objects (made on first use)."""
        return combined_objects(self.file_tasks, self.combined) if self.combined is not None else []

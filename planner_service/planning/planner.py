"""ScanPlanner: Iceberg Java's `table.newScan()...planTasks()` as a pipeline of named stages.

    context    choose the snapshot, bind the filter, project the schema, resolve options and grouping
    manifests  read the manifest list (manifest_reader.py, through its caches); data and delete manifests
    deletes    the delete manifests the filter may match, their live delete files pruned: a DeleteFileIndex
    files      the data manifests the filter may match, in Java's order, their live entries as one columnar
               index pruned in one pass, with each file's deletes and residual (planFiles)
    tasks      split, bin-pack and group (task_planning.py: planTasks)

Each stage's time lands in the plan's metrics; a cancelled plan stops at its next stage.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from planner_service.cache import LruCache
from planner_service.catalog.base import LoadedTable
from planner_service.deletes.index import DeleteFileIndex
from planner_service.errors import CorruptMetadataError
from planner_service.expressions.expression import TRUE
from planner_service.io.fileio import FileIO
from planner_service.metadata.content_file import EQUALITY_DELETES, ContentFile
from planner_service.metadata.file_index import FileIndex
from planner_service.metadata.manifest import ADDED
from planner_service.metadata.manifest_list import DATA_MANIFEST, DELETE_MANIFEST, ManifestFile
from planner_service.metadata.snapshot_choice import ChosenSnapshot, choose_appends, choose_snapshot
from planner_service.metadata.table_metadata import Snapshot, TableMetadata
from planner_service.metadata.types import Schema
from planner_service.numerals import ascii_int
from planner_service.planning.admission import Cancellation
from planner_service.planning.explain import Explain, manifest_reason
from planner_service.planning.grouping import TaskGrouping
from planner_service.planning.index_tier import IndexTier
from planner_service.planning.java_order import hashset_order
from planner_service.planning.manifest_reader import ManifestReader
from planner_service.planning.options import (
    SplitOptions,
    adapted_to_parallelism,
    adjusted_split_size,
    resolve_split_options,
    table_split_size,
)
from planner_service.planning.partition_checks import check_partitions
from planner_service.planning.planned_files import FileTaskColumns
from planner_service.planning.projection import project_schema
from planner_service.planning.read_restriction import masked_files
from planner_service.planning.row_filter import RowFilter
from planner_service.planning.scan_plan import ScanMetrics, ScanPlan
from planner_service.planning.scan_request import ScanRequest, filter_field_ids
from planner_service.planning.task_planning import GroupBy, plan_tasks
from planner_service.settings import default_manifest_threads
from planner_service.splitting.combine import BYTES_PER_RANGE, CombinedTasks, Packing, RangeBound

Rows = np.ndarray[Any, np.dtype[np.int64]]


@dataclass(frozen=True)
class PlannedTasks:
    """planTasks(): the tasks, how they are grouped (None: not grouped), and the split options that made them
    (the request's and the table's, adapted to Spark's parallelism)."""

    tasks: CombinedTasks
    grouping: TaskGrouping | None
    options: SplitOptions


@dataclass(frozen=True)
class PlanContext:
    """One plan's request resolved against its table, fixed once made; its metrics gather what the stages
    measure as they go."""

    table: LoadedTable
    request: ScanRequest
    chosen: ChosenSnapshot
    row_filter: RowFilter
    schema: Schema  # the scan's: projected to the selected columns and those the filter reads
    options: SplitOptions
    group_by: GroupBy
    cancel: Cancellation
    explain: Explain | None
    metrics: ScanMetrics = field(default_factory=ScanMetrics)
    started: float = field(default_factory=time.perf_counter)

    @classmethod
    def of(cls, table: LoadedTable, request: ScanRequest, cancel: Cancellation) -> PlanContext:
        meta = table.metadata
        chosen = (
            choose_snapshot(meta, request.snapshot)
            if request.appends is None
            else choose_appends(meta, request.appends)
        )
        read_ids = filter_field_ids(chosen.schema, request)  # (with a select: bound first, as given)
        # Java binds the filter to the specs' schema, the current one, even when time-travelling
        planned, judged, restriction = request.row_filter, None, request.restriction
        if restriction is not None:  # under read restrictions (planning/read_restriction.py)
            planned = restriction.planned_filter(meta.schema, request.row_filter, request.case_sensitive)
            judged = restriction.metrics_filter(meta.schema, request.row_filter, request.case_sensitive)
        row_filter = RowFilter(planned, meta.schema, meta.specs, request.case_sensitive, judged)
        filter_ids = row_filter.field_ids if read_ids is None else read_ids
        if restriction is not None:  # the reader evaluates the row filter: its columns are the plan's too
            filter_ids = set(filter_ids) | restriction.field_ids(meta.schema)
        schema = project_schema(chosen.schema, request.select, filter_ids, request.case_sensitive)
        return cls(
            table,
            request,
            chosen,
            row_filter,
            schema,
            resolve_split_options(request.options, meta.properties),
            # grouping keys are partition values and bounds of every row: none under read restrictions
            GroupBy.of("none" if restriction is not None else request.grouping, meta, schema, table.name),
            cancel,
            Explain(request.row_filter) if request.explain else None,
        )

    @property
    def meta(self) -> TableMetadata:
        return self.table.metadata

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """A stage of the plan, timed into its metrics; the plan stops before it once cancelled."""
        self.cancel.check()
        start = time.perf_counter()
        try:
            yield
        finally:
            self.metrics.stage_ms[name] = (time.perf_counter() - start) * 1000

    def answer(self, files: FileTaskColumns | None, planned: PlannedTasks | None = None) -> ScanPlan:
        if files is not None:
            if self.request.restriction is not None:
                files = masked_files(files, self.request.restriction, self.meta)
            self.metrics.total_planning_ms = (time.perf_counter() - self.started) * 1000
        return ScanPlan(
            table=self.table,
            snapshot=self.chosen.snapshot,
            schema=self.schema,
            options=self.options if planned is None else planned.options,
            files=files,
            combined=None if planned is None else planned.tasks,
            metrics=self.metrics,
            explain=self.explain,
            row_filter=self.request.row_filter,
            case_sensitive=self.request.case_sensitive,
            restriction=self.request.restriction,
            incremental=self.request.appends is not None,
            grouping=None if planned is None else planned.grouping,
        )


class ScanPlanner:
    def __init__(
        self,
        io: FileIO,
        cache_bytes: int = 512 * 1024 * 1024,
        threads: int | None = None,
        timeout_seconds: float | None = None,
        range_budget_bytes: int | None = None,
        memory_bytes: int | None = None,
        tier: IndexTier | None = None,
    ) -> None:
        """`timeout_seconds`: how long a plan may run before it stops (PlanTimeoutError); `range_budget_bytes`:
        the memory the ranges of a plan may take beyond those of the table's own split size, and
        `memory_bytes` the memory those may take at most (combine.RangeBound: a plan cut finer is refused
        before it is cut, TooManyRangesError); None: no limit. `tier`: the disk tier of decoded manifests
        (index_tier.py), or None."""
        self.io = io
        self.timeout_seconds = timeout_seconds
        self.range_budget_bytes = range_budget_bytes
        self.memory_bytes = memory_bytes
        self.manifests = ManifestReader(io, cache_bytes, threads or default_manifest_threads(), tier)

    def caches(self) -> dict[str, LruCache[Any]]:
        """The planner's caches by name, for metrics."""
        return self.manifests.caches()

    def close(self) -> None:
        self.manifests.close()

    def plan(self, table: LoadedTable, request: ScanRequest, cancel: Cancellation | None = None) -> ScanPlan:
        """The plan of `request`; stopped (PlanCancelledError) at its next stage once `cancel` is set, or
        (PlanTimeoutError) once it has run for the planner's timeout."""
        cancel = cancel or Cancellation()
        cancel.limit(self.timeout_seconds)
        context = PlanContext.of(table, request, cancel)
        if context.chosen.snapshot is None:
            return context.answer(None)
        data_manifests, delete_manifests = self._manifests(context, context.chosen.snapshot)
        deletes = self._delete_files(context, delete_manifests)
        files = self._data_files(context, data_manifests, deletes)
        if not request.combine:
            return context.answer(files)
        return context.answer(files, self._tasks(context, files))

    def estimated_files(self, snapshot: Snapshot | None) -> int:
        """The live data files of a snapshot (what a plan of it holds at most): its summary's total-data-files
        (Java writes it), else its manifest list's counts; 0 for a table without snapshots."""
        if snapshot is None or (snapshot.manifest_list is None and not snapshot.v1_manifests):
            return 0
        total = ascii_int(str(snapshot.summary.get("total-data-files", "")))
        if total is not None:
            return total
        return sum(
            (m.added_files_count or 0) + (m.existing_files_count or 0)
            for m in self.manifests.manifest_list(snapshot)
            if m.content == DATA_MANIFEST
        )

    def estimated_extra_ranges(
        self, table: LoadedTable, snapshot: Snapshot | None, options: Mapping[str, object] | None
    ) -> int:
        """How many more ranges than files a plan of `snapshot` cuts at most, with the split size of `options`
        (the request's read options) or the table's: the snapshot's total-files-size (Java writes it) over the
        split size; 0 when the summary does not say. InvalidOptionError for options that are not."""
        total = ascii_int(str(snapshot.summary.get("total-files-size", ""))) if snapshot is not None else None
        if total is None:
            return 0
        return total // resolve_split_options(options, table.metadata.properties).split_size

    # -- stages ---------------------------------------------------------------------------------------

    def _manifests(self, context: PlanContext, snapshot: Snapshot) -> tuple[list[ManifestFile], list[ManifestFile]]:
        """The snapshot's data and delete manifests; an incremental append scan's: the appends' own data
        manifests, no deletes (BaseIncrementalAppendScan)."""
        with context.stage("manifest_list"):
            if context.chosen.appends is None:
                manifests = self.manifests.manifest_list(snapshot)
            else:
                appends = context.chosen.appends
                manifests = self.manifests.appended_manifests(appends, frozenset(s.snapshot_id for s in appends))
        _check_specs(manifests, context.table)
        data = [m for m in manifests if m.content == DATA_MANIFEST]
        deletes = [m for m in manifests if m.content == DELETE_MANIFEST]
        context.metrics.total_data_manifests, context.metrics.total_delete_manifests = len(data), len(deletes)
        return data, deletes

    def _delete_files(self, context: PlanContext, manifests: list[ManifestFile]) -> DeleteFiles:
        """Live delete files of the scanned delete manifests (those the filter may match), in Java's load order;
        pruned by the filter with their own partition and column stats, as DeleteFileIndex does."""
        metrics, row_filter = context.metrics, context.row_filter
        with context.stage("delete_index"):
            scanned = [m for m in hashset_order(manifests, _path) if _may_have_files(m, row_filter)]
            metrics.skipped_delete_manifests = len(manifests) - len(scanned)
            out: list[ContentFile] = []
            if scanned:
                origins = None if context.explain is None else context.explain.read_from
                index = self.manifests.index(scanned, context.cancel, origins=origins)
                rows = np.flatnonzero(row_filter.file_mask(index))
                # DeleteFileIndex: only deletes with a sequence number > minSequenceNumber (0) apply
                out = [f for f in index.content_files(rows, with_stats=True) if (f.data_sequence_number or 0) > 0]
                _check_unique_deletes(out)
                metrics.skipped_delete_files = len(index) - len(rows)
                metrics.total_delete_files = len(out)
                metrics.equality_delete_files = sum(1 for f in out if f.content == EQUALITY_DELETES)
                metrics.dvs = sum(1 for f in out if f.is_dv)
                metrics.positional_delete_files = len(out) - metrics.equality_delete_files - metrics.dvs
                metrics.total_delete_file_size_bytes = sum(f.file_size_in_bytes for f in out)
            return DeleteFiles(out, DeleteFileIndex(context.meta.specs, context.meta.schema, out))

    def _data_files(self, context: PlanContext, manifests: list[ManifestFile], deletes: DeleteFiles) -> FileTaskColumns:
        """planFiles(): the live data files of the scanned manifests that might match, in Java's order
        (ManifestGroup), with the deletes that apply and their residuals, up to the request's limit."""
        with context.stage("data_files"):
            files = self._matching_files(context, manifests, deletes)
            if context.request.limit is not None:
                files = _cut_at_rows(files, context.request.limit, context.metrics)
            meta = context.meta
            check_partitions(
                [(d.spec_id, d.partition) for d in deletes.files],
                meta.specs,
                meta.schema,
                lambda p: next(d.path for d in deletes.files if (d.spec_id, d.partition) == p),
            )
            return files

    def _matching_files(
        self, context: PlanContext, manifests: list[ManifestFile], deletes: DeleteFiles
    ) -> FileTaskColumns:
        """The scanned manifests' live data files the filter might match; with an incremental append scan, only
        the entries ADDED by its snapshots. A plan that keeps fewer than half the files holds its own copy of
        them, not the index of every file."""
        row_filter, metrics, explain, meta = context.row_filter, context.metrics, context.explain, context.meta
        appends = context.chosen.appends
        added_in = None if appends is None else np.fromiter((s.snapshot_id for s in appends), np.int64)
        ordered = hashset_order(manifests, _path)
        scanned = [m for m in ordered if _may_have_files(m, row_filter)]
        metrics.skipped_data_manifests = len(manifests) - len(scanned)
        if explain is not None:
            for m in ordered:
                explain.manifest(m, *manifest_reason(m, row_filter))
        # column statistics are decoded only when something reads them: the filter's metrics pruning,
        # explain, equality deletes (matched against the data files' bounds), or sort-order grouping
        with_stats = (
            context.request.keep_stats
            or context.group_by.reads_bounds
            or not row_filter.is_true
            or explain is not None
            or deletes.index.has_equality_deletes
        )

        def matching_rows(index: FileIndex) -> Rows:
            might = row_filter.file_mask(index)
            if added_in is not None:
                might &= (index.ints("status") == ADDED) & np.isin(index.ints("snapshot_id"), added_in)
            index.memo(  # once per index and table metadata: not again when cached
                f"partitions checked for {context.table.metadata_location}",
                lambda: check_partitions(index.partitions, meta.specs, meta.schema, partial(_file_with, index)),
            )
            if explain is not None:
                explain.data_files_of(index, row_filter)
            return np.flatnonzero(might).astype(np.int64)

        prunes = not row_filter.is_true or added_in is not None
        origins = None if explain is None else explain.read_from
        # a filter's fields, when the tier may hold their statistics apart: (a plan that explains reads more)
        fields = row_filter.bound_fields if added_in is None and explain is None else []
        pruned = self.manifests.tier_pruned_index(scanned, fields, matching_rows, context.cancel) if prunes else None
        if pruned is not None:
            index, considered = pruned
            rows = np.arange(len(index), dtype=np.int64)
        elif prunes and self.manifests.streams(scanned, with_stats):
            index, considered = self.manifests.pruned_index(
                scanned, with_stats, matching_rows, context.cancel, origins, fields
            )
            rows = np.arange(len(index), dtype=np.int64)
        else:
            index = self.manifests.index(scanned, context.cancel, with_stats, origins)
            context.cancel.check()
            rows, considered = matching_rows(index), len(index)
            self.manifests.keep_fields(scanned, index, fields)
            if len(rows) * 2 < len(index):  # the plan keeps its own rows, not the snapshot's whole index
                index, rows = index.take(rows), np.arange(len(rows), dtype=np.int64)
        metrics.scanned_data_files = len(rows)
        metrics.skipped_data_files = considered - len(rows)
        metrics.total_file_size_bytes = int(index.ints("file_size_in_bytes")[rows].sum())
        residual_id, residuals = row_filter.residuals(index, rows)
        if deletes.index.is_empty:
            return FileTaskColumns(index, rows, residual_id, residuals)
        return FileTaskColumns(
            index, rows, residual_id, residuals, *_attach_deletes(index, rows, deletes.files, deletes.index)
        )

    def _tasks(self, context: PlanContext, files: FileTaskColumns) -> PlannedTasks:
        """planTasks(): the files split and packed with the scan's options, adapted to Spark's parallelism;
        stopped inside its compiled loops once the plan is cancelled or out of time."""
        with context.stage("split_and_pack"):
            request, properties = context.request, context.meta.properties
            scan_bytes = files.scan_bytes()
            options = adapted_to_parallelism(
                context.options, request.parallelism, scan_bytes, request.options, properties
            )
            packing = Packing(
                split_size=options.split_size,
                lookback=options.lookback,
                open_file_cost=options.open_file_cost,
                bound=self._range_bound(context, scan_bytes),
                stop=context.cancel.stop(),
            )
            return PlannedTasks(*plan_tasks(files, packing, context.group_by), options)

    def _range_bound(self, context: PlanContext, scan_bytes: int) -> RangeBound | None:
        """What the plan's ranges are bounded by: the table's own split size (without the request's options, as
        Spark's parallelism adapts it), the memory budget for more, the service's memory for all."""
        if self.range_budget_bytes is None:
            return None
        properties = context.meta.properties
        own = adjusted_split_size(table_split_size(properties), context.request.parallelism, scan_bytes, properties)
        most = None if self.memory_bytes is None else self.memory_bytes // BYTES_PER_RANGE
        return RangeBound(own, self.range_budget_bytes // BYTES_PER_RANGE, most)


@dataclass(frozen=True)
class DeleteFiles:
    """The plan's live delete files, in Java's load order, and their index by what they apply to."""

    files: list[ContentFile]
    index: DeleteFileIndex


def _attach_deletes(
    index: FileIndex, rows: np.ndarray[Any, Any], deletes: list[ContentFile], delete_index: DeleteFileIndex
) -> tuple[tuple[ContentFile, ...], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """(delete files that apply to some file, in order of first use; per-file offsets; references)."""
    position = {id(d): i for i, d in enumerate(deletes)}
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    refs: list[int] = []
    data_files = index.content_files(rows, with_stats=delete_index.has_equality_deletes)
    for i, f in enumerate(data_files):
        refs.extend(position[id(d)] for d in delete_index.for_data_file(f))
        offsets[i + 1] = len(refs)
    used = list(dict.fromkeys(refs))
    renumber = {old: new for new, old in enumerate(used)}
    return tuple(deletes[i] for i in used), offsets, np.fromiter((renumber[r] for r in refs), np.int64, len(refs))


def _cut_at_rows(files: FileTaskColumns, limit: int, metrics: ScanMetrics) -> FileTaskColumns:
    """The files up to the first one by which the files whose every row matches (no residual, no deletes)
    hold `limit` records, in planFiles() order; all of them when they never do (or deletes apply)."""
    metrics.cut_short = False
    if files.delete_offsets is not None or not len(files):
        return files
    exact = np.array([r is TRUE for r in files.residuals], dtype=bool)[files.residual_id]
    held = np.cumsum(np.where(exact, files.index.ints("record_count")[files.rows], 0))
    last = int(np.searchsorted(held, max(limit, 1)))  # the first file at which `held` reaches limit
    if last + 1 >= len(files):
        return files
    rows = files.rows[: last + 1]
    metrics.cut_short = True
    metrics.scanned_data_files = len(rows)
    metrics.total_file_size_bytes = int(files.index.ints("file_size_in_bytes")[rows].sum())
    return replace(files, rows=rows, residual_id=files.residual_id[: last + 1])


def _check_unique_deletes(deletes: list[ContentFile]) -> None:
    """A delete file (a deletion vector: a blob of a Puffin file, at its offset) is live once: listed twice,
    perhaps with another partition, which copy applies where is a guess (Java applies each by its own)."""
    seen: set[tuple[str, int | None]] = set()
    for d in deletes:
        key = (d.path, d.content_offset)
        if key in seen:
            where = "" if d.content_offset is None else f" (at offset {d.content_offset})"
            raise CorruptMetadataError(f"Delete file {d.path}{where} is live more than once in the delete manifests")
        seen.add(key)


def _file_with(index: FileIndex, partition: tuple[int, tuple[Any, ...]]) -> str:
    """The path of the first file of `index` in `partition`."""
    row = int(np.flatnonzero(index.partition_id == index.partitions.index(partition))[0])
    return index.paths(np.array([row], np.int64))[0]


def _check_specs(manifests: list[ManifestFile], table: LoadedTable) -> None:
    """Every manifest's partition spec is one of the table's (Java fails on a null spec otherwise)."""
    for m in manifests:
        if m.partition_spec_id not in table.metadata.specs:
            raise CorruptMetadataError(
                f"Manifest {m.manifest_path} has partition_spec_id {m.partition_spec_id}, a spec that table "
                f"metadata {table.metadata_location} does not have"
            )


def _may_have_files(m: ManifestFile, row_filter: RowFilter) -> bool:
    """ManifestGroup: live files (added or existing) whose partitions might match the filter."""
    return m.has_added_or_existing_files and row_filter.manifest_might_match(m)


def _path(m: ManifestFile) -> str:
    return m.manifest_path

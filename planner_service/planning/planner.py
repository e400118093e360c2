"""ScanPlanner: Iceberg Java's `table.newScan()...planTasks()` as a pipeline of named stages.

choose snapshot -> read manifest list -> order manifests as Java does -> index delete files
-> read data manifests, keep live entries -> attach deletes -> split, bin-pack, merge
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from planner_service.catalog.base import LoadedTable
from planner_service.deletes.index import DeleteFileIndex
from planner_service.errors import PlannerError, StorageError
from planner_service.expressions.expression import TRUE, Expression
from planner_service.io.fileio import FileIO, FileNotFound
from planner_service.metadata.content_file import ContentFile
from planner_service.metadata.manifest import ManifestEntries, read_manifest
from planner_service.metadata.manifest_list import DATA, DELETES, ManifestFile, read_manifest_list
from planner_service.metadata.snapshot_choice import SnapshotChoice, choose_snapshot
from planner_service.metadata.table_metadata import Snapshot
from planner_service.metadata.types import Schema
from planner_service.planning.cache import LruCache
from planner_service.planning.explain import Explain, file_reasons, manifest_reason
from planner_service.planning.gc_pause import gc_paused
from planner_service.planning.java_order import hashset_order
from planner_service.planning.options import SplitOptions, resolve_split_options
from planner_service.planning.row_filter import RowFilter
from planner_service.planning.scan_tasks import CombinedScanTask, FileScanTask
from planner_service.splitting.combine import plan_tasks


@dataclass(frozen=True)
class ScanRequest:
    snapshot: SnapshotChoice = field(default_factory=SnapshotChoice)
    options: Mapping[str, object] | None = None
    row_filter: Expression = TRUE  # unbound; bound against the table's current schema, as Java does
    case_sensitive: bool = True
    explain: bool = False  # record why each manifest and data file was kept or skipped
    combine: bool = True  # split and bin-pack into CombinedScanTasks (planTasks); False: planFiles only


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
    total_delete_files: int = 0
    total_file_size_bytes: int = 0
    total_delete_file_size_bytes: int = 0


@dataclass(frozen=True)
class ScanPlan:
    table: LoadedTable
    snapshot: Snapshot | None
    schema: Schema
    options: SplitOptions
    file_tasks: list[FileScanTask]
    tasks: list[CombinedScanTask]
    metrics: ScanMetrics
    explain: Explain | None = None
    row_filter: Expression = TRUE  # the scan's filter, unbound


class ScanPlanner:
    def __init__(self, io: FileIO, cache_bytes: int = 512 * 1024 * 1024, threads: int = 4) -> None:
        self.io = io
        self._manifest_lists: LruCache[list[ManifestFile]] = LruCache(cache_bytes // 8, lambda m: 512 * len(m) + 1)
        self._manifests: LruCache[ManifestEntries] = LruCache(cache_bytes, _manifest_weight)
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="manifest-reader")

    def caches(self) -> dict[str, LruCache[Any]]:
        """The planner's caches by name, for metrics."""
        return {"manifest-lists": self._manifest_lists, "manifests": self._manifests}

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def plan(self, table: LoadedTable, request: ScanRequest) -> ScanPlan:
        with gc_paused():
            return self._plan(table, request)

    def _plan(self, table: LoadedTable, request: ScanRequest) -> ScanPlan:
        started = time.perf_counter()
        metrics = ScanMetrics()
        meta = table.metadata
        options = resolve_split_options(request.options, meta.properties)
        chosen = choose_snapshot(meta, request.snapshot)
        # Java binds the filter to the specs' schema, the current one, even when time-travelling
        row_filter = RowFilter(request.row_filter, meta.schema, meta.specs, request.case_sensitive)
        if chosen.snapshot is None:
            return ScanPlan(table, None, chosen.schema, options, [], [], metrics, row_filter=request.row_filter)

        with _timed(metrics, "manifest_list"):
            manifests = self._manifest_list(chosen.snapshot)
        data_manifests = [m for m in manifests if m.content == DATA]
        delete_manifests = [m for m in manifests if m.content == DELETES]
        metrics.total_data_manifests, metrics.total_delete_manifests = len(data_manifests), len(delete_manifests)

        with _timed(metrics, "delete_index"):
            deletes = self._delete_files(delete_manifests, row_filter, metrics)
            delete_index = DeleteFileIndex(meta.specs, meta.schema, deletes)
        with _timed(metrics, "data_files"):
            explain = Explain(request.row_filter) if request.explain else None
            file_tasks = list(self._file_tasks(data_manifests, delete_index, row_filter, metrics, explain))
        tasks: list[CombinedScanTask] = []
        if request.combine:
            with _timed(metrics, "split_and_pack"):
                tasks = plan_tasks(file_tasks, options.split_size, options.lookback, options.open_file_cost)
        metrics.total_planning_ms = (time.perf_counter() - started) * 1000
        return ScanPlan(
            table, chosen.snapshot, chosen.schema, options, file_tasks, tasks, metrics, explain, request.row_filter
        )

    # -- stages ---------------------------------------------------------------------------------------

    def _manifest_list(self, snapshot: Snapshot) -> list[ManifestFile]:
        location = snapshot.manifest_list
        if location is None:
            raise PlannerError(f"Snapshot {snapshot.snapshot_id} has no manifest list (v1 manifests field)")
        return self._manifest_lists.get_or_load(location, lambda: read_manifest_list(self._read(location), location))

    def _delete_files(
        self, manifests: list[ManifestFile], row_filter: RowFilter, metrics: ScanMetrics
    ) -> Iterator[ContentFile]:
        """Live delete files of the kept delete manifests, in Java's load order; pruned by the filter with
        their own partition and column stats, as DeleteFileIndex does."""
        kept = [m for m in hashset_order(manifests, _path) if _may_have_files(m, row_filter)]
        metrics.skipped_delete_manifests = len(manifests) - len(kept)
        for entries in self._load_all(kept):
            for f in row_filter.kept(entries, entries.live_files(with_stats=True)):
                if (f.data_sequence_number or 0) > 0:  # DeleteFileIndex: seq > minSequenceNumber (0)
                    metrics.total_delete_files += 1
                    metrics.total_delete_file_size_bytes += f.file_size_in_bytes
                    yield f

    def _file_tasks(
        self,
        manifests: list[ManifestFile],
        deletes: DeleteFileIndex,
        row_filter: RowFilter,
        metrics: ScanMetrics,
        explain: Explain | None = None,
    ) -> Iterator[FileScanTask]:
        ordered = hashset_order(manifests, _path)
        kept = [m for m in ordered if _may_have_files(m, row_filter)]
        metrics.skipped_data_manifests = len(manifests) - len(kept)
        if explain is not None:
            for m in ordered:
                explain.manifest(m, *manifest_reason(m, row_filter))
        with_stats = deletes.has_equality_deletes  # equality-delete pruning compares data-file bounds
        for entries in self._load_all(kept):
            live = entries.live_files(with_stats=with_stats)
            if explain is not None:
                for f, (kept_file, reason) in zip(live, file_reasons(entries, live, row_filter), strict=True):
                    explain.data_file(f, kept_file, reason)
            scanned = 0
            for f in row_filter.kept(entries, live):
                scanned += 1
                metrics.total_file_size_bytes += f.file_size_in_bytes
                applied = tuple(deletes.for_data_file(f)) if not deletes.is_empty else ()
                yield FileScanTask(f, applied, 0, f.file_size_in_bytes, row_filter.residual(f))
            metrics.scanned_data_files += scanned
            metrics.skipped_data_files += len(live) - scanned

    # -- I/O ------------------------------------------------------------------------------------------

    def _load_all(self, manifests: Iterable[ManifestFile]) -> Iterator[ManifestEntries]:
        """Manifests in the given order, decoded in parallel (polars releases the GIL while decoding)."""
        yield from self._pool.map(self._manifest, manifests)

    def _manifest(self, manifest: ManifestFile) -> ManifestEntries:
        path = manifest.manifest_path
        return self._manifests.get_or_load(path, lambda: read_manifest(self._read(path), manifest, path))

    def _read(self, location: str) -> bytes:
        try:
            return self.io.read(location)
        except FileNotFound:
            raise StorageError(f"Metadata file is missing: {location}") from None


def _manifest_weight(entries: ManifestEntries) -> int:
    # the frame plus the ContentFile objects made from it (about twice the frame's size)
    return 3 * int(entries.frame.estimated_size())


def _may_have_files(m: ManifestFile, row_filter: RowFilter) -> bool:
    """ManifestGroup: live files (added or existing) whose partitions might match the filter."""
    return m.has_added_or_existing_files and row_filter.manifest_might_match(m)


def _path(m: ManifestFile) -> str:
    return m.manifest_path


class _timed:
    def __init__(self, metrics: ScanMetrics, stage: str) -> None:
        self.metrics, self.stage = metrics, stage

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.metrics.stage_ms[self.stage] = (time.perf_counter() - self.start) * 1000

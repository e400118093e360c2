"""ScanPlanner: Iceberg Java's `table.newScan()...planTasks()` as a pipeline of named stages.

choose snapshot -> read manifest list -> order manifests as Java does -> index delete files
-> assemble the kept data manifests' live entries into one columnar index -> prune it in one pass
-> attach deletes and residuals -> split, bin-pack, merge (all over columns)
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

import numpy as np

from planner_service.allocator import release_free_memory
from planner_service.cache import LruCache
from planner_service.catalog.base import LoadedTable
from planner_service.deletes.index import DeleteFileIndex
from planner_service.errors import CorruptMetadataError, MissingFileError
from planner_service.expressions.expression import TRUE
from planner_service.io.fileio import FileIO, FileNotFound
from planner_service.metadata.content_file import EQUALITY_DELETES, ContentFile
from planner_service.metadata.file_index import FileIndex
from planner_service.metadata.manifest import ADDED, ManifestBlocks, live_entries, live_statistics, read_manifest
from planner_service.metadata.manifest_list import DATA_MANIFEST, DELETE_MANIFEST, ManifestFile, read_manifest_list
from planner_service.metadata.snapshot_choice import choose_appends, choose_snapshot
from planner_service.metadata.table_metadata import Snapshot
from planner_service.planning.admission import Cancellation
from planner_service.planning.explain import Explain, manifest_reason
from planner_service.planning.grouping import group_tasks
from planner_service.planning.java_order import hashset_order
from planner_service.planning.options import adapted_to_parallelism, resolve_split_options
from planner_service.planning.partition_checks import check_partitions
from planner_service.planning.projection import project_schema
from planner_service.planning.row_filter import RowFilter
from planner_service.planning.scan_plan import ScanMetrics, ScanPlan
from planner_service.planning.scan_request import ScanRequest
from planner_service.planning.scan_tasks import FileTaskColumns
from planner_service.planning.sort_grouping import order_tasks
from planner_service.planning.sort_ranges import table_sort_key
from planner_service.splitting.combine import combine

T = TypeVar("T")
MAX_DECODE_CHUNK = 64  # manifests read and decoded together by one thread, at most
RELEASE_AFTER_MANIFESTS = 16  # decoding this many manifests or more returns the freed memory to the system
# a live file's decoded entry in memory, about (what decides whether a pruning plan streams its manifests)
INDEX_BYTES_PER_FILE, INDEX_BYTES_PER_FILE_WITH_STATS = 256, 512
STREAM_GROUP_BYTES = 24 * 1024 * 1024  # decoded manifests a streaming plan holds at once, about


class ScanPlanner:
    def __init__(self, io: FileIO, cache_bytes: int = 512 * 1024 * 1024, threads: int = 4) -> None:
        self.io = io
        self._manifest_lists: LruCache[list[ManifestFile]] = LruCache(cache_bytes // 8, lambda m: 512 * len(m) + 1)
        self._manifests: LruCache[FileIndex] = LruCache(cache_bytes, lambda index: index.nbytes)
        # a snapshot's (or a filter's) kept manifests assembled: shares the manifests' buffers, adds row arrays
        self._indexes: LruCache[FileIndex] = LruCache(cache_bytes // 4, lambda i: 48 * len(i) + 1024)
        self._threads = threads
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="manifest-reader")

    def caches(self) -> dict[str, LruCache[Any]]:
        """The planner's caches by name, for metrics."""
        return {"manifest-lists": self._manifest_lists, "manifests": self._manifests, "file-indexes": self._indexes}

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def plan(self, table: LoadedTable, request: ScanRequest, cancel: Cancellation | None = None) -> ScanPlan:
        """The plan of `request`; stopped (PlanCancelledError) at its next step once `cancel` is set."""
        cancel = cancel or Cancellation()
        started = time.perf_counter()
        metrics = ScanMetrics()
        meta = table.metadata
        options = resolve_split_options(request.options, meta.properties)
        sort_key = table_sort_key(meta, table.name) if request.grouping == "sort-order" else None
        chosen = (
            choose_snapshot(meta, request.snapshot)
            if request.appends is None
            else choose_appends(meta, request.appends)
        )
        # Java binds the filter to the specs' schema, the current one, even when time-travelling
        row_filter = RowFilter(request.row_filter, meta.schema, meta.specs, request.case_sensitive)
        schema = project_schema(chosen.schema, request.select, row_filter.field_ids, request.case_sensitive)
        if chosen.snapshot is None:
            return ScanPlan(
                table,
                None,
                schema,
                options,
                None,
                None,
                metrics,
                row_filter=request.row_filter,
                case_sensitive=request.case_sensitive,
                incremental=request.appends is not None,
            )

        added_in: frozenset[int] | None = None
        with _timed(metrics, "manifest_list"):
            if chosen.appends is None:
                manifests = self._manifest_list(chosen.snapshot)
            else:  # BaseIncrementalAppendScan: the appends' own data manifests, their added entries, no deletes
                added_in = frozenset(s.snapshot_id for s in chosen.appends)
                manifests = self._appended_manifests(chosen.appends, added_in)
        _check_specs(manifests, table)
        data_manifests = [m for m in manifests if m.content == DATA_MANIFEST]
        delete_manifests = [m for m in manifests if m.content == DELETE_MANIFEST]
        metrics.total_data_manifests, metrics.total_delete_manifests = len(data_manifests), len(delete_manifests)

        cancel.check()
        with _timed(metrics, "delete_index"):
            deletes = self._delete_files(delete_manifests, row_filter, metrics, cancel)
            delete_index = DeleteFileIndex(meta.specs, meta.schema, deletes)
        with _timed(metrics, "data_files"):
            explain = Explain(request.row_filter) if request.explain else None

            def check(index: FileIndex) -> None:  # once per index and table metadata: not again when cached
                index.memo(
                    f"partitions checked for {table.metadata_location}",
                    lambda: check_partitions(index.partitions, meta.specs, meta.schema, partial(_file_with, index)),
                )

            files = self._data_files(
                data_manifests,
                deletes,
                delete_index,
                row_filter,
                metrics,
                explain,
                cancel,
                check,
                added_in,
                request.keep_stats or sort_key is not None,  # (sort-order grouping reads the files' bounds)
            )
            if request.limit is not None:
                files = _cut_at_rows(files, request.limit, metrics)
            check_partitions(
                [(d.spec_id, d.partition) for d in deletes],
                meta.specs,
                meta.schema,
                lambda p: next(d.path for d in deletes if (d.spec_id, d.partition) == p),
            )
        cancel.check()
        combined, grouping = None, None
        if request.combine:
            with _timed(metrics, "split_and_pack"):
                options = adapted_to_parallelism(
                    options, request.parallelism, files.scan_bytes(), request.options, meta.properties
                )
                # (the columns are combine's alone: it lets the split offsets go before it merges the tasks)
                split = (options.split_size, options.lookback, options.open_file_cost)
                if request.grouping == "partition":
                    combined, grouping = group_tasks(
                        files.index, files.rows, meta.specs, schema, files.columns(), *split
                    )
                elif sort_key is not None:
                    combined, grouping = order_tasks(
                        files.index, files.rows, meta.specs, schema, sort_key, files.columns(), split[0], split[2]
                    )
                else:
                    combined = combine(files.columns(), *split)
        metrics.total_planning_ms = (time.perf_counter() - started) * 1000
        return ScanPlan(
            table,
            chosen.snapshot,
            schema,
            options,
            files,
            combined,
            metrics,
            explain,
            request.row_filter,
            request.case_sensitive,
            request.appends is not None,
            grouping,
        )

    def _appended_manifests(self, appends: tuple[Snapshot, ...], added_in: frozenset[int]) -> list[ManifestFile]:
        """The data manifests of the append snapshots that one of them added, each once (by path)."""
        out: dict[str, ManifestFile] = {}
        for snapshot in appends:
            for m in self._manifest_list(snapshot):
                if m.content == DATA_MANIFEST and m.added_snapshot_id in added_in:
                    out.setdefault(m.manifest_path, m)
        return list(out.values())

    def estimated_files(self, snapshot: Snapshot | None) -> int:
        """The live data files of a snapshot (what a plan of it holds at most): its summary's total-data-files
        (Java writes it), else its manifest list's counts; 0 for a table without snapshots."""
        if snapshot is None or (snapshot.manifest_list is None and not snapshot.v1_manifests):
            return 0
        total = snapshot.summary.get("total-data-files", "")
        if total.isdigit():
            return int(total)
        manifests = self._manifest_list(snapshot)
        return sum(
            (m.added_files_count or 0) + (m.existing_files_count or 0) for m in manifests if m.content == DATA_MANIFEST
        )

    # -- stages ---------------------------------------------------------------------------------------

    def _manifest_list(self, snapshot: Snapshot) -> list[ManifestFile]:
        location = snapshot.manifest_list
        if location is None:
            return [_v1_manifest(path, snapshot.snapshot_id) for path in snapshot.v1_manifests]
        return self._manifest_lists.get_or_load(
            location, lambda: read_manifest_list(self._read(location), location, self.io.max_inflated)
        )

    def _delete_files(
        self, manifests: list[ManifestFile], row_filter: RowFilter, metrics: ScanMetrics, cancel: Cancellation
    ) -> list[ContentFile]:
        """Live delete files of the kept delete manifests, in Java's load order; pruned by the filter with
        their own partition and column stats, as DeleteFileIndex does."""
        kept = [m for m in hashset_order(manifests, _path) if _may_have_files(m, row_filter)]
        metrics.skipped_delete_manifests = len(manifests) - len(kept)
        if not kept:
            return []
        index = self._index(kept, cancel)
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
        return out

    def _data_files(
        self,
        manifests: list[ManifestFile],
        deletes: list[ContentFile],
        delete_index: DeleteFileIndex,
        row_filter: RowFilter,
        metrics: ScanMetrics,
        explain: Explain | None,
        cancel: Cancellation,
        check: Callable[[FileIndex], None],
        added_in: frozenset[int] | None = None,
        keep_stats: bool = False,
    ) -> FileTaskColumns:
        """The live data files of the kept manifests that might match, in Java's order (ManifestGroup);
        with `added_in`, only the entries ADDED by those snapshots (an incremental append scan). `check`
        checks an index's partitions. A plan that keeps fewer than half the files holds its own copy of
        them, not the index of every file."""
        ordered = hashset_order(manifests, _path)
        kept = [m for m in ordered if _may_have_files(m, row_filter)]
        metrics.skipped_data_manifests = len(manifests) - len(kept)
        if explain is not None:
            for m in ordered:
                explain.manifest(m, *manifest_reason(m, row_filter))
        # column statistics are decoded only when something reads them: the filter's metrics pruning,
        # explain, or equality deletes (matched against the data files' bounds)
        with_stats = keep_stats or not row_filter.is_true or explain is not None or delete_index.has_equality_deletes

        def kept_rows(index: FileIndex) -> np.ndarray[Any, np.dtype[np.int64]]:
            might = row_filter.file_mask(index)
            if added_in is not None:
                added = index.ints("status") == ADDED
                might &= added & np.isin(index.ints("snapshot_id"), np.fromiter(added_in, np.int64, len(added_in)))
            check(index)
            if explain is not None:
                explain.data_files_of(index, row_filter)
            return np.flatnonzero(might).astype(np.int64)

        prunes = not row_filter.is_true or added_in is not None
        if prunes and self._streamed(kept, with_stats):
            index, considered = self._pruned_index(kept, with_stats, kept_rows, cancel)
            rows = np.arange(len(index), dtype=np.int64)
        else:
            index = self._index(kept, cancel, with_stats)
            cancel.check()
            rows, considered = kept_rows(index), len(index)
            if len(rows) * 2 < len(index):  # the plan keeps its own rows, not the snapshot's whole index
                index, rows = index.take(rows), np.arange(len(rows), dtype=np.int64)
        metrics.scanned_data_files = len(rows)
        metrics.skipped_data_files = considered - len(rows)
        metrics.total_file_size_bytes = int(index.ints("file_size_in_bytes")[rows].sum())
        residual_id, residuals = row_filter.residuals(index, rows)
        if delete_index.is_empty:
            return FileTaskColumns(index, rows, residual_id, residuals)
        return FileTaskColumns(
            index, rows, residual_id, residuals, *_attach_deletes(index, rows, deletes, delete_index)
        )

    def _streamed(self, manifests: list[ManifestFile], with_stats: bool) -> bool:
        """Whether the manifests' index would not fit the manifest cache (and is not assembled already): a
        pruning plan then decodes and prunes them a group at a time, holding only what it keeps."""
        if _estimated_bytes(manifests, with_stats) <= self._manifests.max_bytes:
            return False
        return self._indexes.get(f"{_index_key(manifests)}+stats") is None

    def _pruned_index(
        self,
        manifests: list[ManifestFile],
        with_stats: bool,
        kept_rows: Callable[[FileIndex], np.ndarray[Any, np.dtype[np.int64]]],
        cancel: Cancellation,
    ) -> tuple[FileIndex, int]:
        """(the rows of the manifests' live entries that `kept_rows` keeps, as one index; how many rows there
        were): groups of about STREAM_GROUP_BYTES of manifests decoded, pruned and let go in turn; the
        manifest cache keeps what fits beside what it holds, evicting nothing."""
        parts, considered = [], 0
        for group in _groups(manifests, with_stats):
            index = _of_their_content(group, self._live_entries(group, with_stats, cancel, evict=False))
            cancel.check()
            considered += len(index)
            parts.append(index.take(kept_rows(index)))
            del index
        release_free_memory()
        return FileIndex.concat(parts), considered

    def _index(self, manifests: list[ManifestFile], cancel: Cancellation, with_stats: bool = True) -> FileIndex:
        """The live entries of `manifests`, in their order, as one index (kept for the same manifests);
        with their column statistics or, when not `with_stats`, perhaps without."""
        key = _index_key(manifests)
        complete = self._indexes.get(f"{key}+stats")
        if complete is not None:
            return complete
        if with_stats:  # the index without statistics goes: its manifests' frames are freed as they are replaced
            self._indexes.discard(key)
        return self._indexes.get_or_load(
            f"{key}+stats" if with_stats else key,
            lambda: _of_their_content(manifests, self._live_entries(manifests, with_stats, cancel)),
        )

    # -- I/O ------------------------------------------------------------------------------------------

    def _live_entries(
        self, manifests: list[ManifestFile], with_stats: bool, cancel: Cancellation, evict: bool = True
    ) -> list[FileIndex]:
        """Each manifest's live entries, from the cache or decoded: chunks of manifests read, decompressed
        and decoded by the pool's threads, each chunk on its own (the decoder releases the GIL). A cached
        manifest decoded without statistics takes them on when they are wanted (decoded alone, the rest
        of its columns shared) and replaces itself in the cache. Without `evict`, the cache keeps what fits
        beside what it holds."""
        found = [self._manifests.get(_decoded_key(m)) for m in manifests]
        missing = [i for i, index in enumerate(found) if index is None]
        lacking = [i for i, index in enumerate(found) if index is not None and with_stats and not index.has_stats]
        for work, wanted in (
            (partial(self._decode_chunk, with_stats=with_stats), missing),
            (self._stats_chunk, lacking),
        ):
            size = _chunk_size(len(wanted), self._threads)
            chunks = [wanted[begin : begin + size] for begin in range(0, len(wanted), size)]
            futures = [self._pool.submit(work, ([manifests[i] for i in c], [found[i] for i in c])) for c in chunks]
            for chunk, future in zip(chunks, futures, strict=True):
                if cancel.cancelled:  # the chunks not started are dropped, those running finish unkept
                    for pending in futures:
                        pending.cancel()
                    cancel.check()
                for i, index in zip(chunk, future.result(), strict=True):
                    self._manifests.put(_decoded_key(manifests[i]), index, evict)
                    found[i] = index
        if len(missing) + len(lacking) >= RELEASE_AFTER_MANIFESTS:
            release_free_memory()  # the inflated blocks and decoding buffers, left in the threads' arenas
        return [index for index in found if index is not None]

    def _decode_chunk(
        self, work: tuple[list[ManifestFile], list[FileIndex | None]], with_stats: bool
    ) -> list[FileIndex]:
        """The live entries of the manifests, read and decoded together (those of one shape in one call)."""
        return self._by_shape(work[0], lambda read: live_entries(read, with_stats))

    def _stats_chunk(self, work: tuple[list[ManifestFile], list[FileIndex | None]]) -> list[FileIndex]:
        """The indexes of the manifests (decoded without statistics) with their statistics."""
        stats = self._by_shape(work[0], live_statistics)
        return [index.with_statistics(s) for index, s in zip(work[1], stats, strict=True) if index is not None]

    def _by_shape(self, manifests: list[ManifestFile], decode: Callable[[list[ManifestBlocks]], list[T]]) -> list[T]:
        """`decode` applied to the manifests read, those of one shape together, results in their order."""
        read = [
            read_manifest(self._read(m.manifest_path, m.manifest_length), m, m.manifest_path, self.io.max_inflated)
            for m in manifests
        ]
        shapes: dict[tuple[int, str], list[int]] = {}
        for i, blocks in enumerate(read):
            shapes.setdefault(blocks.shape, []).append(i)
        out: list[T | None] = [None] * len(read)
        for members in shapes.values():
            for i, result in zip(members, decode([read[i] for i in members]), strict=True):
                out[i] = result
        return [result for result in out if result is not None]

    def _read(self, location: str, length: int | None = None) -> bytes:
        """A metadata file; one shorter than the length its manifest list records is corrupt (a manifest cut at
        a block boundary would otherwise read as a valid file of fewer entries: a silently smaller plan)."""
        try:
            data = self.io.read(location, length)
        except FileNotFound:
            raise MissingFileError(f"Metadata file is missing: {location}") from None
        if length is not None and len(data) < length:
            raise CorruptMetadataError(
                f"Manifest {location} is {len(data):,} bytes, shorter than the {length:,} its manifest list "
                "records: it was cut short (rewrite the manifest, or restore the table's metadata)"
            )
        return data


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


def _index_key(manifests: list[ManifestFile]) -> str:
    return hashlib.sha1("\n".join(f"{m.content}:{_decoded_key(m)}" for m in manifests).encode()).hexdigest()


def _files_in(m: ManifestFile) -> int:
    """The live files a manifest lists by its manifest list's counts (an unknown count: a thousand)."""
    counts = (m.added_files_count, m.existing_files_count)
    return 1000 if any(c is None for c in counts) else sum(c or 0 for c in counts)


def _estimated_bytes(manifests: list[ManifestFile], with_stats: bool) -> int:
    per_file = INDEX_BYTES_PER_FILE_WITH_STATS if with_stats else INDEX_BYTES_PER_FILE
    return per_file * sum(_files_in(m) for m in manifests)


def _groups(manifests: list[ManifestFile], with_stats: bool) -> Iterator[list[ManifestFile]]:
    """The manifests in order, in consecutive groups of about STREAM_GROUP_BYTES decoded."""
    group: list[ManifestFile] = []
    size = 0
    for m in manifests:
        group.append(m)
        size += _estimated_bytes([m], with_stats)
        if size >= STREAM_GROUP_BYTES:
            yield group
            group, size = [], 0
    if group:
        yield group


def _decoded_key(m: ManifestFile) -> str:
    """A decoded manifest's cache key: its path, and what its entries inherit from the manifest list's record
    (the same file listed with another sequence number or snapshot decodes to other entries), and its length
    (what the file is checked against when read)."""
    return f"{m.manifest_path}\0{m.manifest_length}\0{m.sequence_number}\0{m.added_snapshot_id}"


def _of_their_content(manifests: list[ManifestFile], indexes: list[FileIndex]) -> FileIndex:
    """The indexes as one, once each manifest is found to hold only what its manifest list says it holds:
    data files in a data manifest, delete files in a delete manifest (Java plans a delete file listed in a
    data manifest as data, and fails on a data file in a delete manifest)."""
    index = FileIndex.concat(indexes)
    sizes = np.fromiter((len(i) for i in indexes), np.int64, len(indexes))
    data = np.repeat(np.fromiter((m.content == DATA_MANIFEST for m in manifests), bool, len(manifests)), sizes)
    content = index.ints("content")
    wrong = np.flatnonzero(np.where(data, content != 0, content == 0))
    if len(wrong):
        row = int(wrong[0])
        which = int(np.searchsorted(np.cumsum(sizes), row, side="right"))
        m, entry = manifests[which], row - int(sizes[:which].sum())
        kind = "data" if m.content == DATA_MANIFEST else "delete"
        raise CorruptMetadataError(
            f"Invalid manifest {m.manifest_path}: live entry {entry} has content {int(content[row])}, "
            f"which a {kind} manifest cannot hold"
        )
    return index


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


def _v1_manifest(path: str, snapshot_id: int) -> ManifestFile:
    """A manifest a v1 snapshot lists itself (`manifests`, no manifest list), as Java's BaseSnapshot makes it:
    a data manifest of spec 0 and sequence number 0, added by the snapshot, without file counts or partition
    summaries (so it may hold live files, and no filter rules it out); its length is the file's."""
    return ManifestFile(path, 0, 0, DATA_MANIFEST, 0, 0, snapshot_id, None, None, None, None, None, None, None)


def _chunk_size(manifests: int, threads: int) -> int:
    """Manifests per chunk: about two chunks per thread (fewer calls, each decoding more at once without
    the GIL, and less of the per-chunk work that holds it), at most MAX_DECODE_CHUNK."""
    return max(1, min(MAX_DECODE_CHUNK, -(-manifests // (2 * max(1, threads)))))


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

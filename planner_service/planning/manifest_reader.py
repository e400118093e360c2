"""ManifestReader: a snapshot's manifest list and its manifests' live entries, read through three caches.

Manifest lists are cached by location; each manifest's decoded live entries by what decoding them depends on
(path, length, and what its entries inherit from the manifest list); and the index assembled from a list of
manifests (a snapshot's, or those a filter may match) by that list. Manifests are read, inflated and decoded in
chunks on a pool of threads (the decoder releases the GIL). A pruning plan whose manifests would not fit the
cache decodes and prunes them a group at a time, holding only the rows it keeps.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

import numpy as np
import polars as pl

from planner_service.allocator import release_free_memory
from planner_service.cache import LruCache
from planner_service.errors import CorruptMetadataError, MissingFileError
from planner_service.io.fileio import FileIO, FileNotFound
from planner_service.metadata.file_index import FileIndex
from planner_service.metadata.index_assembly import Assembly
from planner_service.metadata.index_fields import NotHeld
from planner_service.metadata.manifest import ManifestBlocks, live_entries, live_statistics, read_manifest
from planner_service.metadata.manifest_list import DATA_MANIFEST, ManifestFile, read_manifest_list
from planner_service.metadata.table_metadata import Snapshot
from planner_service.metadata.types import PrimitiveType
from planner_service.planning.admission import Cancellation
from planner_service.planning.index_tier import IndexTier

T = TypeVar("T")
Origins = dict[str, str]  # manifest path -> where its entries came from: "memory", "index-tier" or "decoded"
Rows = np.ndarray[Any, np.dtype[np.int64]]
MAX_DECODE_CHUNK = 64  # manifests read and decoded together by one thread, at most
# manifests whose statistics are decoded together by one thread, for indexes decoded without them, at most:
# fewer than whole manifests, so that the statistics held twice while they join their indexes (Arrow's, then
# the index's) are a smaller slice (measured, 200,000 files after two full plans: the first selective plan's
# peak 491 MB at 16 against 505 MB at 64, and 10% faster)
MAX_STATS_CHUNK = 16
RELEASE_AFTER_MANIFESTS = 16  # decoding this many manifests or more returns the freed memory to the system
# a live file's decoded entry in memory, about (what decides whether a pruning plan streams its manifests)
INDEX_BYTES_PER_FILE, INDEX_BYTES_PER_FILE_WITH_STATS = 256, 512
STREAM_GROUP_BYTES = 24 * 1024 * 1024  # decoded manifests a streaming plan holds at once, about
# mapped manifests (from the disk tier) the cache holds at most, about: each is one mapping of the process, and
# the system allows tens of thousands (vm.max_map_count, 65,530 by default)
MAPPED_MANIFESTS = 16384


class ManifestReader:
    def __init__(self, io: FileIO, cache_bytes: int, threads: int, tier: IndexTier | None = None) -> None:
        self.io = io
        self.tier = tier
        self._manifest_lists: LruCache[list[ManifestFile]] = LruCache(cache_bytes // 8, lambda m: 512 * len(m) + 1)
        self._manifests: LruCache[FileIndex] = LruCache(cache_bytes, partial(_held_bytes, cache_bytes))
        # a snapshot's manifests (or those a filter may match) assembled: shares the manifests' buffers, adds row arrays
        self._indexes: LruCache[FileIndex] = LruCache(cache_bytes // 4, lambda i: 48 * len(i) + 1024)
        # what a filter prunes by from the tier (tier_pruned_index): mapped, but for the interned partitions
        self._views: LruCache[tuple[Assembly, FileIndex]] = LruCache(
            cache_bytes // 8, lambda v: v[1].interned_bytes + 1024
        )
        self._threads = threads
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="manifest-reader")

    def caches(self) -> dict[str, LruCache[Any]]:
        """The caches by name, for metrics."""
        return {
            "manifest-lists": self._manifest_lists,
            "manifests": self._manifests,
            "file-indexes": self._indexes,
            "tier-views": self._views,
        }

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self.tier is not None:
            self.tier.close()

    def manifest_list(self, snapshot: Snapshot) -> list[ManifestFile]:
        """The snapshot's manifests, in its manifest list's order."""
        location = snapshot.manifest_list
        if location is None:
            return [_v1_manifest(path, snapshot.snapshot_id) for path in snapshot.v1_manifests]
        return self._manifest_lists.get_or_load(location, lambda: self._manifest_list(location))

    def _manifest_list(self, location: str) -> list[ManifestFile]:
        """The manifest list at `location`: from the tier (checked against the roots, as a read of it would be),
        else read and decoded (then handed to the tier)."""
        if self.tier is not None:
            self.io.roots.check(location)
            found = self.tier.get_list(location)
            if found is not None:
                return found
        manifests = self.read(location, None, lambda data: read_manifest_list(data, location, self.io.max_inflated))
        if self.tier is not None:
            self.tier.put_list(location, manifests)
        return manifests

    def appended_manifests(self, appends: tuple[Snapshot, ...], added_in: frozenset[int]) -> list[ManifestFile]:
        """The data manifests of the append snapshots that one of them added, each once (by path)."""
        out: dict[str, ManifestFile] = {}
        for snapshot in appends:
            for m in self.manifest_list(snapshot):
                if m.content == DATA_MANIFEST and m.added_snapshot_id in added_in:
                    out.setdefault(m.manifest_path, m)
        return list(out.values())

    def index(
        self,
        manifests: list[ManifestFile],
        cancel: Cancellation,
        with_stats: bool = True,
        origins: Origins | None = None,
    ) -> FileIndex:
        """The live entries of `manifests`, in their order, as one index (cached for the same manifests);
        with their column statistics or, when not `with_stats`, perhaps without. `origins` gets where each
        manifest's entries came from."""
        key = _index_key(manifests)
        complete = self._indexes.get(f"{key}+stats")
        if complete is None:
            if with_stats:  # the index without statistics goes: its manifests' frames are freed as replaced
                self._indexes.discard(key)
            complete = self._indexes.get_or_load(
                f"{key}+stats" if with_stats else key,
                lambda: self._assembled(f"{key}+stats" if with_stats else key, manifests, with_stats, cancel, origins),
            )
        if origins is not None:  # (assembled already: every manifest's entries were in memory)
            origins.update((m.manifest_path, "memory") for m in manifests if m.manifest_path not in origins)
        return complete

    def _assembled(
        self, key: str, manifests: list[ManifestFile], with_stats: bool, cancel: Cancellation, origins: Origins | None
    ) -> FileIndex:
        """The manifests' index assembled: from the tier when it holds the assembly, else from each manifest's
        entries (then handed to the tier)."""
        keys = [_decoded_key(m) for m in manifests]
        if self.tier is not None and manifests:
            self._within_roots(manifests, cancel)
            found = self.tier.get_assembly(key, keys, with_stats, self._pool)
            if found is not None:
                if origins is not None:
                    origins.update((m.manifest_path, "index-tier") for m in manifests)
                return found
        index = _of_their_content(manifests, self._live_entries(manifests, with_stats, cancel, True, origins))
        if self.tier is not None and manifests:
            self.tier.put_assembly(key, index, keys)
        return index

    def streams(self, manifests: list[ManifestFile], with_stats: bool) -> bool:
        """Whether the manifests' index would not fit the manifest cache (and is not assembled already, in memory
        or in the tier): a pruning plan then decodes and prunes them a group at a time (`pruned_index`), holding
        only what it keeps."""
        if _estimated_bytes(manifests, with_stats) <= self._manifests.max_bytes:
            return False
        key = _index_key(manifests)
        if self.tier is not None and self.tier.has_assembly(f"{key}+stats" if with_stats else key):
            return False  # (mapped from the tier: the system's pages, not this process's memory)
        return self._indexes.get(f"{key}+stats") is None

    def pruned_index(
        self,
        manifests: list[ManifestFile],
        with_stats: bool,
        matching_rows: Callable[[FileIndex], Rows],
        cancel: Cancellation,
        origins: Origins | None = None,
        fields: Sequence[tuple[int, PrimitiveType]] = (),
    ) -> tuple[FileIndex, int]:
        """(the rows of the manifests' live entries that `matching_rows` gives, as one index; how many rows there
        were): groups of about STREAM_GROUP_BYTES of manifests decoded, pruned and let go in turn; the
        manifest cache keeps what fits beside what it holds, evicting nothing. The tier assembles them after,
        with the files of `fields` (what the filter reads)."""
        parts, considered = [], 0
        for group in _groups(manifests, with_stats):
            index = _of_their_content(group, self._live_entries(group, with_stats, cancel, False, origins))
            cancel.check()
            considered += len(index)
            parts.append(index.take(matching_rows(index)))
            del index
        release_free_memory()
        if self.tier is not None:  # the next plan of these manifests maps them assembled, without streaming
            key = _index_key(manifests)
            keys = [_decoded_key(m) for m in manifests]
            self.tier.assemble_later(f"{key}+stats" if with_stats else key, keys, with_stats, fields)
        return FileIndex.concat(parts), considered

    def tier_pruned_index(
        self,
        manifests: list[ManifestFile],
        fields: Sequence[tuple[int, PrimitiveType]],
        matching_rows: Callable[[FileIndex], Rows],
        cancel: Cancellation,
    ) -> tuple[FileIndex, int] | None:
        """(the rows of the manifests' live entries that `matching_rows` gives, as one index; how many rows
        there were) from the tier without the manifests' index: their assembly's partitions and the statistics
        of `fields` (what the filter reads) from their files, then the rows kept from their segments alone.
        None when the index is held in memory, or the tier lacks any of it: plan from the index."""
        if self.tier is None or not manifests or not fields:
            return None
        key = f"{_index_key(manifests)}+stats"
        if self._indexes.get(key) is not None:
            return None
        self._within_roots(manifests, cancel)
        view_key = f"{key}+fields:" + ",".join(f"{field_id}:{typ}" for field_id, typ in fields)
        found = self._views.get(view_key)
        if found is None:
            found = self.tier.pruning(key, [_decoded_key(m) for m in manifests], fields)
            if found is None:
                return None
            self._views.put(view_key, found)
        assembly, view = found
        try:
            rows = matching_rows(view)
        except (NotHeld, pl.exceptions.ColumnNotFoundError):  # (something the fields' files do not hold)
            return None
        cancel.check()
        index = self.tier.gathered(assembly, rows)
        return None if index is None else (index, len(view))

    def keep_fields(
        self, manifests: list[ManifestFile], index: FileIndex, fields: Sequence[tuple[int, PrimitiveType]]
    ) -> None:
        """Hand the tier the statistics of `fields` (what a filter read) of the manifests' index, so that another
        process prunes by them without the index (`tier_pruned_index`)."""
        if self.tier is not None and manifests and fields and index.has_stats:
            self.tier.put_fields(f"{_index_key(manifests)}+stats", index, fields)

    def read(self, location: str, length: int | None, parse: Callable[[bytes], T]) -> T:
        """A metadata file, parsed (a parse that fails on a read the store cut short reads it again:
        FileIO.read_checked); one shorter than the length its manifest list records is corrupt (a manifest
        cut at a block boundary would otherwise read as a valid file of fewer entries: a smaller plan)."""

        def checked(data: bytes) -> T:
            if length is not None and len(data) < length:
                raise CorruptMetadataError(
                    f"Manifest {location} is {len(data):,} bytes, shorter than the {length:,} its manifest list "
                    "records: it was cut short (rewrite the manifest, or restore the table's metadata)"
                )
            return parse(data)

        try:
            return self.io.read_checked(location, checked, length)
        except FileNotFound:
            raise MissingFileError(f"Metadata file is missing: {location}") from None

    def _live_entries(
        self,
        manifests: list[ManifestFile],
        with_stats: bool,
        cancel: Cancellation,
        evict: bool = True,
        origins: Origins | None = None,
    ) -> list[FileIndex]:
        """Each manifest's live entries: from the cache, else from the disk tier, else decoded (chunks of
        manifests read, decompressed and decoded by the pool's threads, each chunk on its own: the decoder
        releases the GIL). A manifest held without statistics takes them on when they are wanted (from the
        tier, else decoded alone, the rest of its columns shared) and replaces itself in the cache. What is
        decoded is handed to the tier. Without `evict`, the cache keeps what fits beside what it holds.
        `origins` gets where each manifest's entries came from (Origins), by path."""
        found = [self._manifests.get(_decoded_key(m)) for m in manifests]
        origin = ["memory" if index is not None else "decoded" for index in found]
        if self.tier is not None:
            for i in self._tier_fills(manifests, found, with_stats, cancel, evict):
                origin[i] = "index-tier" if origin[i] == "decoded" else origin[i]
        missing = [i for i, index in enumerate(found) if index is None]
        lacking = [i for i, index in enumerate(found) if index is not None and with_stats and not index.has_stats]
        with self.tier.decoding() if self.tier is not None and (missing or lacking) else contextlib.nullcontext():
            self._decode(manifests, found, missing, lacking, with_stats, cancel, evict)
        if len(missing) + len(lacking) >= RELEASE_AFTER_MANIFESTS:
            release_free_memory()  # the inflated blocks and decoding buffers, left in the threads' arenas
        if origins is not None:
            origins.update((m.manifest_path, where) for m, where in zip(manifests, origin, strict=True))
        return [index for index in found if index is not None]

    def _tier_fills(
        self,
        manifests: list[ManifestFile],
        found: list[FileIndex | None],
        with_stats: bool,
        cancel: Cancellation,
        evict: bool,
    ) -> list[int]:
        """Fill `found` (and the cache) from the tier where it lacks a manifest, or its statistics when they are
        wanted, on the pool's threads; the positions filled."""
        looked_up = [i for i, index in enumerate(found) if index is None or (with_stats and not index.has_stats)]
        filled = []
        items = [(manifests[i], found[i]) for i in looked_up]
        for i, index in self._in_parallel(
            self._from_tier, items, looked_up, MAX_DECODE_CHUNK, with_stats=with_stats, cancel=cancel
        ):
            if index is not None and index is not found[i]:
                self._manifests.put(_decoded_key(manifests[i]), index, evict)
                found[i] = index
                filled.append(i)
        return filled

    def _decode(
        self,
        manifests: list[ManifestFile],
        found: list[FileIndex | None],
        missing: list[int],
        lacking: list[int],
        with_stats: bool,
        cancel: Cancellation,
        evict: bool,
    ) -> None:
        """Decode the `missing` manifests (and the statistics of those `lacking` them) into `found`, the cache
        and the tier."""
        for work, wanted, largest, stats in (
            (partial(self._decode_chunk, with_stats=with_stats, cancel=cancel), missing, MAX_DECODE_CHUNK, with_stats),
            (partial(self._stats_chunk, cancel=cancel), lacking, MAX_STATS_CHUNK, True),
        ):
            decoded = []
            for i, index in self._in_parallel(
                work, [(manifests[i], found[i]) for i in wanted], wanted, largest, cancel=cancel
            ):
                assert index is not None
                key = _decoded_key(manifests[i])
                self._manifests.put(key, index, evict)
                decoded.append((key, index))
                found[i] = index
            if self.tier is not None and decoded:
                dropped = set(self.tier.put(decoded))
                if dropped:  # (the queue is full: the tier decodes them again once this process is idle)
                    later = [m for m in manifests if _decoded_key(m) in dropped]
                    self.tier.write_later(later, partial(self._for_tier, with_stats=stats))

    def _in_parallel(
        self,
        work: Callable[..., list[FileIndex | None]],
        items: list[tuple[ManifestFile, FileIndex | None]],
        positions: list[int],
        largest: int,
        cancel: Cancellation,
        **options: Any,
    ) -> Iterator[tuple[int, FileIndex | None]]:
        """(position, result) of `work` over `items` in chunks on the pool (the results of a chunk in its
        order); the chunks not started are dropped once the plan is cancelled."""
        size = chunk_size(len(items), self._threads, largest)
        starts = range(0, len(items), size)
        futures = [
            self._pool.submit(
                work,
                ([m for m, _ in items[b : b + size]], [f for _, f in items[b : b + size]]),
                cancel=cancel,
                **options,
            )
            for b in starts
        ]
        for begin, future in zip(starts, futures, strict=True):
            if cancel.cancelled:  # the chunks not started are dropped, those running finish unkept
                for pending in futures:
                    pending.cancel()
                cancel.check()
            yield from zip(positions[begin : begin + size], future.result(), strict=True)

    def _within_roots(self, manifests: list[ManifestFile], cancel: Cancellation) -> None:
        """LocationNotAllowedError for a manifest outside the roots: what the tier gives is checked as a read of
        the manifest would be."""
        for m in manifests:
            cancel.check()
            self.io.roots.check(m.manifest_path)

    def _from_tier(
        self, work: tuple[list[ManifestFile], list[FileIndex | None]], with_stats: bool, cancel: Cancellation
    ) -> list[FileIndex | None]:
        """Each manifest's index from the disk tier (None: not there), or the index held given its statistics
        from there; checked against the roots first, as a read of the manifest would be."""
        assert self.tier is not None
        self._within_roots(work[0], cancel)
        keys = [_decoded_key(m) for m in work[0]]
        held = [(i, index) for i, index in enumerate(work[1]) if index is not None]
        if not held:
            return self.tier.get(keys, with_stats)
        out: list[FileIndex | None] = [None] * len(keys)
        stats = self.tier.get_stats([keys[i] for i, _ in held], [len(index) for _, index in held])
        for (i, index), s in zip(held, stats, strict=True):
            out[i] = None if s is None else index.with_statistics(s, mapped=True)
        missing = [i for i, index in enumerate(work[1]) if index is None]
        for i, loaded in zip(missing, self.tier.get([keys[i] for i in missing], with_stats), strict=True):
            out[i] = loaded
        return out

    def _for_tier(self, manifests: list[ManifestFile], with_stats: bool) -> list[tuple[str, FileIndex]]:
        """The manifests decoded again for the tier (by its thread), by the reader's key; not cached."""
        indexes = self._by_shape(manifests, lambda read: live_entries(read, with_stats), Cancellation())
        return [(_decoded_key(m), index) for m, index in zip(manifests, indexes, strict=True)]

    def _decode_chunk(
        self, work: tuple[list[ManifestFile], list[FileIndex | None]], with_stats: bool, cancel: Cancellation
    ) -> list[FileIndex | None]:
        """The live entries of the manifests, read and decoded together (those of one shape in one call)."""
        return [*self._by_shape(work[0], lambda read: live_entries(read, with_stats), cancel)]

    def _stats_chunk(
        self, work: tuple[list[ManifestFile], list[FileIndex | None]], cancel: Cancellation
    ) -> list[FileIndex | None]:
        """The indexes of the manifests (decoded without statistics) with their statistics."""
        stats = self._by_shape(work[0], live_statistics, cancel)
        return [index.with_statistics(s) for index, s in zip(work[1], stats, strict=True) if index is not None]

    def _by_shape(
        self, manifests: list[ManifestFile], decode: Callable[[list[ManifestBlocks]], list[T]], cancel: Cancellation
    ) -> list[T]:
        """`decode` applied to the manifests read, those of one shape together, results in their order (the
        reads stop once the plan is cancelled or out of time)."""
        read: list[ManifestBlocks] = []
        for m in manifests:
            cancel.check()
            read.append(self.read(m.manifest_path, m.manifest_length, partial(self._blocks, m)))
        shapes: dict[tuple[int, str], list[int]] = {}
        for i, blocks in enumerate(read):
            shapes.setdefault(blocks.shape, []).append(i)
        out: list[T | None] = [None] * len(read)
        for members in shapes.values():
            for i, result in zip(members, decode([read[i] for i in members]), strict=True):
                out[i] = result
        return [result for result in out if result is not None]

    def _blocks(self, m: ManifestFile, data: bytes) -> ManifestBlocks:
        return read_manifest(data, m, m.manifest_path, self.io.max_inflated)


def _held_bytes(cache_bytes: int, index: FileIndex) -> int:
    """What a manifest's index weighs in the cache: the memory it holds; a mapped one its interned values, and
    at least a MAPPED_MANIFESTS-th of the cache (the mappings a process holds are bounded too)."""
    if not index.mapped:
        return index.nbytes
    return max(index.interned_bytes, cache_bytes // MAPPED_MANIFESTS)


def chunk_size(manifests: int, threads: int, largest: int = MAX_DECODE_CHUNK) -> int:
    """Manifests per chunk: about two chunks per thread (fewer calls, each decoding more at once without
    the GIL, and less of the per-chunk work that holds it), at most `largest`."""
    return max(1, min(largest, -(-manifests // (2 * max(1, threads)))))


def _index_key(manifests: list[ManifestFile]) -> str:
    return hashlib.sha1("\n".join(f"{m.content}:{_decoded_key(m)}" for m in manifests).encode()).hexdigest()


def _decoded_key(m: ManifestFile) -> str:
    """A decoded manifest's cache key: its path, and what its entries inherit from the manifest list's record
    (the same file listed with another sequence number or snapshot decodes to other entries), and its length
    (what the file is checked against when read)."""
    return f"{m.manifest_path}\0{m.manifest_length}\0{m.sequence_number}\0{m.added_snapshot_id}"


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


def _v1_manifest(path: str, snapshot_id: int) -> ManifestFile:
    """A manifest a v1 snapshot lists itself (`manifests`, no manifest list), as Java's BaseSnapshot makes it:
    a data manifest of spec 0 and sequence number 0, added by the snapshot, without file counts or partition
    summaries (so it may hold live files, and no filter rules it out); its length is the file's."""
    return ManifestFile(path, 0, 0, DATA_MANIFEST, 0, 0, snapshot_id, None, None, None, None, None, None, None)

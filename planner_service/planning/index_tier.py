"""The disk tier of the manifest index: decoded manifests written once to a directory that every worker and
replica of a host shares (`index_directory`), and read back memory-mapped by any of them, so that a restart, a
new replica or another worker plans from the files instead of decoding the manifests again.

The manifests decoded together are written together, as one segment file (metadata/index_file.py: the fixed
costs of a file are paid once per segment), and each manifest is found by a symbolic link named by what makes
a decoded manifest unique (the reader's key: path, length, and what its entries inherit from the manifest
list), the signing key's id and the layout's version, pointing at its segment and slot: `<stem>.core ->
seg-<random>.core#<slot>`, and `<stem>.stats` likewise for its statistics. A segment appears whole (written
under a temporary name, then renamed); a link is made once (the first process to link a manifest wins, a
second finds it there), so processes decoding one manifest at once publish it once. A segment read back is
checked by its MAC under the service's signing key before it is parsed, and the slot a link names must hold
the manifest looked for; a segment that fails (torn, truncated, flipped, planted) is removed, counted as
rejected and its manifests decoded again. Writes run on one background thread at the lowest CPU priority, so
a cold plan does not wait for them. The directory is bounded by `max_bytes`: when a process has written more
than a sixteenth of it since it last looked, the least recently used segments (by their times, touched when
read) go until nine tenths remain, with the links that pointed at them. A disk that refuses a write (full,
read-only) turns writing off with one warning until a write succeeds again; planning never fails for the tier.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import polars as pl
import pyarrow as pa

from planner_service.io.private_directory import lowest_priority, private_directory
from planner_service.metadata.file_index import STATS_COLUMNS, FileIndex, Int64Array
from planner_service.metadata.index_assembly import (
    Assembly,
    assembled_index,
    assembly_file,
    index_over,
    open_assembly,
)
from planner_service.metadata.index_fields import HeldStats, field_file, open_field
from planner_service.metadata.index_file import (
    CORE,
    FORMAT,
    STATS,
    InvalidIndexFile,
    Segment,
    core_segments,
    list_file,
    open_list,
    open_segment,
    stats_segments,
)
from planner_service.metadata.manifest_list import ManifestFile
from planner_service.metadata.types import PrimitiveType
from planner_service.planning.index_store import IndexStore

log = logging.getLogger(__name__)
T = TypeVar("T")

# decoded manifests queued for writing at most (bytes in memory, most of them held by the manifest cache too);
# more are not written (and decoded again by the next process that plans them)
PENDING_BYTES = 1024**3
SWEEP_SHARE = 16  # a process looks over the directory once it has written max_bytes / SWEEP_SHARE
KEEP_SHARE = 0.9  # a sweep removes the least recently used segments until this share of max_bytes remains
STALE_SECONDS = 3600  # a temporary file older than this is a dead writer's
SEGMENT_MANIFESTS = 64  # manifests a segment holds at most
# segments kept open (their Python objects and mappings, no memory of their own): a plan whose manifests are
# read in other chunks than they were written in opens each once
OPEN_SEGMENTS = 1024
# the writer waits while manifests are being decoded (its Python work would take the GIL from the decoding
# threads: a cold plan would wait for its own writes), at most this long for each segment, and only while
# less than half of PENDING_BYTES waits
DEFER_SECONDS = 10.0
IDLE_POLL_SECONDS = 0.05  # how often a decode the queue could not take looks whether the process is idle
_TARGET = re.compile(r"(seg-[0-9a-f]{32}\.(?:core|stats))#([0-9]{1,6})")


@dataclass
class TierStats:
    """What the tier did, for metrics (this process's view; `bytes` and `files` as of its last sweep and its
    own writes since)."""

    hits: int = 0  # manifests read from the tier
    misses: int = 0  # manifests looked for and not there
    writes: int = 0  # manifests written (another process's, found linked already, are not counted)
    write_failures: int = 0
    rejected: int = 0  # segments (or links) found and refused (their MAC, layout or manifest)
    evictions: int = 0  # segments removed by sweeps
    bytes: int = 0  # in segments
    files: int = 0  # segments
    pending: int = 0  # writes (and decodes for writing) waiting for the background thread or under way


def index_tier(root: str, max_bytes: int, signing_key: bytes, store: IndexStore | None = None) -> IndexTier | None:
    """The tier in `root`, or None when it is off ("" or no bytes) or the directory cannot be used (logged once,
    saying what to do: planning then decodes what it does not hold, as without the tier)."""
    if not root or max_bytes <= 0:
        return None
    try:
        tier = IndexTier(Path(root), max_bytes, signing_key, store)
        tier.probe()
    except OSError as exc:
        log.warning(
            "index_directory cannot be used: every process decodes the manifests it plans on its own (give it a "
            'writable directory of its own, or "" to turn the tier off)',
            extra={"directory": root, "error": f"{type(exc).__name__}: {exc}"},
        )
        return None
    return tier


class IndexTier:
    def __init__(self, root: Path, max_bytes: int, signing_key: bytes, store: IndexStore | None = None) -> None:
        """`store`: object storage the tier's files are shared through with other hosts (index_store.py)."""
        self.directory = private_directory(root)
        self.store = store
        self.max_bytes = max_bytes
        self._key = hmac.digest(signing_key, b"scan-planner manifest index", "sha256")
        # in the links' names: processes under other keys (a misconfigured replica) keep files of their own,
        # never refusing and removing each other's
        self._key_id = hashlib.sha256(self._key).hexdigest()[:8]
        self.stats = TierStats()
        self._lock = threading.Lock()
        self._queued_bytes = 0
        self._decoding = 0  # decodes under way in this process (decoding())
        self._shared: set[str] = set()  # segments this process put in the shared store (or found there)
        self._open: OrderedDict[str, Segment] = OrderedDict()
        self._written_since_sweep = 0
        self._failing = False
        self._closing = False
        self._vectorless: set[str] = set()  # fields' files not written: their bounds have no vector form
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="index-tier", initializer=lowest_priority)
        self._sweep()

    def _later(self, work: Callable[..., None], *args: Any) -> Future[None]:
        """`work(*args)` on the background thread, counted as pending until it is done."""
        with self._lock:
            self.stats.pending += 1

        def run() -> None:
            try:
                work(*args)
            finally:
                with self._lock:
                    self.stats.pending -= 1

        return self._writer.submit(run)

    def probe(self) -> None:
        """OSError unless a file can be written to the directory."""
        probe = self.directory / f".probe-{os.getpid()}-{secrets.token_hex(4)}"
        probe.write_bytes(b"0")
        probe.unlink()

    def close(self) -> None:
        self._closing = True
        self._writer.shutdown(wait=True, cancel_futures=True)

    def flush(self) -> None:
        """Wait until every index handed to put() is written (or refused)."""
        self._later(lambda: None).result()

    # -- reading ------------------------------------------------------------------------------------------

    def get(self, manifests: Sequence[str], with_stats: bool) -> list[FileIndex | None]:
        """The index of each manifest (by the reader's key) from the tier, its columns mapped; with its
        statistics when `with_stats` and they are there. None for one the tier does not hold (or holds in a
        segment it refuses)."""
        out: list[FileIndex | None] = [None] * len(manifests)
        for (segment, slot), i in self._found(manifests, CORE):
            try:
                out[i] = segment.index(slot, manifests[i])
            except InvalidIndexFile as exc:
                self._reject_link(manifests[i], CORE, exc)
        hits = sum(1 for index in out if index is not None)
        self._count(hits=hits, misses=len(out) - hits)
        if with_stats:
            held = [(i, index) for i, index in enumerate(out) if index is not None]
            stats = self.get_stats([manifests[i] for i, _ in held], [len(index) for _, index in held])
            for (i, index), found in zip(held, stats, strict=True):
                if found is not None:
                    out[i] = index.with_statistics(found, mapped=True)
        return out

    def get_stats(self, manifests: Sequence[str], rows: Sequence[int]) -> list[pl.DataFrame | None]:
        """The statistics columns of each manifest (by the reader's key; an index of `rows` rows), mapped; None
        for one the tier does not hold them of."""
        out: list[pl.DataFrame | None] = [None] * len(manifests)
        for (segment, slot), i in self._found(manifests, STATS):
            try:
                out[i] = segment.stats(slot, manifests[i], rows[i])
            except InvalidIndexFile as exc:
                self._reject_link(manifests[i], STATS, exc)
        return out

    def get_assembly(
        self, index_key: str, manifests: Sequence[str], with_stats: bool, pool: Executor | None = None
    ) -> FileIndex | None:
        """The assembled index of the manifests `manifests` (by the reader's key; `index_key`: the reader's key of
        the list), with their statistics when `with_stats`, from the tier; None when it does not hold it whole.
        Its segments are opened on `pool`'s threads (their MACs are computed without the GIL)."""
        opened_assembly = self._assembly(index_key, manifests)
        if opened_assembly is None:
            return None
        name, assembly = opened_assembly
        try:
            wanted = sorted(assembly.segments())
            found = (pool.map if pool is not None else map)(lambda where: self._segment(*where), wanted)
            segments = dict(zip(wanted, found, strict=True))
            opened = {where: segment for where, segment in segments.items() if segment is not None}
            if len(opened) < len(segments):  # a segment evicted since: assembled manifest by manifest instead
                with contextlib.suppress(OSError):
                    (self.directory / name).unlink()
                return None
            index = assembled_index(assembly, opened)
            if with_stats and not index.has_stats:
                raise InvalidIndexFile("an assembly without the statistics its name says it has")
        except InvalidIndexFile as exc:
            self._refuse(name, exc)
            return None
        if manifests and not self._linked(self._link_path(manifests[0], CORE)):  # (from the shared store)
            for kind, refs in ((CORE, assembly.core), (STATS, assembly.stats or [])):
                for manifest, (segment, slot) in zip(manifests, refs, strict=False):
                    self._link(f"{segment}#{slot}", manifest, kind)
        self._count(hits=len(manifests))
        return index

    def _assembly(
        self, index_key: str, manifests: Sequence[str], with_stats: bool = False
    ) -> tuple[str, Assembly] | None:
        """(its name, the assembly of the list keyed `index_key`) opened and checked, with the statistics' slots
        when `with_stats`; None when the tier lacks it or refuses it."""
        name = f"asm-{self._stem(index_key)}"
        data = self._bytes(name)
        if data is None:
            return None
        try:
            assembly = open_assembly(data, name, manifests, self._key)
            if with_stats and assembly.stats is None:
                raise InvalidIndexFile("an assembly without the statistics its name says it has")
        except InvalidIndexFile as exc:
            self._refuse(name, exc)
            return None
        return name, assembly

    def pruning(
        self, index_key: str, manifests: Sequence[str], fields: Sequence[tuple[int, PrimitiveType]]
    ) -> tuple[Assembly, FileIndex] | None:
        """(the assembly of the manifests `manifests`, with statistics, keyed `index_key`; its files as an index
        of no columns but record_count, whose statistics are those of `fields` from their files), for a filter
        on those fields to prune by without opening a segment; None when the tier lacks one of them."""
        opened_assembly = self._assembly(index_key, manifests, with_stats=True)
        if opened_assembly is None:
            return None
        name, assembly = opened_assembly
        frame: pl.DataFrame | None = None
        held: dict[tuple[str, int], Any] = {}
        for field_id, typ in fields:
            fname = self._field_name(index_key, field_id, typ)
            fdata = self._bytes(fname)
            if fdata is None:
                return None
            try:
                frame, found = open_field(fdata, name, field_id, typ, self._key)
                if frame.height != len(assembly.partition_id) or any(
                    len(held_column[0] if isinstance(held_column, tuple) else held_column.present) != frame.height
                    for held_column in found.values()
                ):
                    raise InvalidIndexFile("a field's file of other rows than its assembly's")
            except InvalidIndexFile as exc:
                self._refuse(fname, exc)
                return None
            held.update(found)
        if frame is None:
            return None
        view = index_over(assembly, frame)
        stats = HeldStats(frame, held)
        view.memo("stats", lambda: stats)
        self._count(hits=len(manifests))
        return assembly, view

    def gathered(self, assembly: Assembly, rows: Int64Array) -> FileIndex | None:
        """The rows `rows` (ascending) of the assembled index, with their statistics, from the segments that hold
        them (those alone opened); None when one of them is gone or refused."""
        starts = np.asarray(assembly.part_starts, np.int64)
        parts = np.searchsorted(starts, rows, side="right") - 1
        held, first = np.unique(parts, return_index=True)
        ends = [*first.tolist()[1:], len(rows)]
        if not len(rows):  # (none kept: the first manifest's index, of no rows, with its columns)
            held, first, ends = np.zeros(1, np.int64), np.zeros(1, np.int64), [0]
        assert assembly.stats is not None
        pieces = []
        for k, begin, end in zip(held.tolist(), first.tolist(), ends, strict=True):
            manifest, (core, slot), (stats, stats_slot) = assembly.manifests[k], assembly.core[k], assembly.stats[k]
            segment, stats_segment = self._segment(core, CORE), self._segment(stats, STATS)
            if segment is None or stats_segment is None:
                return None
            try:
                index = segment.index(slot, manifest)
                index = index.with_statistics(stats_segment.stats(stats_slot, manifest, len(index)), mapped=True)
                expected = assembly.rows_of(k)
                if len(index) != expected:
                    raise InvalidIndexFile(f"an assembly of {expected} rows for a slot of {len(index)}")
            except InvalidIndexFile as exc:
                self._refuse(core, exc)
                return None
            pieces.append(index.take(rows[begin:end] - starts[k]))
        return FileIndex.concat(pieces)

    def put_fields(self, index_key: str, index: FileIndex, fields: Sequence[tuple[int, PrimitiveType]]) -> None:
        """Write the files of `fields` of the assembled index `index` (with statistics) of the list keyed
        `index_key`, those not written yet, on the background thread (their statistics decoded there as far as
        the plan did not)."""
        names = [self._field_name(index_key, *f) for f in fields]
        wanted = [f for f, name in zip(fields, names, strict=True) if not self._no_field_file(name)]
        if wanted and index.has_stats:
            self._later(self._write_fields, index_key, index, wanted)

    def _no_field_file(self, name: str) -> bool:
        return name in self._vectorless or (self.directory / name).exists()

    def _write_fields(self, index_key: str, index: FileIndex, fields: list[tuple[int, PrimitiveType]]) -> None:
        for field_id, typ in fields:
            data = field_file(f"asm-{self._stem(index_key)}", index.stats, field_id, typ, self._key)
            if data is None:  # (bounds compared as Python values: not written, nor tried again)
                self._vectorless.add(self._field_name(index_key, field_id, typ))
                continue
            name = self._field_name(index_key, field_id, typ)
            try:
                self._write_file(name, data)
            except OSError as exc:
                self._failed(exc)
                return
            self._put(name, data)

    def _field_name(self, index_key: str, field_id: int, typ: PrimitiveType) -> str:
        return "fld-" + self._stem("\0".join((index_key, str(field_id), str(typ))))

    def get_list(self, location: str) -> list[ManifestFile] | None:
        """The manifest list at `location` as decoded before (by any process sharing the tier), or None."""
        name = f"lst-{self._stem(location)}"
        data = self._bytes(name)
        if data is None:
            return None
        try:
            return open_list(data, location, self._key)
        except InvalidIndexFile as exc:
            self._refuse(name, exc)
            return None

    def put_list(self, location: str, manifests: Sequence[ManifestFile]) -> None:
        """Write the manifest list at `location`, decoded into `manifests`, on the background thread."""
        name = f"lst-{self._stem(location)}"
        if not (self.directory / name).exists():
            self._later(self._write_list, name, location, list(manifests))

    def _write_list(self, name: str, location: str, manifests: list[ManifestFile]) -> None:
        data = list_file(location, manifests, self._key)
        try:
            self._write_file(name, data)
        except OSError as exc:
            self._failed(exc)
            return
        self._put(name, data)

    def _found(self, manifests: Sequence[str], kind: str) -> list[tuple[tuple[Segment, int], int]]:
        """((segment, slot), position) of each manifest the tier links, its segments opened once each."""
        targets: list[tuple[str, int, int]] = []
        for i, manifest in enumerate(manifests):
            try:
                target = os.readlink(self.directory / f"{self._stem(manifest)}.{kind}")
            except OSError:
                continue
            matched = _TARGET.fullmatch(target)
            if matched is None:
                self._reject_link(manifest, kind, InvalidIndexFile(f"a link to {target!r:.80}"))
                continue
            targets.append((matched.group(1), int(matched.group(2)), i))
        segments: dict[str, Segment | None] = {}
        out = []
        for name, slot, i in targets:
            if name not in segments:
                segments[name] = self._segment(name, kind)
            segment = segments[name]
            if segment is not None:
                out.append(((segment, slot), i))
        return out

    def _segment(self, name: str, kind: str) -> Segment | None:
        """The segment `name`, mapped, checked and opened (kept open: OPEN_SEGMENTS); None when it is gone or
        refused."""
        with self._lock:
            segment = self._open.get(name)
            if segment is not None:
                self._open.move_to_end(name)
                return segment if segment.kind == kind else None
        data = self._bytes(name)
        if data is None:
            return None
        try:
            segment = open_segment(data, kind, self._key)
        except InvalidIndexFile as exc:
            self._refuse(name, exc)
            return None
        with self._lock:
            self._open[name] = segment
            while len(self._open) > OPEN_SEGMENTS:
                self._open.popitem(last=False)
        return segment

    def _bytes(self, name: str) -> pa.Buffer | None:
        """A file's bytes, mapped (its descriptor closed: the mapping outlives it), its times touched (the least
        recently used go first); from the shared store into the directory first when it is only there; None when
        it is nowhere."""
        path = self.directory / name
        try:
            source = pa.memory_map(str(path))
        except (FileNotFoundError, pa.ArrowIOError):
            if self.store is None or not self._fetched(name):
                return None
            try:
                source = pa.memory_map(str(path))
            except (FileNotFoundError, pa.ArrowIOError):
                return None
        try:
            data = source.read_buffer()
        finally:
            source.close()
        with contextlib.suppress(OSError):
            os.utime(path)
        return data

    def _fetched(self, name: str) -> bool:
        """Whether the shared store held `name` and it is now in the directory."""
        assert self.store is not None
        data = self.store.get(name)
        if data is None:
            return False
        try:
            self._write_file(name, data)
        except OSError as exc:
            self._failed(exc)
            return False
        with self._lock:
            self._shared.add(name)
        return True

    def _refuse(self, name: str, exc: InvalidIndexFile) -> None:
        log.warning(
            "an index file was refused and is removed: its manifests are decoded again",
            extra={"file": str(self.directory / name), "reason": str(exc)},
        )
        with contextlib.suppress(OSError):
            (self.directory / name).unlink()
        self._count(rejected=1)

    def _reject_link(self, manifest: str, kind: str, exc: InvalidIndexFile) -> None:
        link = self.directory / f"{self._stem(manifest)}.{kind}"
        log.warning(
            "an index link was refused and is removed: its manifest is decoded again",
            extra={"file": str(link), "reason": str(exc)},
        )
        with contextlib.suppress(OSError):
            link.unlink()
        self._count(rejected=1)

    # -- writing ------------------------------------------------------------------------------------------

    def put(self, parts: Sequence[tuple[str, FileIndex]]) -> list[str]:
        """Write the indexes of manifests decoded together (by the reader's key; their cores, and their
        statistics when they have them) on the background thread, those the tier does not link already, unless
        the queue is full: the manifests not queued then (for `write_later`)."""
        wanted = self._unlinked(parts)
        for begin in range(0, len(wanted), SEGMENT_MANIFESTS):
            group = wanted[begin : begin + SEGMENT_MANIFESTS]
            size = sum(index.nbytes for index in {id(index): index for _, index, _ in group}.values())
            with self._lock:
                if self._queued_bytes + size > PENDING_BYTES:
                    return list(dict.fromkeys(manifest for manifest, _, _ in wanted[begin:]))
                self._queued_bytes += size
            self._later(self._write, group, size)
        return []

    def write_later(self, items: Sequence[T], decode: Callable[[list[T]], list[tuple[str, FileIndex]]]) -> None:
        """Manifests the queue could not take (what `put` returned, as the reader knows them): decoded again by
        `decode` on the background thread, SEGMENT_MANIFESTS at a time, each group once no plan of this process
        is decoding, and written. A big cold plan so leaves the tier whole, without holding its indexes."""
        for begin in range(0, len(items), SEGMENT_MANIFESTS):
            self._later(self._decode_and_write, list(items[begin : begin + SEGMENT_MANIFESTS]), decode)

    def _decode_and_write(self, items: list[T], decode: Callable[[list[T]], list[tuple[str, FileIndex]]]) -> None:
        while self._decoding and not self._closing:
            time.sleep(IDLE_POLL_SECONDS)
        if self._closing:
            return
        try:
            wanted = self._unlinked(decode(items))
        except Exception as exc:  # (a manifest gone or damaged since: the next plan that needs it says so)
            log.info("a manifest for index_directory was not decoded again", extra={"error": str(exc)})
            return
        if wanted:
            self._write(wanted, 0)

    def _unlinked(self, parts: Sequence[tuple[str, FileIndex]]) -> list[tuple[str, FileIndex, str]]:
        return [
            (manifest, index, kind)
            for manifest, index in parts
            for kind in ((CORE, STATS) if index.has_stats else (CORE,))
            if not self._linked(self.directory / f"{self._stem(manifest)}.{kind}")
        ]

    def has_assembly(self, index_key: str) -> bool:
        """Whether the tier holds the assembly of the list keyed `index_key` (not yet checked)."""
        return (self.directory / f"asm-{self._stem(index_key)}").exists()

    def assemble_later(
        self,
        index_key: str,
        manifests: Sequence[str],
        with_stats: bool,
        fields: Sequence[tuple[int, PrimitiveType]] = (),
    ) -> None:
        """Write the assembly of manifests the tier holds (a plan that streamed them did not assemble them), and
        the files of `fields` over it, on the background thread after their segments, from the segments."""
        if not self.has_assembly(index_key):
            self._later(self._assemble, index_key, list(manifests), with_stats, list(fields))

    def _assemble(
        self, index_key: str, manifests: list[str], with_stats: bool, fields: list[tuple[int, PrimitiveType]]
    ) -> None:
        parts = self.get(manifests, with_stats)
        if all(p is not None and (p.has_stats or not with_stats) for p in parts):
            index = FileIndex.concat([p for p in parts if p is not None])
            self._write_assembly(f"asm-{self._stem(index_key)}", index, manifests)
            if with_stats and fields:
                self._write_fields(index_key, index, fields)

    def put_assembly(self, index_key: str, index: FileIndex, manifests: Sequence[str]) -> None:
        """Write the assembled index of the manifests `manifests` (by the reader's key; `index_key`: the list's),
        on the background thread after their segments; not when a manifest is not linked by then."""
        name = f"asm-{self._stem(index_key)}"
        if not (self.directory / name).exists():
            self._later(self._write_assembly, name, index, list(manifests))

    def _write_assembly(self, name: str, index: FileIndex, manifests: list[str]) -> None:
        kinds = (CORE, STATS) if index.has_stats else (CORE,)
        slots: dict[str, list[tuple[str, int]]] = {kind: [] for kind in kinds}
        for manifest in manifests:
            for kind in kinds:
                try:
                    target = _TARGET.fullmatch(os.readlink(self.directory / f"{self._stem(manifest)}.{kind}"))
                except OSError:
                    return
                if target is None:
                    return
                slots[kind].append((target.group(1), int(target.group(2))))
        data = assembly_file(name, index, manifests, slots[CORE], slots.get(STATS), self._key)
        try:
            self._write_file(name, data)
        except OSError as exc:
            self._failed(exc)
            return
        self._share(name, data, slots)

    @contextlib.contextmanager
    def decoding(self) -> Iterator[None]:
        """Manifests are being decoded meanwhile: the writer waits (up to DEFER_SECONDS a segment)."""
        with self._lock:
            self._decoding += 1
        try:
            yield
        finally:
            with self._lock:
                self._decoding -= 1

    def _write(self, wanted: list[tuple[str, FileIndex, str]], size: int) -> None:
        deadline = time.monotonic() + DEFER_SECONDS
        # (not once half the queue's bound waits: then the queue would drop what a big cold plan decodes)
        while self._decoding and self._queued_bytes < PENDING_BYTES // 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        try:
            cores = [(manifest, index) for manifest, index, kind in wanted if kind == CORE]
            stats = [(m, index.frame.select(STATS_COLUMNS)) for m, index, kind in wanted if kind == STATS]
            self._publish(CORE, core_segments(cores, self._key) if cores else [])
            self._publish(STATS, stats_segments(stats, self._key) if stats else [])
        except OSError as exc:
            self._failed(exc)
        else:
            with self._lock:
                if self._failing:
                    log.info("writing to index_directory again", extra={"directory": str(self.directory)})
                self._failing = False
        finally:
            with self._lock:
                self._queued_bytes -= size

    def _put(self, name: str, data: bytes) -> None:
        """Put a file that refers to no segment (a manifest list, a field's file) in the shared store."""
        if self.store is not None:
            self.store.put(name, data)

    def _share(self, name: str, data: bytes, slots: dict[str, list[tuple[str, int]]]) -> None:
        """Put an assembly in the shared store, after the segments it refers to (those this process holds and
        has not put there: the first assembly that refers to a segment puts it)."""
        if self.store is None:
            return
        for segment in dict.fromkeys(segment for refs in slots.values() for segment, _ in refs):
            with self._lock:
                if segment in self._shared:
                    continue
            try:
                content = (self.directory / segment).read_bytes()
            except OSError:
                return  # (evicted meanwhile: the assembly is not shared)
            if not self.store.put(segment, content):
                return
            with self._lock:
                self._shared.add(segment)
        self.store.put(name, data)

    def _failed(self, exc: OSError) -> None:
        self._count(write_failures=1)
        with self._lock:
            first, self._failing = not self._failing, True
        if first:  # once per run of failures: a full disk would otherwise log every chunk
            log.warning(
                "cannot write to index_directory: manifests are decoded again by every process that plans "
                "them, until a write succeeds (free space there, or set index_directory)",
                extra={"directory": str(self.directory), "error": f"{type(exc).__name__}: {exc}"},
            )

    def _write_file(self, name: str, data: bytes) -> None:
        """Write `data` as `name`, whole: under a temporary name, then renamed."""
        partial = self.directory / f".{name}.{os.getpid()}.{secrets.token_hex(4)}"
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.rename(partial, self.directory / name)
        finally:
            with contextlib.suppress(OSError):
                partial.unlink()
        with self._lock:
            self.stats.files += 1
            self.stats.bytes += len(data)
            self._written_since_sweep += len(data)
            sweep = self._written_since_sweep * SWEEP_SHARE > self.max_bytes
        if sweep:
            self._sweep()

    def _publish(self, kind: str, segments: list[tuple[bytes, list[str]]]) -> None:
        """Write each segment whole (under a temporary name, then renamed to its own), then link its manifests
        to their slots; a manifest another process linked first keeps its link."""
        for data, manifests in segments:
            name = f"seg-{secrets.token_hex(16)}.{kind}"
            self._write_file(name, data)
            linked = sum(self._link(f"{name}#{slot}", manifest, kind) for slot, manifest in enumerate(manifests))
            if not linked:  # every manifest of it linked by another process meanwhile: nothing points at it
                with contextlib.suppress(OSError):
                    os.unlink(self.directory / name)
            with self._lock:
                self.stats.writes += linked

    def _link_path(self, manifest: str, kind: str) -> Path:
        return self.directory / f"{self._stem(manifest)}.{kind}"

    def _linked(self, link: Path) -> bool:
        """Whether `link` points at a segment that is there (not one evicted or refused)."""
        try:
            return (self.directory / os.readlink(link).partition("#")[0]).exists()
        except OSError:
            return False

    def _link(self, target: str, manifest: str, kind: str) -> bool:
        """Link `manifest` to `target` (a segment's slot) unless another process linked it first; a link to a
        segment that is gone (evicted, refused) is replaced."""
        link = self.directory / f"{self._stem(manifest)}.{kind}"
        for _ in range(2):
            try:
                os.symlink(target, link)
                return True
            except FileExistsError:
                if self._linked(link):
                    return False
                with contextlib.suppress(OSError):
                    os.unlink(link)
        return False

    def _sweep(self) -> None:
        """Remove the least recently used segments and assemblies until KEEP_SHARE of max_bytes remains, when the
        directory holds more than max_bytes; then the links to segments that are gone, and the temporary files of
        writers that died. (An assembly whose segments are gone is removed when it is next read.)"""
        segments: list[tuple[float, int, str]] = []
        links: list[tuple[str, str]] = []
        stale = time.time() - STALE_SECONDS
        with contextlib.suppress(OSError), os.scandir(self.directory) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.is_symlink():
                        links.append((entry.name, os.readlink(entry.path).partition("#")[0]))
                        continue
                    found = entry.stat(follow_symlinks=False)
                    if entry.name.startswith("."):
                        if found.st_mtime < stale:
                            os.unlink(entry.path)
                    elif entry.name.startswith(("seg-", "asm-", "lst-", "fld-")):
                        segments.append((found.st_mtime, found.st_size, entry.name))
        total = sum(size for _, size, _ in segments)
        kept = {name for _, _, name in segments}
        evicted = 0
        if total > self.max_bytes:
            for _, size, name in sorted(segments):
                if total <= self.max_bytes * KEEP_SHARE:
                    break
                with contextlib.suppress(OSError):
                    os.unlink(self.directory / name)
                    total -= size
                    evicted += 1
                    kept.discard(name)
        for link, target in links:
            if target not in kept:
                with contextlib.suppress(OSError):
                    os.unlink(self.directory / link)
        with self._lock:
            self._written_since_sweep = 0
            self.stats.bytes, self.stats.files = total, len(kept)
            self.stats.evictions += evicted

    # -- names and counts ---------------------------------------------------------------------------------

    def _stem(self, manifest: str) -> str:
        return hashlib.sha256(f"{FORMAT}\0{self._key_id}\0{manifest}".encode()).hexdigest()[:40]

    def _count(self, hits: int = 0, misses: int = 0, rejected: int = 0, write_failures: int = 0) -> None:
        with self._lock:
            self.stats.hits += hits
            self.stats.misses += misses
            self.stats.rejected += rejected
            self.stats.write_failures += write_failures

"""Finished plans too big for the plan-result cache, kept on local disk and read back memory-mapped, so that
executors fetching a big plan's tasks by id never make the service plan it again.

A spilled plan is two files in this process's own directory (`<root>/<pid>-<random>/`, mode 0700):
`<key>.ipc`, its data files' columns as uncompressed Arrow IPC (mapped when read: no copy), and `<key>.bin`,
the rest of the plan pickled (protocol 5) with its numpy arrays out of band, after a header and the buffers'
table, and a keyed BLAKE2b of both files under a key that lives only in this process's memory: a file this
process did not write is never unpickled. Plans are written by a background thread at the lowest CPU
priority (a 2,000,000-file plan takes about a second), and served from memory until they are on disk. The
directory is bounded by `max_bytes` (the least recently used plans go first), removed at shutdown, and the
directories of processes no longer running are removed at start. A replica that does not hold a plan (or a
restarted service) rebuilds it from its id, as before. Only plans answered by id are written: their tasks
will be fetched; a plan sent whole is not written out beside its answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import mmap
import os
import pickle
import secrets
import shutil
import struct
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from planner_service.io.private_directory import lowest_priority, private_directory
from planner_service.metadata.file_index import FileIndex
from planner_service.numerals import ascii_int
from planner_service.service.cached_plan import CachedPlan

log = logging.getLogger(__name__)

MAGIC = b"SPLNPLN1"
LOADED_PLANS = 8  # spilled plans kept open (their Python objects; their columns stay on disk, mapped)
_ALIGN = 64


def plan_spill(root: Path, max_bytes: int) -> PlanSpill | None:
    """The spill under `root`, or None (logged, saying why and what to do) when the directory cannot be made
    or written: the service then plans again what it would have read back."""
    try:
        spill = PlanSpill(root, max_bytes)
        probe = spill.directory / ".probe"
        probe.write_bytes(b"0")
        probe.unlink()
    except OSError as exc:
        log.warning(
            "plan_spill_directory cannot be used: plans answered by id are planned again when their tasks are "
            'fetched (give it a writable directory, or "" to turn spilling off)',
            extra={"directory": str(root), "error": f"{type(exc).__name__}: {exc}"},
        )
        return None
    return spill


class PlanSpill:
    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root, self.max_bytes = root, max_bytes
        private_directory(root)
        _remove_stale(root)
        self.directory = root / f"{os.getpid()}-{secrets.token_hex(4)}"
        self.directory.mkdir(mode=0o700)
        self._key = secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._files: OrderedDict[str, int] = OrderedDict()  # file stem -> bytes on disk, oldest first
        self._loaded: OrderedDict[str, CachedPlan] = OrderedDict()
        self._pending: dict[str, CachedPlan] = {}  # being written: served from memory meanwhile
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="plan-spill", initializer=lowest_priority)
        self.bytes = 0
        self.spilled = self.evicted = self.failed = 0
        self._failing = False  # the last write failed: logged once until one succeeds again

    def put_later(self, key: str, result: CachedPlan) -> None:
        """Write `result` to disk in the background; until then get() answers it from memory."""
        stem = _stem(key)
        with self._lock:
            if stem in self._pending or stem in self._files:
                return
            self._pending[stem] = result
        self._writer.submit(self._put_pending, key, stem)

    def _put_pending(self, key: str, stem: str) -> None:
        with self._lock:
            result = self._pending.get(stem)
        if result is not None:
            try:
                self.put(key, result)
            finally:
                with self._lock:
                    self._pending.pop(stem, None)

    def flush(self) -> None:
        """Wait until every plan handed to put_later() is on disk (or refused)."""
        self._writer.submit(lambda: None).result()

    def put(self, key: str, result: CachedPlan) -> CachedPlan | None:
        """Write `result` to disk; the disk-backed copy (what to serve from now on), or None when it cannot be
        kept (bigger than the whole bound, or the disk refuses it: the plan is then rebuilt when wanted)."""
        stem = _stem(key)
        try:
            size = self._write(stem, result)
        except (OSError, pickle.PicklingError) as exc:
            self._remove(stem)  # (nothing half-written stays: and none is read, each file is checked by its key)
            with self._lock:
                self.failed += 1
                first, self._failing = not self._failing, True
            if first:  # once per run of failures: a full disk would otherwise log every plan
                log.warning(
                    "cannot spill plans to disk: plans answered by id are planned again when their tasks are "
                    "fetched, until a write succeeds (free space there, or set plan_spill_directory)",
                    extra={"directory": str(self.directory), "error": str(exc)},
                )
            return None
        with self._lock:
            if self._failing:
                log.info("spilling plans to disk again", extra={"directory": str(self.directory)})
            self._failing = False
            self._files[stem] = size
            self.bytes += size
            self.spilled += 1
            while self.bytes > self.max_bytes and self._files:
                victim, freed = self._files.popitem(last=False)
                self.bytes -= freed
                self.evicted += 1
                self._loaded.pop(victim, None)
                self._remove(victim)
        return self.get(key)

    def holds(self, key: str) -> bool:
        """Whether the plan of `key` is on disk (or being written there)."""
        stem = _stem(key)
        with self._lock:
            return stem in self._files or stem in self._pending

    def get(self, key: str) -> CachedPlan | None:
        """The spilled plan of `key`, mapped from disk; None when it was never spilled or has been evicted."""
        stem = _stem(key)
        with self._lock:
            pending = self._pending.get(stem)
            if pending is not None:
                return pending
            if stem not in self._files:
                return None
            self._files.move_to_end(stem)
            loaded = self._loaded.get(stem)
            if loaded is not None:
                self._loaded.move_to_end(stem)
                return loaded
        try:
            loaded = self._read(stem)
        except (OSError, ValueError) as exc:  # gone or damaged: forget it, the plan is rebuilt
            log.warning("cannot read a spilled plan", extra={"file": stem, "error": str(exc)})
            with self._lock:
                self.bytes -= self._files.pop(stem, 0)
            self._remove(stem)
            return None
        with self._lock:
            if stem in self._files:
                self._loaded[stem] = loaded
                while len(self._loaded) > LOADED_PLANS:
                    self._loaded.popitem(last=False)
        return loaded

    def close(self) -> None:
        self._writer.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            self._pending.clear()
            self._files.clear()
            self._loaded.clear()
        shutil.rmtree(self.directory, ignore_errors=True)

    # -- files ------------------------------------------------------------------------------------------

    def _write(self, stem: str, result: CachedPlan) -> int:
        plan = result.plan
        files = plan.files
        assert files is not None, "a plan without files is small"
        index = files.index if len(files.rows) == len(files.index) else files.index.take(files.rows)
        ipc = self.directory / f"{stem}.ipc"
        index.frame.write_ipc(ipc, compression="uncompressed")
        light_index = replace(index, frame=index.frame.clear(), _cache={})
        light = replace(result, plan=replace(plan, files=replace(files, index=light_index, rows=_NO_ROWS)))
        buffers: list[pickle.PickleBuffer] = []
        head = pickle.dumps(light, protocol=5, buffer_callback=buffers.append)
        views = [b.raw() for b in buffers]
        table = struct.pack("<Q", len(views)) + b"".join(struct.pack("<Q", v.nbytes) for v in views)
        prefix = MAGIC + struct.pack("<Q", len(head)) + head + table
        digest = _file_digest(self._key, ipc)
        binary = self.directory / f"{stem}.bin"
        with open(binary, "wb") as out:
            out.write(prefix)
            digest.update(prefix)
            position = len(prefix)
            for view in views:
                pad = -position % _ALIGN
                out.write(b"\0" * pad)
                out.write(view)
                digest.update(view)
                position += pad + view.nbytes
            out.write(digest.digest())
        return ipc.stat().st_size + binary.stat().st_size

    def _read(self, stem: str) -> CachedPlan:
        ipc, binary = self.directory / f"{stem}.ipc", self.directory / f"{stem}.bin"
        with open(binary, "rb") as f:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if data[: len(MAGIC)] != MAGIC:
            raise ValueError("not a spilled plan")
        head_at = len(MAGIC) + 8
        try:  # the sizes are checked against the file before anything is read at them (a damaged header)
            (head_size,) = struct.unpack_from("<Q", data, len(MAGIC))
            if head_at + head_size + 8 > len(data):
                raise ValueError("a spilled plan whose header points past its end")
            (count,) = struct.unpack_from("<Q", data, head_at + head_size)
            if head_at + head_size + 8 + 8 * count > len(data):
                raise ValueError("a spilled plan whose header points past its end")
            sizes = struct.unpack_from(f"<{count}Q", data, head_at + head_size + 8)
        except struct.error as exc:
            raise ValueError(f"a spilled plan with a damaged header: {exc}") from None
        position = head_at + head_size + 8 + 8 * count
        digest = _file_digest(self._key, ipc)
        digest.update(memoryview(data)[:position])
        buffers = []
        for n in sizes:
            position += -position % _ALIGN
            view = memoryview(data)[position : position + n]
            digest.update(view)
            buffers.append(view)
            position += n
        if not hmac.compare_digest(digest.digest(), bytes(data[position : position + 32])):
            raise ValueError("a spilled plan that this process did not write")
        light: CachedPlan = pickle.loads(memoryview(data)[head_at : head_at + head_size], buffers=buffers)
        table = pa.ipc.open_file(pa.memory_map(str(ipc))).read_all()  # mapped: no column is copied
        frame = pl.from_arrow(table, rechunk=False)
        assert isinstance(frame, pl.DataFrame)
        files = light.plan.files
        assert files is not None
        index = FileIndex(frame, *_index_fields(files.index))
        rows = np.arange(len(index), dtype=np.int64)
        return replace(light, plan=replace(light.plan, files=replace(files, index=index, rows=rows)))

    def _remove(self, stem: str) -> None:
        for suffix in (".ipc", ".bin"):
            with contextlib.suppress(OSError):
                (self.directory / f"{stem}{suffix}").unlink()


_NO_ROWS = np.zeros(0, dtype=np.int64)


def _index_fields(index: FileIndex) -> tuple[Any, ...]:
    return (
        index.partitions,
        index.partition_id,
        index.directories,
        index.directory_id,
        index.has_stats,
        index.null_free,
    )


def _stem(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def _remove_stale(root: Path) -> None:
    """The spill directories of processes that are no longer running (a crash, a kill) go."""
    for entry in root.iterdir():
        pid = ascii_int(entry.name.partition("-")[0])
        if entry.is_dir() and pid is not None and not _running(pid):
            shutil.rmtree(entry, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _file_digest(key: bytes, path: Path) -> Any:
    """A keyed BLAKE2b begun over the file's bytes (read a MiB at a time)."""
    digest = hashlib.blake2b(key=key, digest_size=32)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest

"""The index's disk tier shared through object storage (`index_store`): so that a replica on another host plans
warm what any replica planned before.

Whatever a process writes to its tier's directory (segments, assemblies: planning/index_tier.py) it also puts
under the store's prefix, by the same name, after the local write and on the same background thread; a
process that misses an assembly in its directory gets it from the store, and the segments it refers to, into
its directory (then maps them as its own). Every file is checked by its MAC under the signing key when it is
opened, wherever it came from: a store that holds a damaged or planted object costs a decode, never a wrong
plan. The store is reached as the service reads tables (its S3, GCS or Azure settings), within its prefix
alone; a store that refuses (down, denied, full) costs decodes with one warning per run of failures, never a
plan. What a replica finds there is what another planned as a whole (a snapshot's assembly): manifests of a
list nobody assembled are decoded.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from planner_service.errors import PlannerError
from planner_service.io.fileio import FileIO, FileNotFound

log = logging.getLogger(__name__)


@dataclass
class StoreStats:
    """What the store did for this process, for metrics."""

    uploads: int = 0
    downloads: int = 0
    failures: int = 0


class IndexStore:
    def __init__(self, io: FileIO, prefix: str) -> None:
        """`io`: storage within `prefix` alone (its roots), as the service reaches its stores."""
        self.io = io
        self.prefix = prefix.rstrip("/")
        self.stats = StoreStats()
        self._lock = threading.Lock()
        self._failing = False

    def put(self, name: str, data: bytes) -> bool:
        """Put `data` as `name` under the prefix; False when the store refuses (logged once a run)."""
        try:
            self.io.write(f"{self.prefix}/{name}", data)
        except PlannerError as exc:
            self._failed("put", exc)
            return False
        self._succeeded(uploads=1)
        return True

    def get(self, name: str) -> bytes | None:
        """The object `name` under the prefix; None when there is none, or the store refuses (logged once)."""
        try:
            data = self.io.read(f"{self.prefix}/{name}")
        except FileNotFound:
            return None
        except PlannerError as exc:
            self._failed("get", exc)
            return None
        self._succeeded(downloads=1)
        return data

    def _failed(self, what: str, exc: PlannerError) -> None:
        with self._lock:
            self.stats.failures += 1
            first, self._failing = not self._failing, True
        if first:
            log.warning(
                "index_store cannot be used: manifests are decoded by each host that plans them, until it answers "
                "again (check the store's settings and that the service may read and write its prefix)",
                extra={"store": self.prefix, "operation": what, "error": str(exc)},
            )

    def _succeeded(self, uploads: int = 0, downloads: int = 0) -> None:
        with self._lock:
            if self._failing:
                log.info("index_store answers again", extra={"store": self.prefix})
            self._failing = False
            self.stats.uploads += uploads
            self.stats.downloads += downloads

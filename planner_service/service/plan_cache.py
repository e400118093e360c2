"""Plans of the native API by canonical request: made once, kept in a byte-bounded plan-result cache, and
rebuilt from the plan id alone when the cache (or this process) no longer has them.

The same request on the same snapshot (filter, select, options, case sensitivity, and the table's metadata
file) is answered from the cache; explain requests are always planned afresh (their reasons are large). A
plan too big for the cache is kept on local disk instead (service/plan_spill.py), when a spill directory is
configured, so that fetching its tasks by id does not plan it again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

from planner_service.cache import LruCache
from planner_service.catalog.base import LoadedTable, load_by_metadata_location
from planner_service.metadata.snapshot_choice import choose_snapshot
from planner_service.planning.admission import WAIT_STEP_SECONDS, Admission, Cancellation, SharedCancellation
from planner_service.planning.planner import ScanPlanner
from planner_service.service.cached_plan import CachedPlan
from planner_service.service.plan_ids import CanonicalRequest
from planner_service.service.plan_spill import PlanSpill


@dataclass
class _InFlight:
    done: threading.Event = field(default_factory=threading.Event)
    result: CachedPlan | None = None
    error: BaseException | None = None
    wanted: SharedCancellation = field(
        default_factory=SharedCancellation
    )  # cancelled when every request waiting for it is


class PlanCache:
    """The plan-result cache (plans by canonical request) and the body cache (encoded /plan responses).

    Plans are made as `admission` admits them (planning/admission.py: slots, a memory budget, a bounded
    queue, 503 + Retry-After beyond it). Identical requests arriving together are planned once: the others
    wait for that plan (single flight), which stops when every request waiting for it has gone."""

    def __init__(
        self, planner: ScanPlanner, max_bytes: int, admission: Admission, spill: PlanSpill | None = None
    ) -> None:
        self.planner = planner
        self.spill = spill
        self.cache: LruCache[CachedPlan] = LruCache(max_bytes // 2, lambda r: r.weight)
        self.bodies: LruCache[bytes] = LruCache(max_bytes // 2, len)
        self.admission = admission
        self._lock = threading.Lock()
        self._in_flight: dict[str, _InFlight] = {}
        self.made = 0  # plans made (fresh, explained, or rebuilt from an id): /metrics

    def plan(
        self,
        request: CanonicalRequest,
        table: LoadedTable,
        explain: bool = False,
        cancel: Cancellation | None = None,
        inline_limit: int | None = None,
        patient: bool = False,
    ) -> tuple[CachedPlan, bool]:
        """(the plan, whether it was made now); explained plans are always made now and not kept. With
        `inline_limit`, a plan too big for the cache goes to disk only when it has more tasks (it is answered by
        id, and its tasks will be fetched): a plan sent whole is not written out beside its answer. A `patient`
        plan (accepted already, made in the background) waits for admission however long it takes."""
        cancel = cancel or Cancellation()
        if explain:
            return self._admitted(request, table, cancel, explain=True), True
        return self._single_flight(request, table, cancel, inline_limit, patient)

    def get(
        self, request: CanonicalRequest, table: LoadedTable | None = None, cancel: Cancellation | None = None
    ) -> CachedPlan:
        """The plan of a canonical request, from the cache or made now."""
        return self._single_flight(request, table, cancel or Cancellation())[0]

    def _single_flight(
        self,
        request: CanonicalRequest,
        table: LoadedTable | None,
        cancel: Cancellation,
        inline_limit: int | None = None,
        patient: bool = False,
    ) -> tuple[CachedPlan, bool]:
        key = request.cache_id
        cached = self.held(key)
        if cached is not None:
            return cached, False
        with self._lock:
            flight = self._in_flight.get(key)
            owner = flight is None or not flight.wanted.join(cancel)  # (a flight nobody wants any more: afresh)
            if owner:
                flight = self._in_flight[key] = _InFlight()
                flight.wanted.join(cancel)
        assert flight is not None
        if not owner:
            while not flight.done.wait(WAIT_STEP_SECONDS):
                cancel.check()
            if flight.error is not None:
                raise flight.error
            assert flight.result is not None
            return flight.result, False
        try:
            flight.result = self._admitted(request, table, flight.wanted.cancellation, patient=patient)
            self._keep(key, flight.result, inline_limit)
            return flight.result, True
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with self._lock:
                if self._in_flight.get(key) is flight:
                    del self._in_flight[key]
            flight.done.set()

    def _admitted(
        self,
        request: CanonicalRequest,
        table: LoadedTable | None,
        cancel: Cancellation,
        explain: bool = False,
        patient: bool = False,
    ) -> CachedPlan:
        if table is None:
            loaded = load_by_metadata_location(self.planner.io, request.metadata_location)
            table = LoadedTable(request.table, loaded.metadata_location, loaded.metadata)
        snapshot = choose_snapshot(table.metadata, request.scan.snapshot).snapshot
        files = self.planner.estimated_files(snapshot)
        ranges = (
            self.planner.estimated_extra_ranges(table, snapshot, request.scan.options) if request.scan.combine else 0
        )
        with self.admission.admitted(files, cancel, patient, extra_ranges=ranges):
            return self._plan(request, table, cancel, explain)

    def keeps(self, key: str) -> bool:
        """Whether the plan of `key` is kept in memory (and counted there)."""
        return key in self.cache

    def accounts_for(self, key: str) -> bool:
        """Whether the plan of `key` is held where its memory is accounted for: kept in memory (counted by the
        cache) or spilled to disk (mapped pages, which the kernel reclaims)."""
        return key in self.cache or (self.spill is not None and self.spill.holds(key))

    def held(self, key: str) -> CachedPlan | None:
        """The plan held in memory or spilled to disk under `key`, if any."""
        cached = self.cache.get(key)
        if cached is None and self.spill is not None:
            cached = self.spill.get(key)
        return cached

    def _keep(self, key: str, result: CachedPlan, inline_limit: int | None = None) -> None:
        """In the cache; on disk when it is too big for the cache (and spilling is on) and answered by id."""
        files, tasks = result.plan.files, result.plan.combined
        if result.weight <= self.cache.max_bytes or self.spill is None or files is None or not len(files):
            self.cache.put(key, result)
        elif inline_limit is None or (tasks is not None and len(tasks) > inline_limit):
            self.spill.put_later(key, result)

    def _plan(self, request: CanonicalRequest, table: LoadedTable, cancel: Cancellation, explain: bool) -> CachedPlan:
        with self._lock:
            self.made += 1
        plan = self.planner.plan(table, replace(request.scan, explain=explain), cancel)
        return CachedPlan(request, plan)

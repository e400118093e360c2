"""REST scan plans as the service makes them (the routes are api/rest_scan.py), at the one place plans are
made (the plan cache: admission, single flight, the cache and the spill) and named by signed, self-describing
ids (service/plan_ids.py, `r3.`): any replica sharing the signing key, and any worker, answers any poll,
page and cancel of any plan, rebuilding the plan from its id when it holds none.

A request is checked against its table first (prepare_scan), then planned while the request waits, up to
`rest_plan_wait_seconds` (answered `completed`), or in the background past that wait, or at once when its
snapshot has more than `async_plan_min_files` data files (answered `submitted`). A poll of a plan this
replica neither holds nor plans starts planning it here, as the first request did there. What a replica
knows of a plan beyond its id is only what it did with it: a failure (answered `failed`) and a cancel
(answered `cancelled`, its planning here stopped), each for `plan_ttl_seconds`. A cancel releases what the
replica it reaches holds for the plan; another replica polled for it later may plan it again (the spec asks
a service to release resources, and clients cancel only scans they no longer read).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import anyio.to_thread

from planner_service.access.table_access import TableAccess
from planner_service.catalog.base import LoadedTable, TableIdentifier
from planner_service.errors import (
    NoSuchPlanIdError,
    NoSuchPlanTaskError,
    OverloadedError,
    PlanCancelledError,
    PlannerError,
)
from planner_service.io.vending import StorageCredentials
from planner_service.numerals import ascii_int
from planner_service.planning.admission import Cancellation
from planner_service.planning.scan_request import ScanRequest, check_on_table, stats_field_ids
from planner_service.service import planning_entrance as entrance
from planner_service.service.cached_plan import CachedPlan
from planner_service.service.plan_ids import CanonicalRequest
from planner_service.service.runtime import Runtime
from planner_service.wire.rest_scan_tasks_json import encode_scan_task_rows, encode_scan_tasks

log = logging.getLogger(__name__)

MAX_ENDED = 10_000  # failed and cancelled plans remembered (the oldest forgotten beyond)
BACKGROUND_PLANS = 2  # submitted plans made at once (each reads manifests in parallel too); others wait unthreaded
MAX_FLIGHTS = 100  # plans being made here for one principal; beyond, 503 (plans kept are bounded by the cache)
_TOKEN_SEPARATOR = ":"
_TRANSIENT = (OverloadedError, PlanCancelledError)  # a plan failing so is planned again when asked again


class PlanStatus(StrEnum):
    SUBMITTED = "submitted"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class RestScan:
    """A REST plan's request, checked against its table: what planning and answering need."""

    plan_id: str
    table: LoadedTable
    request: CanonicalRequest
    access: TableAccess
    stats_ids: frozenset[int] | None = None  # stats-fields, as field ids
    estimated_files: int = 0
    in_background: bool = False  # more data files than async_plan_min_files: submitted at once, planned later
    credentials: StorageCredentials | None = None  # vended for this answer (a plan's, a poll's)


@dataclass(frozen=True)
class Outcome:
    status: PlanStatus
    plan: CachedPlan | None = None  # completed
    error: PlannerError | None = None  # failed


@dataclass(frozen=True)
class Pages:
    """A completed plan's file scan tasks in `page_size` pages; with a `fanout`, nested pages."""

    tasks: int
    page_size: int
    fanout: int = 0  # plan-task tokens per page (nested pages); 0: every further page listed on the first

    @property
    def count(self) -> int:
        """At least one page, so that an empty plan still has a (empty) first page."""
        return max(1, -(-self.tasks // self.page_size))

    def bounds(self, number: int) -> tuple[int, int]:
        return number * self.page_size, min((number + 1) * self.page_size, self.tasks)

    def children(self, number: int) -> range:
        """The pages whose plan-task tokens page `number`'s answer lists. Without a fanout the first lists
        every other page; with one, pages form a tree of that fanout (page n lists n*k+1 .. n*k+k), so a
        client reaches each page exactly once by fetching what each answer lists (the spec's nested plan
        tasks)."""
        if self.fanout == 0:
            return range(1, self.count) if number == 0 else range(0)
        first = number * self.fanout + 1
        return range(min(first, self.count), min(first + self.fanout, self.count))


def pages_of(runtime: Runtime, plan: CachedPlan) -> Pages:
    files = plan.plan.files
    settings = runtime.settings
    return Pages(len(files) if files is not None else 0, settings.plan_task_page_size, settings.plan_task_fanout)


def plan_task_token(plan_id: str, page: int) -> str:
    return f"{plan_id}{_TOKEN_SEPARATOR}{page}"


def task_tokens(runtime: Runtime, plan_id: str, plan: CachedPlan, number: int = 0) -> list[str]:
    """Plan-task tokens of the pages page `number`'s answer lists (the first page is answered inline)."""
    return [plan_task_token(plan_id, page) for page in pages_of(runtime, plan).children(number)]


def encode_page(runtime: Runtime, scan: RestScan, plan: CachedPlan, number: int) -> dict[str, Any]:
    """One page as the spec's ScanTasks (a worker thread): rendered from the plan's columns, or from task
    objects where the data files carry stats-fields (never under read restrictions: statistics count hidden
    rows and raw values)."""
    files, meta = plan.plan.files, plan.plan.table.metadata
    if files is None:
        return {"delete-files": [], "file-scan-tasks": []}
    begin, end = pages_of(runtime, plan).bounds(number)
    if scan.stats_ids is None or plan.plan.restriction is not None:
        return encode_scan_task_rows(files, begin, end, meta.specs, meta.schema, plan.rest_residuals)
    tasks = files.to_objects(with_stats=True, begin=begin, end=end)
    return encode_scan_tasks(tasks, meta.specs, meta.schema, scan.stats_ids)


def page_answer(runtime: Runtime, scan: RestScan, plan: CachedPlan, number: int) -> dict[str, Any]:
    """Page `number` of a plan's answer (a worker thread): its tasks, and with a fanout the tokens of the pages
    below it."""
    if number >= pages_of(runtime, plan).count:
        raise NoSuchPlanTaskError(f"No such plan task: page {number} of {scan.plan_id[:64]!r}")
    answer = encode_page(runtime, scan, plan, number)
    nested = task_tokens(runtime, scan.plan_id, plan, number)
    if nested:  # (plan_task_fanout: the pages below this one)
        answer["plan-tasks"] = nested
    return answer


def held_page(
    runtime: Runtime, identifier: TableIdentifier, plan_id: str, number: int, access: TableAccess
) -> tuple[RestScan, dict[str, Any] | None]:
    """The scan of a plan-task token's id and, when the plan is held here, the page (a worker thread: one
    hop for the common case)."""
    scan = reopen_scan(runtime, identifier, plan_id, access)
    plan = runtime.plans.held(scan.request.cache_id)
    return scan, (page_answer(runtime, scan, plan, number) if plan is not None else None)


def prepare_scan(
    runtime: Runtime,
    identifier: TableIdentifier,
    request: ScanRequest,
    access: TableAccess,
    select: list[str] | None = None,
    stats_fields: list[str] | None = None,
) -> RestScan:
    """Load the table (when the caller may plan it), check the request against it (a worker thread), so that
    a bad one is refused now, not a failed plan later, and issue its id."""
    decided = entrance.decide(runtime, access, str(identifier), None, request, rest=True, stats_fields=stats_fields)
    chosen, stats_ids = check_on_table(decided.table.metadata, request, select, stats_fields)
    files = runtime.planner.estimated_files(chosen.snapshot)  # (planFiles)
    submit = runtime.settings.async_plan_min_files is not None and files > runtime.settings.async_plan_min_files
    return RestScan(
        decided.plan_id, decided.table, decided.request, access, stats_ids, files, submit, decided.credentials
    )


def reopen_scan(
    runtime: Runtime, identifier: TableIdentifier, plan_id: str, access: TableAccess, vend: bool = False
) -> RestScan:
    """The scan of a plan id issued to this caller for this table (a worker thread): any replica opens it;
    with `vend`, with the credentials a poll's answer carries, vended now (the table loaded for this caller).
    A page of a plan held here takes the table the plan holds: nothing is loaded for it."""
    canonical = opened_plan(runtime, identifier, plan_id, access)
    held = None if vend else runtime.plans.held(canonical.cache_id)
    if held is not None:
        table = held.plan.table
    else:
        table = runtime.load_planned(access.principal, canonical.table, canonical.metadata_location)
    stats_ids = stats_field_ids(canonical.stats_fields, table.metadata.schema, canonical.scan.case_sensitive)
    credentials = runtime.storage_credentials(table, access) if vend else None
    return RestScan(plan_id, table, canonical, access, stats_ids, credentials=credentials)


def opened_plan(runtime: Runtime, identifier: TableIdentifier, plan_id: str, access: TableAccess) -> CanonicalRequest:
    """The request of a REST plan id issued to this caller for this table (nothing of the table loaded)."""
    canonical = runtime.open_plan_id(plan_id, access, rest=True)
    if canonical.table != str(identifier):
        raise NoSuchPlanIdError(f"No such plan for table {identifier}: {plan_id[:64]!r}")
    return canonical


def split_token(token: str) -> tuple[str, int]:
    """(plan id, page number) of a plan-task token; NoSuchPlanTaskError for anything else."""
    plan_id, _, text = token.rpartition(_TOKEN_SEPARATOR)
    number = ascii_int(text)
    if not plan_id or number is None or number == 0:
        raise NoSuchPlanTaskError(f"No such plan task: {token[:80]!r}")
    return plan_id, number


@dataclass
class _Flight:
    """A plan being made on this replica for a REST plan id."""

    task: asyncio.Future[CachedPlan]
    cancel: Cancellation
    principal: str


class RestPlans:
    """What this replica does with REST plans: those it is making (flights, by plan id) and those that
    failed or were cancelled here (for plan_ttl_seconds). Everything else is the plan cache's."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._flights: dict[str, _Flight] = {}
        self._ended: OrderedDict[str, tuple[float, Outcome]] = OrderedDict()  # oldest first
        self._background = asyncio.Semaphore(BACKGROUND_PLANS)

    async def outcome(self, scan: RestScan, wait: bool) -> Outcome:
        """The plan's outcome: kept or made while the caller waits (up to rest_plan_wait_seconds, when
        `wait`), else submitted and made in the background. A failure is answered `failed`."""
        ended = self._ended_outcome(scan.plan_id)
        if ended is not None:
            return ended
        held = self.runtime.plans.held(scan.request.cache_id)
        if held is not None:
            return Outcome(PlanStatus.COMPLETED, held)
        flight = self._flights.get(scan.plan_id) or self._start(scan, patient=not wait)
        if not wait:
            return Outcome(PlanStatus.SUBMITTED)
        try:
            plan = await asyncio.wait_for(asyncio.shield(flight.task), self.runtime.settings.rest_plan_wait_seconds)
        except TimeoutError:
            return Outcome(PlanStatus.SUBMITTED)
        except PlannerError as exc:
            return Outcome(PlanStatus.FAILED, error=exc)
        return Outcome(PlanStatus.COMPLETED, plan)

    def require_pages(self, plan_id: str) -> None:
        """A plan whose pages may be fetched here: not cancelled (its pages are gone), not failed (its error)."""
        ended = self._ended_outcome(plan_id)
        if ended is not None:
            if ended.error is not None:
                raise ended.error
            raise NoSuchPlanTaskError(f"Plan {plan_id[:64]!r} was cancelled: its tasks are gone")

    async def completed(self, scan: RestScan, cancel: Cancellation) -> CachedPlan:
        """The plan, however long making it takes (a page fetched from a replica that does not hold it); a
        cancelled plan's pages are gone."""
        self.require_pages(scan.plan_id)
        flight = self._flights.get(scan.plan_id)
        if flight is not None:
            return await asyncio.shield(flight.task)
        plan, _ = await anyio.to_thread.run_sync(self._make, scan, cancel, False)
        return plan

    def cancel(self, plan_id: str) -> None:
        """Stop making the plan here and answer `cancelled` for it (here) from now on."""
        flight = self._flights.pop(plan_id, None)
        if flight is not None:
            flight.cancel.cancel()
        self._end(plan_id, Outcome(PlanStatus.CANCELLED))

    def _start(self, scan: RestScan, patient: bool) -> _Flight:
        principal = scan.access.principal.key
        if sum(1 for f in self._flights.values() if f.principal == principal) >= MAX_FLIGHTS:
            raise OverloadedError(
                f"{MAX_FLIGHTS} plans are being made for principal '{scan.access.principal.name}' already: poll "
                "them, or cancel those no longer wanted, before asking for more",
                retry_in_seconds=5,
            )
        cancel = Cancellation()
        task = asyncio.ensure_future(self._run(scan, cancel, patient))
        flight = self._flights[scan.plan_id] = _Flight(task, cancel, principal)
        task.add_done_callback(lambda done: self._landed(scan.plan_id, flight, done))
        return flight

    async def _run(self, scan: RestScan, cancel: Cancellation, patient: bool) -> CachedPlan:
        """Make the plan in a worker thread; a patient (submitted) one first waits its turn among the
        BACKGROUND_PLANS here, holding no thread while it waits."""
        if patient:
            async with self._background:
                cancel.check()
                plan, _ = await anyio.to_thread.run_sync(self._make, scan, cancel, patient)
        else:
            plan, _ = await anyio.to_thread.run_sync(self._make, scan, cancel, patient)
        return plan

    def _make(self, scan: RestScan, cancel: Cancellation, patient: bool) -> tuple[CachedPlan, bool]:
        """At the planning entrance; audited when answered (completed_body), not when made."""
        return entrance.plan(
            self.runtime, scan.access, scan.table, scan.request, cancel=cancel, patient=patient, audited=False
        )

    def _landed(self, plan_id: str, flight: _Flight, done: asyncio.Future[CachedPlan]) -> None:
        if self._flights.get(plan_id) is flight:
            del self._flights[plan_id]
        if done.cancelled():
            return
        exc = done.exception()
        if exc is None or isinstance(exc, _TRANSIENT):  # (asked again, planned again)
            return
        if not isinstance(exc, PlannerError):
            log.error("REST planning failed", exc_info=exc, extra={"plan-id": plan_id[:64]})
            exc = PlannerError(f"Internal error ({type(exc).__name__}); the service log has the details")
        self._end(plan_id, Outcome(PlanStatus.FAILED, error=exc))

    def _end(self, plan_id: str, outcome: Outcome) -> None:
        self._ended[plan_id] = (time.monotonic() + self.runtime.settings.plan_ttl_seconds, outcome)
        self._ended.move_to_end(plan_id)
        while len(self._ended) > MAX_ENDED:
            self._ended.popitem(last=False)

    def _ended_outcome(self, plan_id: str) -> Outcome | None:
        now = time.monotonic()
        while self._ended and next(iter(self._ended.values()))[0] <= now:
            self._ended.popitem(last=False)
        ended = self._ended.get(plan_id)
        return ended[1] if ended is not None else None

    async def close(self) -> None:
        """Stop every plan being made (their threads stop at the plans' next step)."""
        flights = list(self._flights.values())
        for flight in flights:
            flight.cancel.cancel()
        await asyncio.gather(*(f.task for f in flights), return_exceptions=True)


@asynccontextmanager
async def rest_plans(runtime: Runtime) -> AsyncIterator[RestPlans]:
    """The REST plans of a service's lifetime: at its end, plans still being made are stopped."""
    plans = RestPlans(runtime)
    try:
        yield plans
    finally:
        await plans.close()

"""REST scan plans as the service makes them (the routes are api/rest_scan.py): a request is checked
against its table first (prepare_scan), then planned while the request waits, up to
`rest_plan_wait_seconds` (answered `completed`), or in the background past that wait, or at once when
its snapshot has more than `async_plan_min_files` data files (answered `submitted`); the outcome is kept
in the PlanStore (service/plan_store.py) for `plan_ttl_seconds`, for the client that asked. Plans are
admitted as the native API's are (slots, memory budget, bounded queue)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial

import anyio.to_thread

from planner_service.access.policy import Privilege
from planner_service.catalog.base import LoadedTable, TableIdentifier
from planner_service.errors import PlannerError
from planner_service.planning.admission import Cancellation
from planner_service.planning.planned_files import FileScanTask, FileTaskColumns
from planner_service.planning.scan_request import ScanRequest, check_on_table
from planner_service.service.plan_store import PlanStore, RestPlanState, TaskPages
from planner_service.service.runtime import Runtime
from planner_service.service.table_access import TableAccess

log = logging.getLogger(__name__)

BACKGROUND_PLANS = 2  # submitted plans planned at once (each also reads manifests in parallel)


@dataclass(frozen=True)
class RestScan:
    """A checked request: what planning needs, and the size estimate that decides now or in the background."""

    table: LoadedTable
    request: ScanRequest
    estimated_files: int
    access: TableAccess
    extra_ranges: int = 0  # ranges beyond one a file (admission weighs them)
    stats_ids: frozenset[int] | None = None  # stats-fields, as field ids
    in_background: bool = False  # more data files than async_plan_min_files: submitted at once, planned later


def prepare_scan(
    runtime: Runtime,
    identifier: TableIdentifier,
    request: ScanRequest,
    access: TableAccess,
    select: Sequence[str] | None = None,
    stats_fields: Sequence[str] | None = None,
) -> RestScan:
    """Load the table (when the caller may plan it) and check the request against it (a worker thread), so
    that a bad one is refused now, not a failed plan later."""
    table = runtime.load_table(str(identifier), None, access, Privilege.PLAN)
    chosen, stats_ids = check_on_table(table.metadata, request, select, stats_fields)
    files = runtime.planner.estimated_files(chosen.snapshot)  # (planFiles)
    ranges = runtime.planner.estimated_extra_ranges(table, chosen.snapshot, request.options) if request.combine else 0
    submit = runtime.settings.async_plan_min_files is not None and files > runtime.settings.async_plan_min_files
    return RestScan(table, request, files, access, ranges, stats_ids, submit)


def plan_scan(runtime: Runtime, scan: RestScan, cancel: Cancellation, background: bool = False) -> TaskPages:
    """Plan when admitted (the native API's admission: slots, memory budget, bounded queue); a plan made in
    the background (submitted, already accepted) waits for its turn without a deadline."""
    with runtime.plans.admission.admitted(
        scan.estimated_files, cancel, patient=background, extra_ranges=scan.extra_ranges
    ):
        plan = runtime.planner.plan(scan.table, scan.request, cancel)
    runtime.record_plan(plan)
    snapshot = plan.snapshot.snapshot_id if plan.snapshot is not None else None
    scan.access.audit_plan(scan.table.name, snapshot, plan.metrics.scanned_data_files)
    meta = scan.table.metadata
    files = plan.files
    tasks: Sequence[FileScanTask] | FileTaskColumns = files if files is not None else []
    if scan.stats_ids is not None and files is not None:  # stats-fields: the files' stats, from objects
        tasks = files.to_objects(with_stats=True)
    return TaskPages(
        tasks=tasks,
        specs=meta.specs,
        schema=meta.schema,
        page_size=runtime.settings.plan_task_page_size,
        stats_ids=scan.stats_ids,
        storage_credentials=runtime.storage_credentials(scan.table, scan.access),
        cut_short=plan.metrics.cut_short,
        fanout=runtime.settings.plan_task_fanout,
    )


class BackgroundPlans:
    """Plans submitted scans in worker threads, `limit` at a time, and records the outcome in the store.
    A plan cancelled stops at its next step, its result dropped."""

    def __init__(self, store: PlanStore, limit: int) -> None:
        self._store = store
        self._slots = asyncio.Semaphore(limit)
        self._tasks: set[asyncio.Task[None]] = set()
        self._cancels: dict[str, Cancellation] = {}

    def start(self, plan_id: str, work: Callable[[Cancellation], TaskPages]) -> None:
        self._cancels[plan_id] = Cancellation()
        task = asyncio.get_running_loop().create_task(self._run(plan_id, work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def cancel(self, plan_id: str) -> None:
        cancel = self._cancels.get(plan_id)
        if cancel is not None:
            cancel.cancel()

    async def _run(self, plan_id: str, work: Callable[[Cancellation], TaskPages]) -> None:
        cancel = self._cancels[plan_id]
        try:
            await self._plan(plan_id, work, cancel)
        finally:
            self._cancels.pop(plan_id, None)

    async def _plan(self, plan_id: str, work: Callable[[Cancellation], TaskPages], cancel: Cancellation) -> None:
        async with self._slots:
            if not self._store.is_submitted(plan_id):  # cancelled or dropped while it waited
                return
            await self._record(plan_id, anyio.to_thread.run_sync(work, cancel))

    def adopt(self, plan_id: str, planning: asyncio.Future[TaskPages], cancel: Cancellation) -> None:
        """Record the outcome of a plan already being made (one that outgrew its request's wait)."""
        self._cancels[plan_id] = cancel

        async def run() -> None:
            try:
                await self._record(plan_id, planning)
            finally:
                self._cancels.pop(plan_id, None)

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _record(self, plan_id: str, planning: Awaitable[TaskPages]) -> None:
        try:
            result = await planning
        except PlannerError as exc:
            self._store.fail(plan_id, exc)
        except Exception as exc:
            log.exception("background planning failed", extra={"plan-id": plan_id})
            message = f"Internal error ({type(exc).__name__}); the service log has the details"
            self._store.fail(plan_id, PlannerError(message))
        else:
            self._store.complete(plan_id, result)

    async def close(self) -> None:
        for cancel in self._cancels.values():  # the threads stop at their plans' next step
            cancel.cancel()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@dataclass(frozen=True)
class RestPlans:
    """The REST plans of a running service: the store of their outcomes, and the planner of submitted ones."""

    store: PlanStore
    background: BackgroundPlans

    async def plan_within(
        self, runtime: Runtime, identifier: TableIdentifier, scan: RestScan, owner: str, cancel: Cancellation
    ) -> RestPlanState:
        """Plan in a worker thread while the request waits, up to `rest_plan_wait_seconds`: a completed plan
        (a failure is raised, for the request's error answer), or, past the wait, a submitted one whose
        planning goes on in the background (`cancel` then stops it on DELETE)."""
        planning = asyncio.ensure_future(anyio.to_thread.run_sync(plan_scan, runtime, scan, cancel))
        try:
            pages = await asyncio.wait_for(asyncio.shield(planning), runtime.settings.rest_plan_wait_seconds)
        except TimeoutError:
            record = self.store.submit(identifier, owner)
            self.background.adopt(record.plan_id, planning, cancel)
            return record
        return self.store.add_completed(identifier, pages, owner)

    def submit(self, runtime: Runtime, identifier: TableIdentifier, scan: RestScan, owner: str) -> RestPlanState:
        """A submitted plan, planned in the background (on the event loop's thread)."""
        record = self.store.submit(identifier, owner)
        self.background.start(record.plan_id, partial(plan_scan, runtime, scan, background=True))
        return record

    def cancel(self, plan_id: str, identifier: TableIdentifier, owner: str) -> None:
        """Cancel a plan and drop its tasks; one still being planned stops at its next step."""
        self.store.cancel(plan_id, identifier, owner)
        self.background.cancel(plan_id)


@asynccontextmanager
async def rest_plans(runtime: Runtime) -> AsyncIterator[RestPlans]:
    """The REST plans of a service's lifetime: at its end, plans still being made are stopped."""
    store = PlanStore(runtime.settings.plan_ttl_seconds)
    plans = RestPlans(store, BackgroundPlans(store, BACKGROUND_PLANS))
    store.on_drop = plans.background.cancel  # a plan dropped by the client's bounds stops planning
    try:
        yield plans
    finally:
        await plans.background.close()

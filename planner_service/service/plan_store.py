"""The state of REST scan plans between requests: their status, and a completed plan's file scan tasks
in pages that clients fetch with plan-task tokens.

A plan lives `ttl_seconds` after it was submitted or last changed state; a plan still being planned does
not expire. Plans belong to the client that made them (its token's owner; without authentication, its
address): only it sees them. The store is bounded per client: past `max_plans` plans or `max_tasks`
retained file scan tasks, that client's oldest plans are dropped (their ids then answer 404, as expired
ones do); past `max_total_tasks` for all clients, the oldest plans of the client holding the most go. A
client never loses its plans to another's smaller load. Pages are kept as the planner's
FileScanTask objects, not as JSON, and encoded when fetched: a task costs a few hundred bytes held, where
its JSON would cost kilobytes as Python objects.

Every method takes the lock and records are immutable, so worker threads and the event loop can share
one store.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import cached_property
from typing import Any

from planner_service.catalog.base import TableIdentifier
from planner_service.errors import NoSuchPlanIdError, NoSuchPlanTaskError, PlannerError
from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.types import Schema
from planner_service.numerals import ascii_int
from planner_service.planning.planned_files import FileScanTask, FileTaskColumns
from planner_service.wire.json_rows import SnippetTable
from planner_service.wire.rest_scan_tasks_json import residuals_json

MAX_PLANS = 100  # per client
MAX_RETAINED_TASKS = 500_000  # per client
MAX_TOTAL_TASKS = 1_000_000  # all clients: about half a GiB of tasks and their content files at most
_TOKEN_SEPARATOR = ":"
ANONYMOUS = "anonymous"  # the owner when none is given (tests, library use)


class PlanStatus(StrEnum):
    SUBMITTED = "submitted"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True, kw_only=True)
class TaskPages:
    """A completed plan: its file scan tasks in `page_size` pages, and what encoding them needs (made by
    keyword, and checked)."""

    tasks: Sequence[FileScanTask] | FileTaskColumns  # objects only where data files carry stats-fields
    specs: dict[int, PartitionSpec]
    schema: Schema
    page_size: int
    stats_ids: frozenset[int] | None = None  # REST stats-fields: the columns whose stats the tasks carry
    storage_credentials: list[dict[str, Any]] | None = None  # vended: what the tasks' files are read with
    cut_short: bool | None = None  # with min-rows-requested: whether planning stopped at the first files
    fanout: int = 0  # plan-task tokens per page (nested pages); 0: every further page listed on the first

    def __post_init__(self) -> None:
        if self.page_size <= 0:
            raise ValueError(f"Page size must be > 0, got {self.page_size}")
        if self.fanout < 0:
            raise ValueError(f"Fanout must be >= 0, got {self.fanout}")

    @property
    def page_count(self) -> int:
        """At least one page, so that an empty plan still has a (empty) first page."""
        return max(1, -(-len(self.tasks) // self.page_size))

    def bounds(self, number: int) -> tuple[int, int]:
        """The tasks of page `number`: tasks[begin:end]."""
        return number * self.page_size, min((number + 1) * self.page_size, len(self.tasks))

    @cached_property
    def residuals_json(self) -> SnippetTable | None:
        """The residual filters as JSON texts (columnar tasks refer to them by id), rendered once."""
        return residuals_json(self.tasks) if isinstance(self.tasks, FileTaskColumns) else None

    def children(self, number: int) -> range:
        """The pages whose plan-task tokens page `number`'s answer lists. Without a fanout the first lists
        every other page; with one, pages form a tree of that fanout (page n lists n*k+1 .. n*k+k), so a
        client reaches each page exactly once by fetching what each answer lists (the spec's nested plan
        tasks)."""
        if self.fanout == 0:
            return range(1, self.page_count) if number == 0 else range(0)
        first = number * self.fanout + 1
        return range(min(first, self.page_count), min(first + self.fanout, self.page_count))


@dataclass(frozen=True)
class RestPlanState:
    plan_id: str
    table: TableIdentifier
    status: PlanStatus
    expires_at: float  # monotonic seconds; inf while submitted
    result: TaskPages | None = None
    error: PlannerError | None = None
    owner: str = ANONYMOUS

    @property
    def retained(self) -> int:
        return len(self.result.tasks) if self.result is not None else 0

    def task_tokens(self, number: int = 0) -> list[str]:
        """Plan-task tokens of the pages page `number`'s answer lists (the first page is answered inline)."""
        pages = self.result.children(number) if self.result is not None else range(0)
        return [plan_task_token(self.plan_id, page) for page in pages]


def plan_task_token(plan_id: str, page: int) -> str:
    return f"{plan_id}{_TOKEN_SEPARATOR}{page}"


class PlanStore:
    def __init__(
        self,
        ttl_seconds: float,
        max_plans: int = MAX_PLANS,
        max_tasks: int = MAX_RETAINED_TASKS,
        clock: Callable[[], float] = time.monotonic,
        max_total_tasks: int = MAX_TOTAL_TASKS,
    ) -> None:
        if ttl_seconds <= 0 or max_plans <= 0 or max_tasks < 0 or max_total_tasks < 0:
            raise ValueError("PlanStore needs ttl_seconds > 0, max_plans > 0 and max_tasks, max_total_tasks >= 0")
        self.ttl_seconds, self.max_plans, self.max_tasks = ttl_seconds, max_plans, max_tasks
        self.max_total_tasks = max_total_tasks
        self._clock = clock
        self._lock = threading.Lock()
        self._plans: OrderedDict[str, RestPlanState] = OrderedDict()  # oldest first
        self._retained_tasks = 0
        self.on_drop: Callable[[str], None] | None = None  # told of a submitted plan dropped (to stop it)

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._plans)

    # -- lifecycle -------------------------------------------------------------------------------------

    def submit(self, table: TableIdentifier, owner: str = ANONYMOUS) -> RestPlanState:
        """A new plan, being planned."""
        with self._lock:
            return self._submit(table, owner)

    def add_completed(self, table: TableIdentifier, result: TaskPages, owner: str = ANONYMOUS) -> RestPlanState:
        """A plan that was planned at once."""
        with self._lock:
            return self._complete(self._submit(table, owner), result)

    def complete(self, plan_id: str, result: TaskPages) -> RestPlanState | None:
        """Record a submitted plan's tasks; None when it was cancelled or dropped meanwhile."""
        with self._lock:
            record = self._plans.get(plan_id)
            if record is None or record.status is not PlanStatus.SUBMITTED:
                return None
            return self._complete(record, result)

    def fail(self, plan_id: str, error: PlannerError) -> None:
        with self._lock:
            record = self._plans.get(plan_id)
            if record is not None and record.status is PlanStatus.SUBMITTED:
                self._update(record, PlanStatus.FAILED, None, error)

    def cancel(self, plan_id: str, table: TableIdentifier, owner: str = ANONYMOUS) -> None:
        """Cancel a plan and drop its tasks; it answers `cancelled` until it expires."""
        with self._lock:
            record = self._get(plan_id, table, owner)
            self._release(record)
            self._update(record, PlanStatus.CANCELLED, None, None)

    # -- reads -----------------------------------------------------------------------------------------

    def get(self, plan_id: str, table: TableIdentifier, owner: str = ANONYMOUS) -> RestPlanState:
        with self._lock:
            return self._get(plan_id, table, owner)

    def is_submitted(self, plan_id: str) -> bool:
        with self._lock:
            record = self._plans.get(plan_id)
            return record is not None and record.status is PlanStatus.SUBMITTED

    def page(self, token: str, table: TableIdentifier, owner: str = ANONYMOUS) -> tuple[RestPlanState, int]:
        """The completed plan and page number a plan-task token names."""
        plan_id, _, text = token.rpartition(_TOKEN_SEPARATOR)
        number = ascii_int(text)
        with self._lock:
            self._expire()
            record = self._plans.get(plan_id)
            if (
                record is None
                or record.table != table
                or record.owner != owner
                or record.result is None
                or number is None
                or not 0 < number < record.result.page_count
            ):
                raise NoSuchPlanTaskError(f"No such plan task for table {table}: {token}")
            return record, number

    # -- internals (the lock is held) ------------------------------------------------------------------

    def _submit(self, table: TableIdentifier, owner: str) -> RestPlanState:
        self._expire()
        record = RestPlanState(uuid.uuid4().hex, table, PlanStatus.SUBMITTED, float("inf"), owner=owner)
        self._plans[record.plan_id] = record
        self._bound(record)
        return record

    def _complete(self, record: RestPlanState, result: TaskPages) -> RestPlanState:
        done = self._update(record, PlanStatus.COMPLETED, result, None)
        self._retained_tasks += len(result.tasks)
        self._bound(done)
        return done

    def _get(self, plan_id: str, table: TableIdentifier, owner: str) -> RestPlanState:
        self._expire()
        record = self._plans.get(plan_id)
        if record is None or record.table != table or record.owner != owner:
            raise NoSuchPlanIdError(f"No such plan for table {table}: {plan_id}")
        return record

    def _update(
        self, record: RestPlanState, status: PlanStatus, result: TaskPages | None, error: PlannerError | None
    ) -> RestPlanState:
        expires_at = self._clock() + self.ttl_seconds
        updated = replace(record, status=status, expires_at=expires_at, result=result, error=error)
        self._plans[record.plan_id] = updated
        return updated

    def _release(self, record: RestPlanState) -> None:
        if record.result is not None:
            self._retained_tasks -= len(record.result.tasks)

    def _drop(self, plan_id: str) -> None:
        """Forget a plan; one still being planned is stopped too (`on_drop`), or it would plan on for nobody,
        holding its admission slot, with no id left to cancel it by."""
        record = self._plans.pop(plan_id)
        self._release(record)
        if record.status is PlanStatus.SUBMITTED and self.on_drop is not None:
            self.on_drop(plan_id)

    def _expire(self) -> None:
        now = self._clock()
        for plan_id in [p for p, r in self._plans.items() if r.expires_at <= now]:
            self._drop(plan_id)

    def _bound(self, keep: RestPlanState) -> None:
        """Drop the owner's oldest plans (never `keep`) while it is over its bounds; then, while all clients
        are over `max_total_tasks`, the oldest plans of whoever holds the most tasks."""
        mine = [r for r in self._plans.values() if r.owner == keep.owner and r.plan_id != keep.plan_id]
        count, retained = len(mine) + 1, sum(r.retained for r in mine) + keep.retained
        for record in mine:
            if count <= self.max_plans and retained <= self.max_tasks:
                break
            self._drop(record.plan_id)
            count, retained = count - 1, retained - record.retained
        while self._retained_tasks > self.max_total_tasks:
            held: dict[str, int] = {}
            for r in self._plans.values():
                held[r.owner] = held.get(r.owner, 0) + r.retained
            largest = max(held, key=lambda owner: held[owner])
            victim = next((r for r in self._plans.values() if r.owner == largest and r.plan_id != keep.plan_id), None)
            if victim is None:
                return
            self._drop(victim.plan_id)

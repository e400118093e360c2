"""The one planning entrance: every door that plans (POST /plan, a plan by id and its tasks, a REST plan, its
polls and pages, /explore, /aggregate) gets its table and its plan here, so that each is decided, admitted,
planned once, kept, recorded and audited the same way:

- the table, when the caller holds the door's privilege on it (runtime.load_table: by name or by the
  metadata location storage reads, every name the catalogs give it there deciding too);
- the plan, at the plan cache: admitted (slots, the memory budget, the bounded queue), made once for every
  identical request arriving together (single flight), kept in memory or spilled, rebuilt from a plan id's
  canonical request on any replica;
- a plan made now recorded (its metrics, its ScanReport), and each plan answered audited (who, which table
  and snapshot, how many files).

The API modules parse requests, negotiate encodings and stream answers; they decide nothing of this."""

from __future__ import annotations

from planner_service.access.policy import Privilege
from planner_service.access.table_access import TableAccess
from planner_service.catalog.base import LoadedTable
from planner_service.errors import NoSuchPlanIdError, NoSuchTableError, StorageError
from planner_service.planning.admission import Cancellation
from planner_service.service.cached_plan import CachedPlan
from planner_service.service.plan_ids import CanonicalRequest
from planner_service.service.runtime import Runtime

__all__ = ["audit_answer", "open_table", "plan", "plan_by_id"]


def open_table(
    runtime: Runtime, access: TableAccess, name: str | None, metadata_location: str | None, privilege: Privilege
) -> LoadedTable:
    """The table a request names (exactly one of a catalog name and a metadata location), when `access` holds
    `privilege` on it: decided before anything of it is read."""
    return runtime.load_table(name, metadata_location, access, privilege)


def plan(
    runtime: Runtime,
    access: TableAccess,
    table: LoadedTable,
    request: CanonicalRequest,
    *,
    explain: bool = False,
    cancel: Cancellation | None = None,
    inline_limit: int | None = None,
    patient: bool = False,
    audited: bool = True,
) -> tuple[CachedPlan, bool]:
    """(the plan of `request` on `table`, whether it was made now): kept or made at the plan cache, a plan
    made now recorded; audited as answered unless the door audits its answer itself (`audited` False: a
    REST plan made in the background, answered when polled)."""
    result, fresh = runtime.plans.plan(
        request, table, explain=explain, cancel=cancel, inline_limit=inline_limit, patient=patient
    )
    if fresh:
        runtime.record_plan(result.plan)
    if audited:
        audit_answer(access, table.name, result)
    return result, fresh


def plan_by_id(
    runtime: Runtime, access: TableAccess, request: CanonicalRequest, cancel: Cancellation | None = None
) -> CachedPlan:
    """The plan of an opened plan id (runtime.open_plan_id): kept, or rebuilt from its canonical request with
    the table loaded as planned (a replica that never saw the id; this service after a restart). Not audited:
    a plan's tasks are fetched by the thousand; the answer that issued the id was."""
    held = runtime.plans.held(request.cache_id)
    if held is not None:
        return held
    try:
        table = runtime.load_planned(access.principal, request.table, request.metadata_location)
    except (StorageError, NoSuchTableError):
        raise NoSuchPlanIdError(
            f"Plan of {request.table} cannot be rebuilt: its metadata file {request.metadata_location} is gone "
            "(the table was rewritten since); plan the scan again"
        ) from None
    return plan(runtime, access, table, request, cancel=cancel, audited=False)[0]


def audit_answer(access: TableAccess, table: str, result: CachedPlan) -> None:
    """The audit line of a plan answered: who, which table and snapshot, how many files."""
    snapshot = result.plan.snapshot
    access.audit_plan(table, snapshot.snapshot_id if snapshot else None, result.plan.metrics.scanned_data_files)

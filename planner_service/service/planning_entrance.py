"""The one planning entrance: every door that plans (POST /plan, a plan by id and its tasks, a REST plan, its
polls and pages, /explore, /aggregate) gets its table and its plan here, so that each is decided, admitted,
planned once, kept, recorded and audited the same way:

- the table, when the caller holds the door's privilege on it (runtime.load_table: by name or by the
  metadata location storage reads, every name the catalogs give it there deciding too);
- the plan, at the plan cache: admitted (slots, the memory budget, the bounded queue), made once for every
  identical request arriving together (single flight), kept in memory or spilled, rebuilt from a plan id's
  canonical request on any replica;
- a plan made now recorded (its metrics, its ScanReport), and each plan answered audited (who, which table
  and snapshot, how many files);
- the presigned URLs an answer of a plan made under read restrictions carries for its files (file_urls),
  made for that answer and audited.

The API modules parse requests, negotiate encodings and stream answers; they decide nothing of this."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from planner_service.access.policy import Privilege
from planner_service.access.table_access import TableAccess
from planner_service.catalog.base import LoadedTable
from planner_service.errors import ForbiddenError, NoSuchPlanIdError, NoSuchTableError, StorageError
from planner_service.io.vending import StorageCredentials
from planner_service.planning.admission import Cancellation
from planner_service.planning.read_restriction import ScanRestriction
from planner_service.planning.scan_plan import ScanPlan
from planner_service.planning.scan_request import ScanRequest
from planner_service.service.cached_plan import CachedPlan
from planner_service.service.plan_ids import CanonicalRequest
from planner_service.service.runtime import Runtime

__all__ = [
    "Decided",
    "audit_answer",
    "decide",
    "file_urls",
    "not_modified",
    "open_table",
    "plan",
    "plan_by_id",
    "restricted",
]


@dataclass(frozen=True)
class Decided:
    """A scan request decided at the entrance: its table (the caller holds the door's privilege on it), its
    canonical request, the caller's own id of the plan, and the storage credentials vended for this answer
    (vended anew for each: never those of another answer)."""

    table: LoadedTable
    request: CanonicalRequest
    plan_id: str
    credentials: StorageCredentials | None


def decide(
    runtime: Runtime,
    access: TableAccess,
    name: str | None,
    metadata_location: str | None,
    scan: ScanRequest,
    privilege: Privilege = Privilege.PLAN,
    *,
    rest: bool = False,
    stats_fields: Sequence[str] | None = None,
    vend: bool = True,
) -> Decided:
    """The table a request names, when the caller holds `privilege` on it, the request as the plan cache
    keys it, the caller's id of its plan (a REST plan's with `rest`: a 400 when the request cannot be carried
    in an id), and the credentials this answer carries (none without `vend`: an answer that carries none)."""
    table = open_table(runtime, access, name, metadata_location, privilege)
    scan = restricted(access, table, scan)
    fields = None if stats_fields is None else tuple(stats_fields)
    request = CanonicalRequest(table.name, table.metadata_location, scan, fields)
    plan_id = runtime.issue_plan_id(request, access, rest)
    return Decided(table, request, plan_id, runtime.storage_credentials(table, access) if vend else None)


def not_modified(access: TableAccess, decided: Decided) -> None:
    """A plan the caller holds already (its ETag matched): audited as such, not planned."""
    access.audit_not_modified(decided.table.name)


def open_table(
    runtime: Runtime, access: TableAccess, name: str | None, metadata_location: str | None, privilege: Privilege
) -> LoadedTable:
    """The table a request names (exactly one of a catalog name and a metadata location), when `access` holds
    `privilege` on it: decided before anything of it is read; a table whose reads the policy restricts for
    the caller only when its client enforces restrictions (else a 403 saying so)."""
    table = runtime.load_table(name, metadata_location, access, privilege)
    if table.identifier is not None:
        access.refuse_restricted(table.identifier, privilege)
    return table


def restricted(access: TableAccess, table: LoadedTable, scan: ScanRequest) -> ScanRequest:
    """`scan` under the caller's read restrictions on `table` (as they bind to its current schema: a 403
    naming the rule when they do not), planned and keyed with them; as it is for an unrestricted caller. An
    explained plan is not made under restrictions: it tells of every file the scan skips (a 403)."""
    restriction = access.restriction(table.identifier) if table.identifier is not None else None
    if restriction is None:
        return scan
    bound = ScanRestriction.of_rule(restriction, table.metadata.schema, table.name)
    if scan.explain:
        raise _unexplained(access, table)
    return replace(scan, restriction=bound)


def _unexplained(access: TableAccess, table: LoadedTable) -> ForbiddenError:
    return ForbiddenError(
        f"Reads of {table.name} are restricted for principal '{access.principal.name}': an explained plan "
        "(explain, /explore) tells of the files and statistics the restrictions hide, so none is made under them; "
        "plan without explain"
    )


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
    if explain and request.scan.restriction is not None:
        raise _unexplained(access, table)
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


def file_urls(
    runtime: Runtime, access: TableAccess, plan: ScanPlan, files: np.ndarray[Any, Any] | None = None
) -> dict[str, str] | None:
    """The presigned GET URLs an answer of `plan` carries, by file path: for a plan made under the caller's
    read restrictions (which never get storage credentials), one for each file of the answer (`files`,
    indexes into plan.files; all by default) and each delete file they use, where the service signs for its
    store (io/presigning.py); None for any other plan. Made now, for this answer alone (they expire: no
    answer that carries them is kept), and audited."""
    if plan.restriction is None or runtime.presigner is None or plan.files is None or not len(plan.files):
        return None
    if not runtime.presigner.signs_any([*plan.files.index.directories, *(f.path for f in plan.files.delete_files)]):
        return None  # (local files, say: each file's location is not even made)
    urls = runtime.presigner.urls(plan.files.locations(files))
    if not urls:
        return None
    access.audit_presigned(plan.table.name, len(urls))
    return urls


def audit_answer(access: TableAccess, table: str, result: CachedPlan) -> None:
    """The audit line of a plan answered: who, which table and snapshot, how many files."""
    snapshot = result.plan.snapshot
    access.audit_plan(table, snapshot.snapshot_id if snapshot else None, result.plan.metrics.scanned_data_files)

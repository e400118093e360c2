"""A finished plan as the service keeps it: its canonical request and the plan, with what reading any of its
tasks needs (made once) and its weight in the plan-result cache. Held by the cache (plan_cache.py) and
written to disk by the spill (plan_spill.py), neither of which the other needs for it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from planner_service.planning.scan_plan import ScanPlan
from planner_service.service.plan_ids import CanonicalRequest
from planner_service.wire.json_rows import SnippetTable
from planner_service.wire.plan_json import plan_head
from planner_service.wire.rest_scan_tasks_json import residuals_json

__all__ = ["CachedPlan"]


@dataclass(frozen=True)
class CachedPlan:
    request: CanonicalRequest
    plan: ScanPlan

    @cached_property
    def reader_context(self) -> dict[str, Any]:
        """What reading any of its tasks needs besides the task (made once; each task fetch sends it)."""
        return {key: value for key, value in plan_head(self.plan).items() if key != "metrics"}

    @cached_property
    def rest_residuals(self) -> SnippetTable | None:
        """The files' residual filters as JSON texts, by residual id (REST pages refer to them), made once."""
        return residuals_json(self.plan.files) if self.plan.files is not None else None

    @property
    def weight(self) -> int:
        """Bytes held: the files' index (a full plan shares the snapshot's with the planner's caches, and keeps
        it alive once they let it go), the files' rows and residual ids, the tasks' columns, their grouping."""
        files, tasks, grouping = self.plan.files, self.plan.combined, self.plan.grouping
        per_file = files.index.nbytes + 12 * len(files) if files is not None else 0
        per_piece = 25 * len(tasks.file) + 24 * len(tasks) if tasks is not None else 0
        return 4096 + per_file + per_piece + (grouping.nbytes if grouping is not None else 0)

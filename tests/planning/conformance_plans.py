"""Plans of the conformance tables made in process, and their tasks as plain values, for the grouping tests."""

from __future__ import annotations

from planner_service.catalog.base import LoadedTable, load_by_metadata_location
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_plan import ScanPlan
from tests.conformance.reference import Conformance


def conformance_table(conformance: Conformance, planner: ScanPlanner, name: str) -> LoadedTable:
    return load_by_metadata_location(planner.io, conformance.tables[name]["metadata_location"])


def task_pieces(plan: ScanPlan) -> list[list[tuple[str, int, int]]]:
    """Each task's pieces as (file path, start, length)."""
    tasks, files = plan.combined, plan.files
    assert tasks is not None and files is not None
    paths = files.index.paths(files.rows)
    return [
        [(paths[int(tasks.file[p])], int(tasks.start[p]), int(tasks.length[p])) for p in tasks.pieces(t)]
        for t in range(len(tasks))
    ]

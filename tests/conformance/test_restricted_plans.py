"""Plans under read restrictions, held to Iceberg Java 1.10.2's recorded plans of the same tables.

A principal's row filter prunes as a scan's filter does: restricted by a case's filter and scanning without
one, the plan is Java's planFiles() and planTasks() of that filter, file for file, residual for residual. A
caller's filter only narrows it: on masked columns it decides nothing (their statistics are of raw values),
elsewhere it prunes only files the row filter keeps whole; so a restricted plan never holds a file Java
skips for the row filter, and holds every file Java keeps for both filters together. A file whose path names a masked
column's partition value is never planned (tests/access/test_restriction_attacks.py: masked values where
paths do not name them)."""

from __future__ import annotations

from typing import Any

import pytest

from planner_service.catalog.base import load_by_metadata_location
from planner_service.errors import ForbiddenError
from planner_service.expressions.expression import TRUE
from planner_service.expressions.expression_json import expression_from_json
from planner_service.io.fileio import FileIO
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.read_restriction import ScanRestriction
from planner_service.planning.scan_request import ScanRequest
from tests.conformance.cases import CASES
from tests.conformance.reference import Conformance
from tests.conformance.test_java_parity import _expected_task, _task

# every filter case Java planned without error on a table's current snapshot, at its default options
ROW_FILTER_CASES = [
    c["id"]
    for c in CASES
    if c["filter"] not in (None, True)
    and c["snapshot"] == {"kind": "current"}
    and not c["options"]
    and c["case_sensitive"]  # (a rule's filter names the columns exactly)
]


@pytest.fixture(scope="module")
def planner() -> ScanPlanner:
    return ScanPlanner(FileIO())


def _plan(conformance: Conformance, planner: ScanPlanner, table: str, request: ScanRequest) -> Any:
    loaded = load_by_metadata_location(planner.io, conformance.tables[table]["metadata_location"])
    return planner.plan(loaded, request)


@pytest.mark.parametrize("case_id", ROW_FILTER_CASES)
def test_a_row_filter_plans_as_javas_filter(conformance: Conformance, planner: ScanPlanner, case_id: str) -> None:
    case = conformance.case(case_id)
    if case["error"] is not None:
        pytest.skip("Java refuses the filter: a rule with it does not bind (tests/access)")
    restriction = ScanRestriction(expression_from_json(case["filter"]), ())
    plan = _plan(conformance, planner, case["table"], ScanRequest(restriction=restriction))
    assert [_task(t) for t in plan.file_tasks] == [_expected_task(t) for t in case["files"]]
    assert [[_task(t) for t in c.tasks] for c in plan.tasks] == [
        [_expected_task(t) for t in combined] for combined in case["tasks"]
    ]


PAIRS = [  # (row filter's case, the caller's filter's case), on one table
    ("identity_part/category-eq", "identity_part/id-lt"),
    ("identity_part/category-not-eq", "identity_part/id-gt-eq"),
    ("unpartitioned/id-lt", "unpartitioned/amount-gt"),
    ("unpartitioned/id-gt-eq", "unpartitioned/name-lt"),
    ("day_part/ts-lt", "day_part/ts-gt"),
    ("bucket_part/id-eq", "bucket_part/id-not-eq"),
    ("truncate_part/name-gt-eq", "truncate_part/name-lt"),
]


def _paths(files: list[dict[str, Any]]) -> set[str]:
    return {f["path"] for f in files}


@pytest.mark.parametrize(("restricting", "asked"), PAIRS)
def test_a_callers_filter_only_narrows_the_row_filters_files(
    conformance: Conformance, planner: ScanPlanner, restricting: str, asked: str
) -> None:
    rf_case, user_case = conformance.case(restricting), conformance.case(asked)
    rf, user = expression_from_json(rf_case["filter"]), expression_from_json(user_case["filter"])
    restriction = ScanRestriction(rf, ())
    plan = _plan(conformance, planner, rf_case["table"], ScanRequest(row_filter=user, restriction=restriction))
    planned = {t.file.path for t in plan.file_tasks}
    assert planned <= _paths(rf_case["files"])  # never a file Java skips for the row filter
    assert planned >= _paths(rf_case["files"]) & _paths(user_case["files"])  # every one both may match
    # a filter on a masked column decides nothing: the row filter's files, exactly
    masked_id = plan.table.metadata.schema.find_field_by_name(user_case["filter"]["term"]).field_id
    masked = ScanRestriction(rf, ((masked_id, "replace-with-null"),))
    request = ScanRequest(row_filter=user, restriction=masked)
    if any(f.source_id == masked_id for spec in plan.table.metadata.specs.values() for f in spec.fields):
        with pytest.raises(ForbiddenError):  # a partition source: its values name the files' directories
            _plan(conformance, planner, rf_case["table"], request)
        return
    plan = _plan(conformance, planner, rf_case["table"], request)
    assert [t.file.path for t in plan.file_tasks] == [f["path"] for f in rf_case["files"]]


def test_files_named_by_a_masked_partition_value_are_not_planned(
    conformance: Conformance, planner: ScanPlanner
) -> None:
    """Java writes identity_part's files under category=<value>/ directories: a plan under a mask of
    category would tell the values in its paths, so none is made (403 naming the column, not a value)."""
    table = load_by_metadata_location(planner.io, conformance.tables["identity_part"]["metadata_location"])
    found = table.metadata.schema.find_field_by_name("category")
    assert found is not None
    category = found.field_id
    paths = [f["path"] for f in conformance.case("identity_part/category-not-eq")["files"]]
    assert paths and all("/category=" in p for p in paths)
    restriction = ScanRestriction(TRUE, ((category, "mask-alphanum"),))
    with pytest.raises(ForbiddenError) as refused:
        planner.plan(table, ScanRequest(restriction=restriction))
    assert "masked column(s) category" in refused.value.message
    assert "category=" not in refused.value.message.replace("name=value", "")
    assert planner.plan(table, ScanRequest(restriction=ScanRestriction(TRUE, ()))).file_tasks  # (unmasked: planned)

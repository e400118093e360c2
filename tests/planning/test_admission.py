"""A plan's time limit (plan_timeout_seconds): a Cancellation with a limit stops the plan with its own error,
PlanTimeoutError (a 503 worth retrying), not the PlanCancelledError of a client that went away."""

from __future__ import annotations

import time

import pytest

from planner_service.catalog.base import load_by_metadata_location
from planner_service.errors import PlanCancelledError, PlanTimeoutError
from planner_service.io.fileio import FileIO
from planner_service.planning.admission import Cancellation
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import ScanRequest
from tests.conformance.reference import Conformance


def test_a_limit_stops_the_plan_once_passed() -> None:
    cancel = Cancellation()
    cancel.limit(0.05)
    assert not cancel.cancelled
    cancel.check()
    time.sleep(0.06)
    assert cancel.cancelled and cancel.expired
    with pytest.raises(PlanTimeoutError, match=r"within 0\.05 s \(plan_timeout_seconds\)"):
        cancel.check()


def test_the_earliest_limit_holds_and_a_cancel_is_still_a_cancel() -> None:
    cancel = Cancellation()
    cancel.limit(None)
    cancel.limit(60)
    cancel.limit(0.01)
    cancel.limit(60)  # (a later, longer limit does not lift the earlier one)
    time.sleep(0.02)
    assert cancel.expired
    other = Cancellation()
    other.limit(60)
    other.cancel()
    with pytest.raises(PlanCancelledError):
        other.check()


def test_a_planner_with_a_timeout_stops_its_plans(conformance: Conformance) -> None:
    table_name = next(iter(conformance.tables))
    location = conformance.tables[table_name]["metadata_location"]
    slow = ScanPlanner(FileIO(), timeout_seconds=1e-9)
    with pytest.raises(PlanTimeoutError):
        slow.plan(load_by_metadata_location(slow.io, location), ScanRequest())
    patient = ScanPlanner(FileIO(), timeout_seconds=60)
    assert patient.plan(load_by_metadata_location(patient.io, location), ScanRequest()) is not None

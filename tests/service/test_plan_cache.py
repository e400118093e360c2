"""The plan-result cache's admission control and single flight, with a real planner over a conformance table;
the plan's own work is held up where a test needs two plans to overlap."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from planner_service.api.error_kinds import error_kind
from planner_service.api.request_models import PlanRequest
from planner_service.catalog.base import LoadedTable, load_by_metadata_location
from planner_service.errors import BadRequestError, NoSuchPlanIdError, OverloadedError
from planner_service.io.fileio import FileIO
from planner_service.planning.admission import Admission
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import scan_request
from planner_service.service.plan_cache import PlanCache
from planner_service.service.plan_ids import MAX_ID_CHARS, CanonicalRequest, PlanIds
from tests.conformance.reference import Conformance


@pytest.fixture
def planner() -> Iterator[ScanPlanner]:
    planner = ScanPlanner(FileIO())
    yield planner
    planner.close()


@pytest.fixture
def table(conformance: Conformance, planner: ScanPlanner) -> LoadedTable:
    return load_by_metadata_location(planner.io, conformance.tables["identity_part"]["metadata_location"])


def _held(results: PlanCache, release: threading.Event, started: threading.Event) -> list[int]:
    """Make results' plans wait for `release` (after setting `started`); returns the count of plans made."""
    made = [0]
    plan = results._plan

    def held(*args: Any, **kwargs: Any) -> Any:
        made[0] += 1
        started.set()
        release.wait(10)
        return plan(*args, **kwargs)

    results._plan = held  # type: ignore[method-assign]
    return made


def test_identical_requests_plan_once(planner: ScanPlanner, table: LoadedTable) -> None:
    results = PlanCache(planner, 64 * 1024 * 1024, Admission(2, 1 << 30, 30, 16))
    release, started = threading.Event(), threading.Event()
    made = _held(results, release, started)
    request = _canonical(table, filter="id > 3")
    answers: list[Any] = []
    threads = [threading.Thread(target=lambda: answers.append(results.plan(request, table))) for _ in range(4)]
    for t in threads:
        t.start()
    started.wait(10)
    release.set()
    for t in threads:
        t.join(10)
    assert made[0] == 1 and len(answers) == 4
    assert len({id(result) for result, _ in answers}) == 1 and sum(fresh for _, fresh in answers) == 1
    assert results.plan(request, table) == (answers[0][0], False)  # then from the cache


def test_a_full_house_answers_503_with_retry_after(planner: ScanPlanner, table: LoadedTable) -> None:
    results = PlanCache(planner, 64 * 1024 * 1024, Admission(1, 1 << 30, 0.05, 16))
    release, started = threading.Event(), threading.Event()
    _held(results, release, started)
    first = threading.Thread(
        target=results.plan,
        args=(
            _canonical(
                table,
            ),
            table,
        ),
    )
    first.start()
    started.wait(10)
    with pytest.raises(OverloadedError, match="Too many plans in progress") as err:
        results.plan(_canonical(table, filter="id > 3"), table)
    assert error_kind(err.value).status == 503
    assert err.value.retry_in_seconds is not None and err.value.retry_in_seconds >= 1
    release.set()
    first.join(10)


def test_a_plan_id_carries_the_canonical_request(table: LoadedTable) -> None:
    request = CanonicalRequest(
        table.name,
        table.metadata_location,
        # validated as a /plan body is (mypy, without pydantic's plugin, takes Field(None, ...) for no default)
        PlanRequest.model_validate({"filter": "id > 3", "select": ["id"], "options": {"split-size": 1024}}).to_scan(),
    )
    ids = PlanIds(b"k" * 32)
    plan_id = ids.issue(request, "static:alice", 600)
    assert ids.open(plan_id, "static:alice") == request
    assert request.to_json()["filter"] == {"type": "gt", "term": "id", "value": 3}


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_plan_id_opens_only_for_its_principal_door_and_key_until_it_expires(table: LoadedTable) -> None:
    request = CanonicalRequest(table.name, table.metadata_location, scan_request(filter="id > 3"))
    clock = _Clock(1_000_000.0)
    ids = PlanIds(b"k" * 32, clock)
    plan_id = ids.issue(request, "static:alice", 240)
    packed, expires, mac = plan_id.removeprefix("p3.").split(".")
    assert int(expires) >= clock.now + 240 and int(expires) % 10 == 0  # (rounded up to a 24th of the life)
    edited = CanonicalRequest(table.name, table.metadata_location, scan_request(filter="id > 3", parallelism=10**6))
    refused = [
        (plan_id, "static:bob"),  # another principal
        (plan_id, "oidc:alice"),  # of another kind, named alike
        (plan_id, "static:alice\0"),
        (f"p3.{edited.packed}.{expires}.{mac}", "static:alice"),  # the request changed under the MAC
        (f"p3.{packed}.{int(expires) + 3600}.{mac}", "static:alice"),  # a later expiry
        (f"p3.{packed}.{expires}.{mac[:-1]}A", "static:alice"),
        (f"p3.{packed}.{expires}", "static:alice"),
        (f"p2.{packed}.{mac}", "static:alice"),  # an id of the earlier forms
        (f"p1.{packed}", "static:alice"),
        (f"r3.{packed}.{expires}.{mac}", "static:alice"),  # a REST plan id made of it
        (PlanIds(b"j" * 32, clock).issue(request, "static:alice", 240), "static:alice"),  # another service's key
    ]
    for candidate, principal in refused:
        with pytest.raises(NoSuchPlanIdError) as err:
            ids.open(candidate, principal)
        assert "plan the scan again" in err.value.message  # the same words whichever it was
    with pytest.raises(NoSuchPlanIdError):
        ids.open(plan_id, "static:alice", rest=True)  # a native id at the REST door
    rest_id = ids.issue(request, "static:alice", 240, rest=True)
    assert rest_id.startswith("r3.") and ids.open(rest_id, "static:alice", rest=True) == request
    clock.now = int(expires) - 1
    assert ids.open(plan_id, "static:alice") == request
    clock.now = int(expires)
    with pytest.raises(NoSuchPlanIdError, match="expired"):
        ids.open(plan_id, "static:alice")


def test_no_plan_id_is_issued_that_a_request_line_cannot_carry(table: LoadedTable) -> None:
    """A request too large for an id is refused when the id would be made (a 400 naming the limit), never
    issued to fail when opened."""
    import random

    values = ", ".join(str(random.Random(7).getrandbits(62) + i * 7919) for i in range(4000))
    request = CanonicalRequest(table.name, table.metadata_location, scan_request(filter=f"id IN ({values})"))
    with pytest.raises(BadRequestError, match="too large for a plan id") as err:
        PlanIds(b"k" * 32).issue(request, "static:alice", 600)
    assert f"{MAX_ID_CHARS:,}" in err.value.message
    small = CanonicalRequest(table.name, table.metadata_location, scan_request(filter="id IN (1, 2, 3)"))
    assert len(PlanIds(b"k" * 32).issue(small, "static:alice", 600)) <= MAX_ID_CHARS


def _canonical(table: LoadedTable, **fields: Any) -> CanonicalRequest:
    """The canonical request of a /plan body's scan fields (scan_request()'s keyword arguments)."""
    return CanonicalRequest(table.name, table.metadata_location, scan_request(**fields))

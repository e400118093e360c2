"""Bounded work: admission by slots and memory budget with a bounded queue (503 + Retry-After beyond it),
plans that stop when nobody wants them any more, and REST async plans kept per client. The route-level
cases run on a real service whose S3 store (moto) answers through a proxy that delays every exchange, so
that a plan holds its turn for seconds."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from planner_service.catalog.base import LoadedTable, load_by_metadata_location
from planner_service.demo import DEMO_TABLE, write_demo_table
from planner_service.errors import OverloadedError, PlanCancelledError
from planner_service.io.fileio import FileIO
from planner_service.planning.admission import (
    BYTES_PER_FILE,
    Admission,
    Cancellation,
    SharedCancellation,
)
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import ScanRequest, scan_request
from planner_service.service.cached_plan import CachedPlan
from planner_service.service.plan_cache import PlanCache
from planner_service.service.plan_ids import CanonicalRequest
from planner_service.splitting.combine import BYTES_PER_RANGE
from tests.conformance.reference import Conformance
from tests.conftest import running_service

KEY, SECRET, REGION = "testing", "testing", "us-east-1"


# --- admission -------------------------------------------------------------------------------------------


def _hold(admission: Admission, files: int, release: threading.Event) -> threading.Thread:
    entered = threading.Event()

    def run() -> None:
        with admission.admitted(files, Cancellation()):
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=run)
    thread.start()
    assert entered.wait(10)
    return thread


def test_the_memory_budget_admits_what_fits_and_a_big_plan_alone() -> None:
    admission = Admission(slots=4, budget_bytes=100 * BYTES_PER_FILE, queue_seconds=0.3, max_waiting=4)
    release = threading.Event()
    first = _hold(admission, 60, release)
    with pytest.raises(OverloadedError, match="waited") as refused, admission.admitted(60, Cancellation()):
        pass  # a free slot, but not the memory
    assert refused.value.retry_in_seconds is not None
    assert refused.value.retry_in_seconds >= 1
    with admission.admitted(40, Cancellation()):  # this one fits beside it
        assert admission.state()["running"] == 2
    release.set()
    first.join(10)
    with admission.admitted(10_000, Cancellation()):  # bigger than the whole budget: runs when alone
        assert admission.state() == {"running": 1, "waiting": 0, "bytes": 10_000 * BYTES_PER_FILE, "held-bytes": 0}


def test_answers_being_sent_hold_their_memory_until_released() -> None:
    """What an answer holds while a slow client reads it counts against the budget: a plan that fits beside
    it runs, one that does not waits (and here times out), and one bigger than the whole budget no longer
    runs alone while any answer is held; released (once, however often called), the memory is free again."""
    admission = Admission(slots=4, budget_bytes=100 * BYTES_PER_FILE, queue_seconds=0.3, max_waiting=4)
    release = admission.hold(60 * BYTES_PER_FILE)
    assert admission.state() == {"running": 0, "waiting": 0, "bytes": 60 * BYTES_PER_FILE, "held-bytes": 60 * 1024}
    with admission.admitted(40, Cancellation()):
        pass
    for files in (41, 10_000):
        with pytest.raises(OverloadedError, match="waited"), admission.admitted(files, Cancellation()):
            pass
    other = admission.hold(5 * BYTES_PER_FILE)
    release()
    release()
    assert admission.state()["held-bytes"] == 5 * BYTES_PER_FILE
    with admission.admitted(95, Cancellation()):
        pass
    other()
    with admission.admitted(10_000, Cancellation()):  # nothing held, nothing running: alone
        assert admission.state()["held-bytes"] == 0


def test_the_ranges_a_split_size_makes_are_weighed_with_the_files() -> None:
    """Ten files cut into thousands of ranges weigh what the ranges take: beside a plan holding most of the
    budget, the same ten files at the default split size fit, finely cut they wait (and here time out)."""
    budget = 100 * BYTES_PER_FILE
    admission = Admission(slots=4, budget_bytes=budget, queue_seconds=0.3, max_waiting=4)
    release = threading.Event()
    first = _hold(admission, 60, release)
    with admission.admitted(10, Cancellation(), extra_ranges=0):
        assert admission.state()["bytes"] == 70 * BYTES_PER_FILE
    fine = (budget // BYTES_PER_RANGE) // 2  # half the budget in ranges
    with pytest.raises(OverloadedError, match="waited"), admission.admitted(10, Cancellation(), extra_ranges=fine):
        pass
    release.set()
    first.join(10)
    with admission.admitted(10, Cancellation(), extra_ranges=fine):
        assert admission.state()["bytes"] == 10 * BYTES_PER_FILE + fine * BYTES_PER_RANGE


def test_the_queue_is_bounded_and_a_waiter_whose_client_left_leaves_it() -> None:
    admission = Admission(slots=1, budget_bytes=1 << 30, queue_seconds=30, max_waiting=1)
    release = threading.Event()
    first = _hold(admission, 1, release)
    cancel = Cancellation()
    outcome: list[BaseException] = []

    def wait() -> None:
        try:
            with admission.admitted(1, cancel):
                pass
        except BaseException as exc:
            outcome.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    while admission.state()["waiting"] == 0:
        time.sleep(0.01)
    started = time.monotonic()
    with pytest.raises(OverloadedError, match="Too many plans waiting"), admission.admitted(1, Cancellation()):
        pass
    assert time.monotonic() - started < 0.5, "a full queue answers at once"
    cancel.cancel()
    waiter.join(5)
    assert isinstance(outcome[0], PlanCancelledError) and admission.state()["waiting"] == 0
    release.set()
    first.join(10)


def test_a_background_plan_waits_for_its_turn_without_a_deadline() -> None:
    """A submitted REST plan (planned in the background) is not failed for waiting longer than
    queue_seconds, and does not fill the bounded queue of requests waiting for their answer."""
    admission = Admission(slots=1, budget_bytes=1 << 30, queue_seconds=0.2, max_waiting=1)
    release = threading.Event()
    first = _hold(admission, 1, release)
    admitted: list[float] = []
    started = time.monotonic()

    def background() -> None:
        with admission.admitted(1, Cancellation(), patient=True):
            admitted.append(time.monotonic() - started)

    waiter = threading.Thread(target=background)
    waiter.start()
    while admission.state()["waiting"] == 0:
        time.sleep(0.01)
    with pytest.raises(OverloadedError, match="waited"), admission.admitted(1, Cancellation()):
        pass  # a request still may wait (the background plan is not in its queue), for queue_seconds
    time.sleep(0.3)
    release.set()
    first.join(10)
    waiter.join(10)
    assert admitted and admitted[0] > 0.4, "admitted once the slot was free, well after queue_seconds"
    assert admission.state() == {"running": 0, "waiting": 0, "bytes": 0, "held-bytes": 0}


# --- cancellation of the planner itself ----------------------------------------------------------------------


class _CountingIO(FileIO):
    """Reads as FileIO does, counting manifest reads; cancels `cancel` when it reads the manifest list."""

    def __init__(self, cancel: Cancellation) -> None:
        super().__init__()
        self.cancel, self.manifests = cancel, 0

    def read_once(self, location: str, length: int | None = None) -> bytes:
        if "/snap-" in location:
            self.cancel.cancel()  # the client goes away while the manifest list is read
        elif location.endswith(".avro"):
            self.manifests += 1
        return super().read_once(location, length)


def test_a_cancelled_plan_stops_at_its_next_step(conformance: Conformance) -> None:
    cancel = Cancellation()
    io = _CountingIO(cancel)
    planner = ScanPlanner(io)
    table = load_by_metadata_location(io, conformance.tables["many_manifests"]["metadata_location"])
    try:
        with pytest.raises(PlanCancelledError):
            planner.plan(table, ScanRequest(), cancel)
        assert io.manifests == 0, "no manifest is read for a plan nobody wants"
        assert planner.plan(table, ScanRequest()).files is not None  # the planner is fine afterwards
        assert io.manifests > 1
    finally:
        planner.close()


class _CancelAfterManifests(FileIO):
    """Reads as FileIO does; cancels `cancel` once it has read `after` manifests (a client leaving mid-read)."""

    def __init__(self, cancel: Cancellation, after: int) -> None:
        super().__init__()
        self.cancel, self.after, self.manifests = cancel, after, 0

    def read_once(self, location: str, length: int | None = None) -> bytes:
        if location.endswith(".avro") and "/snap-" not in location:
            self.manifests += 1
            if self.manifests == self.after:
                self.cancel.cancel()
        return super().read_once(location, length)


def test_a_plan_cancelled_while_its_manifests_are_read_reads_no_more(conformance: Conformance) -> None:
    """The manifest reads look at the plan's cancellation before each manifest, and chunks not started are
    dropped from the pool: past the cancel, at most each reading thread's next manifest is read."""
    cancel = Cancellation()
    io = _CancelAfterManifests(cancel, after=2)
    planner = ScanPlanner(io, threads=2)
    table = load_by_metadata_location(io, conformance.tables["many_manifests"]["metadata_location"])
    total = len(planner.manifests.manifest_list(table.metadata.snapshots[table.metadata.current_snapshot_id or 0]))
    try:
        with pytest.raises(PlanCancelledError):
            planner.plan(table, ScanRequest(), cancel)
        assert io.manifests <= 2 + 2, f"{io.manifests} of {total} manifests read after the cancel"
        assert total > 8
    finally:
        planner.close()


def test_a_shared_plan_runs_on_while_one_request_still_wants_it(
    conformance: Conformance, monkeypatch: pytest.MonkeyPatch
) -> None:
    planner = ScanPlanner(FileIO())
    results = PlanCache(planner, 64 * 1024 * 1024, Admission(2, 1 << 30, 30, 16))
    table: LoadedTable = load_by_metadata_location(planner.io, conformance.tables["identity_part"]["metadata_location"])
    request = _canonical(table, filter="id > 3")
    release, entered = threading.Event(), threading.Event()
    plan = results._plan

    def held(request: CanonicalRequest, table: LoadedTable, cancel: Cancellation, explain: bool) -> CachedPlan:
        entered.set()
        release.wait(10)
        return plan(request, table, cancel, explain)

    monkeypatch.setattr(results, "_plan", held)
    gone, staying = Cancellation(), Cancellation()
    answers: dict[str, Any] = {}

    def ask(name: str, cancel: Cancellation) -> None:
        try:
            answers[name] = results.plan(request, table, cancel=cancel)[0]
        except BaseException as exc:
            answers[name] = exc

    threads = [threading.Thread(target=ask, args=("gone", gone))]
    threads[0].start()
    assert entered.wait(10)
    threads.append(threading.Thread(target=ask, args=("staying", staying)))
    threads[1].start()
    time.sleep(0.3)
    gone.cancel()  # the first client leaves; the second still waits for the same plan
    release.set()
    for thread in threads:
        thread.join(10)
    planner.close()
    assert not isinstance(answers["staying"], BaseException) and answers["staying"].plan.files is not None


# --- on a real service, with a slow store -----------------------------------------------------------------


@contextlib.contextmanager
def delaying_proxy(target: str, delay: float) -> Iterator[str]:
    """A TCP proxy to `target` (host:port) that holds every client chunk `delay` seconds before passing it."""
    host, port = target.rsplit(":", 1)
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def pipe(src: socket.socket, dst: socket.socket, wait: float) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                time.sleep(wait)
                dst.sendall(data)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                client = server.accept()[0]
            except OSError:
                continue
            upstream = socket.create_connection((host, int(port)))
            threading.Thread(target=pipe, args=(client, upstream, delay), daemon=True).start()
            threading.Thread(target=pipe, args=(upstream, client, 0.0), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        server.close()


@pytest.fixture(scope="module")
def slow_store(s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    boto3.client(
        "s3", endpoint_url=s3_endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=REGION
    ).create_bucket(Bucket="slow")
    db = tmp_path_factory.mktemp("slowcat") / "catalog.db"
    props = {"s3.endpoint": s3_endpoint, "s3.access-key-id": KEY, "s3.secret-access-key": SECRET, "s3.region": REGION}
    write_demo_table(PyIcebergSqlCatalog("slow", uri=f"sqlite:///{db}", warehouse="s3://slow/warehouse", **props))
    with delaying_proxy(s3_endpoint.removeprefix("http://"), 0.4) as proxy:
        yield proxy, db


def _count(metrics: str, status: str) -> float:
    found = re.findall(
        rf'scan_planner_requests_total\{{[^}}]*route="/plan"[^}}]*status="{status}"[^}}]*\}} (\S+)', metrics
    )
    return sum(float(v) for v in found)


def test_a_client_that_leaves_the_queue_is_not_planned_and_health_stays_fast(
    slow_store: tuple[str, Path], tmp_path: Path
) -> None:
    proxy, db = slow_store
    config = tmp_path / "service.json"
    config.write_text(
        json.dumps(
            {
                "catalog_uri": str(db),
                "catalog_name": "slow",
                "s3_endpoint": proxy,
                "s3_access_key_id": KEY,
                "s3_secret_access_key": SECRET,
                "s3_region": REGION,
                "max_concurrent_plans": 1,
                "max_waiting_plans": 1,
                "plan_queue_seconds": 60,
            }
        )
    )
    with (
        running_service("--config", str(config), "--log-level", "warning") as url,
        httpx.Client(base_url=url, timeout=120) as client,
    ):
        first: list[httpx.Response] = []
        holder = threading.Thread(target=lambda: first.append(client.post("/plan", json={"table": DEMO_TABLE})))
        holder.start()
        time.sleep(1.5)  # the first plan holds the only turn, reading manifests through the slow store
        with pytest.raises(httpx.ReadTimeout):  # the second waits for its turn; its client gives up
            httpx.post(f"{url}/plan", json={"table": DEMO_TABLE, "filter": "id > 3"}, timeout=1.0)
        third = httpx.post(f"{url}/plan", json={"table": DEMO_TABLE, "filter": "id > 5"}, timeout=30)
        health = [client.get("/health") for _ in range(20)]
        holder.join(120)
        assert first[0].status_code == 200, first[0].text[:300]
        assert third.status_code in (200, 503), third.text[:300]  # (the second left the queue: room to wait)
        assert all(h.status_code == 200 and h.elapsed.total_seconds() < 0.5 for h in health)
        deadline = time.monotonic() + 10
        while _count(client.get("/metrics").text, "499") < 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _count(client.get("/metrics").text, "499") == 1, "the abandoned plan was stopped, not made"


def test_a_plan_everyone_left_is_not_joined_again() -> None:
    """A request arriving after every waiter of a shared plan left (the plan not yet stopped) starts its own."""
    shared, gone = SharedCancellation(), Cancellation()
    assert shared.join(gone)
    gone.cancel()
    assert shared.cancellation.cancelled and not shared.join(Cancellation())


def _canonical(table: LoadedTable, **fields: Any) -> CanonicalRequest:
    """The canonical request of a /plan body's scan fields (scan_request()'s keyword arguments)."""
    return CanonicalRequest(table.name, table.metadata_location, scan_request(**fields))

"""REST scan plans that any replica serves: two `scan-planner serve` processes sharing a signing key, alone and
behind HAProxy (round robin per request, tests/balancer.py, as deploy/haproxy.cfg runs them), and one service
of two worker processes. A plan made on one replica is polled, paged and cancelled on the other; Spark +
Iceberg 1.12's REST client and PyIceberg read tables of many pages (two tasks a page) through the balancer
and through the workers with Spark + Iceberg 1.10.2's rows; a replica killed in the middle of a scan's pages
costs the client nothing; no plan id is issued that does not open through the balancer."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import StaticTable

from tests.balancer import Replica, balanced, haproxy_path
from tests.clients.spark_rest import assert_reads_match, run_reads
from tests.conformance.reference import Conformance

pytestmark = pytest.mark.skipif(haproxy_path() is None, reason="haproxy is not installed (scripts/setup.sh)")

SETTINGS = {"token_signing_key": "the replicas share this key", "plan_task_page_size": 2}
PAGED = ("mor_position_deletes", "identity_part", "unpartitioned")  # many pages of two tasks each
SPARK_CASES = tuple(f"{table}/full" for table in PAGED)
PYICEBERG_TABLES = ("unpartitioned", "bucket_part", "day_part")  # (PyIceberg 0.12 rejects null partition values)


def _config(directory: Path, **more: Any) -> Path:
    path = directory / "service.json"
    path.write_text(json.dumps({**SETTINGS, **more}))
    return path


@pytest.fixture(scope="module")
def replicas(conformance: Conformance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Replica]]:
    config = _config(tmp_path_factory.mktemp("replicas"))
    started = [Replica(str(conformance.dir / "warehouse"), 0, ["--config", str(config)]) for _ in range(2)]
    try:
        for replica in started:
            replica.start()
        yield started
    finally:
        for replica in started:
            replica.close()


@pytest.fixture(scope="module")
def balancer(replicas: list[Replica]) -> Iterator[str]:
    with balanced([r.url for r in replicas]) as url:
        yield url


@pytest.fixture(scope="module")
def workers(conformance: Conformance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = _config(tmp_path_factory.mktemp("workers"))
    service = Replica(str(conformance.dir / "warehouse"), 0, ["--config", str(config), "--workers", "2"])
    try:
        service.start()
        yield service.url
    finally:
        service.close()


def _url(table: str) -> str:
    return f"/v1/namespaces/db/tables/{table}"


def _tasks(page: dict[str, Any]) -> list[tuple[str, list[str]]]:
    deletes = [d["file-path"] for d in page["delete-files"]]
    return [
        (t["data-file"]["file-path"], [deletes[i] for i in t.get("delete-file-references", [])])
        for t in page["file-scan-tasks"]
    ]


def _java(conformance: Conformance, table: str) -> list[tuple[str, list[str]]]:
    return sorted((f["path"], [d["path"] for d in f["deletes"]]) for f in conformance.case(f"{table}/current")["files"])


def _every_page(client: httpx.Client, table: str, first: dict[str, Any]) -> list[tuple[str, list[str]]]:
    found = _tasks(first)
    for token in first["plan-tasks"]:
        page = client.post(f"{_url(table)}/tasks", json={"plan-task": token})
        assert page.status_code == 200, page.text
        found += _tasks(page.json())
    return sorted(found)


def test_a_plan_made_on_one_replica_is_polled_paged_and_cancelled_on_the_other(
    conformance: Conformance, replicas: list[Replica]
) -> None:
    with (
        httpx.Client(base_url=replicas[0].url, timeout=60) as a,
        httpx.Client(base_url=replicas[1].url, timeout=60) as b,
    ):
        for table in PAGED:
            first = a.post(f"{_url(table)}/plan", json={}).json()
            assert first["status"] == "completed" and first["plan-tasks"], first
            assert _every_page(b, table, first) == _every_page(a, table, first) == _java(conformance, table)
            polled = b.get(f"{_url(table)}/plan/{first['plan-id']}").json()
            assert polled == first  # (no credentials vended here: the same answer)
            assert b.delete(f"{_url(table)}/plan/{first['plan-id']}").status_code == 204
            assert b.get(f"{_url(table)}/plan/{first['plan-id']}").json() == {"status": "cancelled"}
            gone = b.post(f"{_url(table)}/tasks", json={"plan-task": first["plan-tasks"][0]})
            assert gone.status_code == 404 and gone.json()["error"]["type"] == "NoSuchPlanTaskException"
            assert a.get(f"{_url(table)}/plan/{first['plan-id']}").json()["status"] == "completed"  # a kept it
        other = a.post(f"{_url('unpartitioned')}/plan", json={}).json()
        wrong_table = b.get(f"{_url('identity_part')}/plan/{other['plan-id']}")
        assert wrong_table.status_code == 404 and wrong_table.json()["error"]["type"] == "NoSuchPlanIdException"


def test_a_replica_killed_in_the_middle_of_the_pages_costs_the_client_nothing(
    conformance: Conformance, replicas: list[Replica], balancer: str
) -> None:
    table = "mor_position_deletes"
    with httpx.Client(base_url=balancer, timeout=60) as client:
        first = client.post(f"{_url(table)}/plan", json={"case-sensitive": False}).json()  # (a plan of its own)
        tokens = first["plan-tasks"]
        found = _tasks(first)
        for i, token in enumerate(tokens):
            if i == len(tokens) // 2:
                replicas[0].stop(signal.SIGKILL)
            page = client.post(f"{_url(table)}/tasks", json={"plan-task": token})
            assert page.status_code == 200, page.text
            found += _tasks(page.json())
    replicas[0].start()
    assert sorted(found) == _java(conformance, table)


def test_no_plan_id_is_issued_that_does_not_open_through_the_balancer(balancer: str) -> None:
    """A request too large for an id is refused when asked (400, naming the limit); the largest that is
    issued opens through HAProxy with a bearer token's worth of headers."""
    headers = {"Authorization": "Bearer " + "t" * 2000, "User-Agent": "x" * 200}
    with httpx.Client(base_url=balancer, timeout=60, headers=headers) as client:
        huge = f"id IN ({', '.join(str(7_919 * i * 1_000_003 % 2**61) for i in range(4000))})"
        for refused in (
            client.post("/plan", json={"table": "db.unpartitioned", "filter": huge, "inline-task-limit": 0}),
            client.post(f"{_url('unpartitioned')}/plan", json={"filter": _in_json(4000)}),
        ):
            assert refused.status_code == 400 and "too large for a plan id" in refused.text, refused.text
        for count in (1500, 2000, 2200):  # ids of some 8,000 to 12,000 characters, where they are issued
            answer = client.post("/plan", json={"table": "db.unpartitioned", "filter": _in_text(count)})
            if answer.status_code == 400:
                continue
            plan_id = answer.json()["plan-id"]
            assert client.get(f"/plans/{plan_id}/tasks/0").status_code in (200, 404), len(plan_id)
            opened = client.get(f"/plans/{plan_id}")
            assert opened.status_code == 200, (len(plan_id), opened.text[:300])
            rest = client.post(f"{_url('unpartitioned')}/plan", json={"filter": _in_json(count)})
            if rest.status_code == 200:
                polled = client.get(f"{_url('unpartitioned')}/plan/{rest.json()['plan-id']}")
                assert polled.status_code == 200, (len(rest.json()["plan-id"]), polled.text[:300])


def _values(count: int) -> list[int]:
    return [7_919 * i * 1_000_003 % 2**61 for i in range(count)]


def _in_text(count: int) -> str:
    return f"id IN ({', '.join(map(str, _values(count)))})"


def _in_json(count: int) -> dict[str, Any]:
    return {"type": "in", "term": "id", "values": _values(count)}


@pytest.mark.parametrize("door", ["balancer", "workers"])
def test_pyiceberg_reads_every_page_through_replicas_and_workers(
    conformance: Conformance, request: pytest.FixtureRequest, door: str
) -> None:
    uri = request.getfixturevalue(door)
    catalog = RestCatalog("scan-planner", uri=uri, **{"scan-planning-mode": "server"})
    for table in PYICEBERG_TABLES:
        loaded = catalog.load_table(f"db.{table}")
        served = loaded.scan().to_arrow()  # planned by the service, page by page
        direct = StaticTable.from_metadata(loaded.metadata_location).scan().to_arrow()  # planned by PyIceberg
        assert served.num_rows > 0 and served.schema == direct.schema, table
        assert sorted(map(repr, served.to_pylist())) == sorted(map(repr, direct.to_pylist())), table


@pytest.mark.parametrize("door", ["balancer", "workers"])
def test_spark_and_iceberg_112_read_every_page_through_replicas_and_workers(
    conformance: Conformance, request: pytest.FixtureRequest, tmp_path: Path, door: str
) -> None:
    """The reads that failed with two replicas behind the balancer ("Worker failed processing planTask")."""
    uri = request.getfixturevalue(door)
    cases = [conformance.read(case_id) for case_id in SPARK_CASES]
    result = run_reads(tmp_path, "3.5", "1.12.0", uri, cases)
    assert_reads_match(conformance, tmp_path, result)

"""X-Iceberg-Client-Capabilities: PlannerClient sends it only when asked, and every request spark_client
makes declares read-restrictions (it enforces them), against a real HTTP server on loopback that refuses a
restricted plan to clients that do not (stub_service.py): the driver's plan, a task fetched by id on an
executor, a caller's own client, and the Spark 4 data source's plans and reads, whose partitions carry the
query's salt."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from planner_client import PlannerClient, PlannerServiceError, Scan
from spark_client.partitions import fetch_task
from spark_client.planner import READ_RESTRICTIONS, planner
from spark_client.restrictions import SALT_KEY
from tests.read_restrictions.restricted_table import expected_rows, write_table
from tests.read_restrictions.stub_service import PLAN_ID, StubService, stub_service
from tests.spark_client.plans import wire

PLAN_BODY = {"table": "db.t"}


@pytest.fixture
def service(tmp_path: Path) -> Iterator[StubService]:
    with stub_service(wire(write_table(tmp_path))) as stub:
        yield stub


def test_planner_client_declares_capabilities_only_when_asked(service: StubService) -> None:
    with PlannerClient(service.url, retries=0) as plain:
        with pytest.raises(PlannerServiceError) as refused:
            plain.plan(PLAN_BODY)
        assert refused.value.status == 403 and refused.value.type == "ForbiddenException"
        declaring = plain.with_capabilities(READ_RESTRICTIONS, "scan-planning")
        assert declaring.plan(PLAN_BODY)["task-count"] == 3
        with pytest.raises(PlannerServiceError):  # the original promises nothing still
            plain.plan(PLAN_BODY)
    with PlannerClient(service.url, capabilities=["vended-credentials", READ_RESTRICTIONS]) as client:
        assert client.task(PLAN_ID, 0)["task"]["files"]
    assert [c for _, _, c in service.requests] == [
        None,
        "read-restrictions,scan-planning",
        None,
        "vended-credentials,read-restrictions",
    ]


@pytest.mark.parametrize("bad", ["", "a,b", " read-restrictions"])
def test_a_capability_is_one_token(bad: str) -> None:
    with pytest.raises(ValueError, match="one token"):
        PlannerClient("http://127.0.0.1:1", capabilities=[bad])
    with pytest.raises(TypeError, match="not a string"):
        PlannerClient("http://127.0.0.1:1", capabilities="read-restrictions")


def test_spark_clients_declare_read_restrictions(service: StubService) -> None:
    salt = bytes(range(16))
    payload = fetch_task(service.url, PLAN_ID, 1, salt=salt)  # what an executor does for a plan by id
    assert payload[SALT_KEY] == salt.hex() and payload["plan"]["read-restrictions"]
    with PlannerClient(service.url, retries=0) as own:  # a caller's client: used through a declaring copy
        with planner(own) as client:
            client.plan(PLAN_BODY)
        with pytest.raises(PlannerServiceError):
            own.plan(PLAN_BODY)  # neither changed nor closed by it
    with planner(None, service.url) as client:
        client.aggregate(Scan("db.t"), ["count(*)"])
    assert [c for _, _, c in service.requests] == [READ_RESTRICTIONS, READ_RESTRICTIONS, None, READ_RESTRICTIONS]


@pytest.mark.parametrize("by_id", [False, True], ids=["inline", "by-id"])
def test_the_data_source_declares_it_and_ships_one_salt(service: StubService, by_id: bool) -> None:
    """The source's schema() and partitions() plan (the driver), read() fetches tasks by id (an executor);
    every partition of the query carries the same salt, and the rows read are the enforced ones."""
    pytest.importorskip("pyspark.sql.datasource", reason="Python data sources need pyspark >= 4.0")
    from spark_client.datasource import ScanPlannerDataSource

    options = {"table": "db.t", "service-url": service.url, **({"inline-task-limit": "0"} if by_id else {})}
    source = ScanPlannerDataSource(options)
    schema = source.schema()
    assert schema["region"].nullable  # masked: not declared non-null, though the plan knows it holds no null
    assert not schema["id"].nullable
    reader = source.reader(schema)
    partitions: Sequence[Any] = reader.partitions()  # (_Task: an InputPartition with its salt)
    salts = {p.salt if by_id else bytes.fromhex(json.loads(p.value)[SALT_KEY]) for p in partitions}
    assert len(salts) == 1 and len(next(iter(salts))) >= 16
    batches = [b for p in partitions for b in reader.read(p)]
    rows = sorted(pa.Table.from_batches(batches).to_pylist(), key=lambda r: r["id"])
    assert rows == expected_rows(salts.pop())
    assert {c for _, _, c in service.requests} == {READ_RESTRICTIONS}
    fetched = [path for _, path, _ in service.requests if path.startswith("/plans/")]
    assert len(fetched) == (3 if by_id else 0)

"""POST /aggregate through a real uvicorn on loopback, against Spark + Iceberg 1.10.2's answers to the same
aggregates (read_cases.AGGREGATE_CASES; the generator records them with aggregate push-down on and off):
every aggregate the service calls exact equals the rows' answer; the service answers from metadata exactly
where Iceberg does, with the same values (but for the cases where it is knowingly stricter); bad requests
are 400s that name the problem."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from planner_client import Scan
from tests.aggregate_values import comparable, plain_json
from tests.conformance.read_cases import AGGREGATE_CASES
from tests.conformance.reference import Conformance
from tests.spark_client.compare import snapshot_arguments


@pytest.fixture(scope="module")
def client(conformance_service: str) -> httpx.Client:
    return httpx.Client(base_url=conformance_service, timeout=60)


def answer(client: httpx.Client, case: dict[str, Any]) -> dict[str, Any]:
    scan = Scan(f"db.{case['table']}", filter=case["filter"], **snapshot_arguments(case["snapshot"]))
    body = scan.aggregate_request(case["aggregates"])
    response = client.post("/aggregate", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


@pytest.mark.parametrize("case_id", [c["id"] for c in AGGREGATE_CASES])
def test_aggregates_match_spark_and_iceberg(client: httpx.Client, conformance: Conformance, case_id: str) -> None:
    case = conformance.aggregate(case_id)
    result = answer(client, case)
    entries = result["aggregates"]
    assert [e["name"] for e in entries] == case["aggregates"]
    types = [e["type"] for e in entries]
    ours = comparable([plain_json(e["value"], e["type"]) for e in entries], types)
    truth = comparable(case["read_values"], types)
    for entry, value, expected in zip(entries, ours, truth, strict=True):
        if entry["exact"]:
            assert value == expected, entry["name"]
        else:
            assert entry["value"] is None and entry["reason"], entry
    assert result["exact"] == all(e["exact"] for e in entries)
    # exact where Iceberg answers from metadata (with its values), and nowhere else but for `stricter` cases
    assert result["exact"] == (case["pushed"] and case["stricter"] is None), [e.get("reason") for e in entries]
    if result["exact"]:
        assert ours == comparable(case["spark_values"], types)
    if case["stricter"] is not None:
        assert case["pushed"], f"{case_id}: Iceberg no longer answers from metadata; drop `stricter`"
        assert not result["exact"]


@pytest.mark.parametrize(
    ("aggregates", "message"),
    [
        ([], "No aggregates"),
        (["sum(id)"], "Invalid aggregate 'sum(id)'"),
        (["min(*)"], "only count takes *"),
        (["max(nope)"], "cannot find field 'nope'"),
        (["count()"], "Invalid aggregate 'count()'"),
        (["count(*)"] * 101, "at most 100"),
        ("count(*)", "aggregates: Input should be a valid list"),
    ],
)
def test_bad_aggregates_are_400(client: httpx.Client, aggregates: Any, message: str) -> None:
    response = client.post("/aggregate", json={"table": "db.unpartitioned", "aggregates": aggregates})
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"table": "db.nope", "aggregates": ["count(*)"]}, 404, "db.nope"),
        ({"table": "db.unpartitioned", "snapshot-id": 1, "aggregates": ["count(*)"]}, 404, "1"),
        ({"table": "db.unpartitioned", "filter": "id <", "aggregates": ["count(*)"]}, 400, "filter"),
        ({"table": "db.unpartitioned", "ref": "x", "start-snapshot-id": 1, "aggregates": ["count(*)"]}, 400, "ref"),
        ({"table": "db.unpartitioned"}, 400, "aggregates: Field required"),
    ],
)
def test_bad_scans_are_named(client: httpx.Client, body: dict[str, Any], status: int, message: str) -> None:
    response = client.post("/aggregate", json=body)
    assert response.status_code == status, response.text
    assert message in response.json()["error"]["message"]

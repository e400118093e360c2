"""POST /plan through a real uvicorn on loopback: every conformance case planned over HTTP equals Iceberg
Java's plan; errors come back as JSON with the right status, and the service keeps serving."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conformance.cases import CASES
from tests.conformance.reference import Conformance


@pytest.fixture(scope="module")
def client(conformance_service: str) -> httpx.Client:
    return httpx.Client(base_url=conformance_service, timeout=30)


def _request(case: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"table": f"db.{case['table']}", "case-sensitive": case["case_sensitive"]}
    snapshot = case["snapshot"]
    key = {"id": "snapshot-id", "as_of": "as-of-timestamp-ms", "ref": "ref"}.get(snapshot["kind"])
    if key is not None:
        body[key] = snapshot["value"]
    if case["options"]:
        body["options"] = case["options"]
    if case["filter"] is not None:
        body["filter"] = case["filter"]
    return body


@pytest.mark.parametrize("case_id", [c["id"] for c in CASES])
def test_plan_over_http_matches_java(conformance: Conformance, client: httpx.Client, case_id: str) -> None:
    case = conformance.case(case_id)
    response = client.post("/plan", json=_request(case))
    if case["error"] is not None:
        assert response.status_code in (400, 404), response.text
        assert response.json()["error"]["message"].startswith(case["error"]["message"])
        return
    assert response.status_code == 200, response.text
    body = response.json()
    deletes = body["delete-files"]
    ours = [
        [
            (
                f["data-file"]["file-path"],
                f["start"],
                f["length"],
                f["residual-filter"],
                [deletes[i]["file-path"] for i in f["delete-file-references"]],
            )
            for f in task["files"]
        ]
        for task in body["tasks"]
    ]
    java = [
        [(t["path"], t["start"], t["length"], t["residual"], [d["path"] for d in t["deletes"]]) for t in combined]
        for combined in case["tasks"]
    ]
    assert ours == java


def test_projection_and_pretty(client: httpx.Client) -> None:
    body = {"table": "db.unpartitioned", "select": ["name"], "filter": "id < 10"}
    response = client.post("/plan?pretty", json=body)
    assert response.status_code == 200
    assert response.text.startswith("{\n  ")
    fields = [f["name"] for f in response.json()["schema"]["fields"]]
    assert fields == ["id", "name"]  # the selected column and the one the filter reads, in schema order


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"{not json", 400, "Invalid JSON body"),
        (b'{"table": "db.unpartitioned", "snapshot-id": "x"}', 400, "snapshot-id: Input should be a valid integer"),
        (b'{"table": "db.unpartitioned", "colour": 1}', 400, "colour: unknown field"),
        (b'{"table": "db.unpartitioned", "filter": "id <"}', 400, "Invalid filter at line 1"),
        (b'{"table": "db.unpartitioned", "filter": {"type": "lt", "term": "nope", "value": 1}}', 400, "nope"),
        (b'{"table": "db.unpartitioned", "options": {"split-size": 0}}', 400, "Split size must be > 0"),
        (b'{"table": "db.unpartitioned", "options": {"colour": 1}}', 400, "Unknown option 'colour'"),
        (b'{"table": "db.unpartitioned", "select": ["nope"]}', 400, "Cannot select unknown column 'nope'"),
        (b'{"table": "db.unpartitioned", "snapshot-id": 1, "ref": "main"}', 400, "Choose at most one"),
        (b'{"table": "unqualified"}', 400, "expected 'namespace.table'"),
        (b'{"table": "db.nope"}', 404, "Table does not exist: db.nope"),
        (b'{"table": "nope.nope"}', 404, "Table does not exist"),
        (b'{"table": "db.snapshots", "snapshot-id": 123}', 404, "Cannot find snapshot with ID 123"),
        (b'{"table": "db.snapshots", "ref": "nope"}', 404, "Cannot find ref nope"),
        (b'{"table": "db.snapshots", "as-of-timestamp-ms": 0}', 404, "Cannot find a snapshot older than"),
        (b'{"metadata-location": "/etc/hosts"}', 403, "outside the allowed roots"),
        (b'{"table": "db.snapshots", "start-snapshot-id": 1, "end-snapshot-id": 2}', 400, "not supported yet"),
    ],
)
def test_errors(client: httpx.Client, body: bytes, status: int, message: str) -> None:
    response = client.post("/plan", content=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == status and message in error["message"]
    assert client.get("/health").json()["status"] == "ok"


def test_body_limit_and_unknown_route(client: httpx.Client) -> None:
    response = client.post("/plan", content=b"{" + b" " * (2 * 1024 * 1024) + b"}")
    assert response.status_code == 413 and "over the limit" in response.json()["error"]["message"]
    response = client.get("/nope")
    assert response.status_code == 404 and response.json()["error"]["type"] == "NotFoundException"


def test_debug_views_and_metrics(client: httpx.Client, conformance: Conformance) -> None:
    table = conformance.tables["snapshots"]
    snaps = client.get("/tables/db.snapshots/snapshots").json()
    assert snaps["current-snapshot-id"] == table["current_snapshot_id"]
    assert len(snaps["snapshots"]) == table["snapshot_count"]
    assert sorted(client.get("/tables/db.snapshots/refs").json()["refs"]) == table["refs"]
    history = client.get("/tables/db.snapshots/history").json()["history"]
    assert history[-1]["snapshot-id"] == table["current_snapshot_id"]
    assert client.get("/tables/db.nope/refs").status_code == 404

    text = client.get("/metrics").text
    assert 'scan_planner_requests_total{method="POST",route="/plan",status="200"}' in text
    assert "scan_planner_stage_seconds_bucket" in text and 'scan_planner_cache_hits{cache="manifests"}' in text
    assert client.get("/docs").status_code == 200


@pytest.mark.parametrize(
    "case_id", ["identity_part/partition-and-column", "day_part/ts-range", "spec_evolution/id", "unpartitioned/id-lt"]
)
def test_explain_accounts_for_every_file(conformance: Conformance, client: httpx.Client, case_id: str) -> None:
    case = conformance.case(case_id)
    body = {**_request(case), "explain": True}
    explain = client.post("/plan", json=body).json()["explain"]
    assert explain["filter"] == case["filter"]
    kept = {f["file-path"] for f in explain["data-files"] if f["kept"]}
    assert kept == {f["path"] for f in case["files"]}  # exactly what Iceberg Java planned
    for f in explain["data-files"]:
        if f["kept"]:
            assert f["reason"].startswith("might match; residual")
        else:
            assert f["reason"].startswith(("partition {", "column metrics cannot match", "record_count is 0"))
    assert all(m["reason"] for m in explain["manifests"])


def test_explain_names_the_deciding_statistics(client: httpx.Client) -> None:
    body = {"table": "db.identity_part", "filter": "category = 'a' AND id < 0", "explain": True}
    files = client.post("/plan", json=body).json()["explain"]["data-files"]
    reasons = [f["reason"] for f in files]
    assert any(r.startswith("partition {'category': 'b'} cannot match category == 'a'") for r in reasons)
    assert any(r.startswith("column metrics cannot match id < 0: id: lower=") for r in reasons)
    skipped = next(f for f in files if f["reason"].startswith("column metrics"))
    assert "id: lower=" in skipped["reason"] and " upper=" in skipped["reason"]

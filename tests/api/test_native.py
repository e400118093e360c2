"""POST /plan through a real uvicorn on loopback: every conformance case planned over HTTP equals Iceberg
Java's plan; errors come back as JSON with the right status, and the service keeps serving."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from planner_service.expressions.expression_json import expression_to_json
from planner_service.expressions.filter_string import parse_filter
from planner_service.expressions.nesting import MAX_FILTER_DEPTH
from planner_service.nesting import ensure_recursion_headroom
from tests.conformance.cases import CASES
from tests.conformance.reference import Conformance, our_refusal
from tests.conftest import running_service


@pytest.fixture(scope="module")
def client(conformance_service: str) -> httpx.Client:
    return httpx.Client(base_url=conformance_service, timeout=30)


def _request(case: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"table": f"db.{case['table']}", "case-sensitive": case["case_sensitive"]}
    snapshot = case["snapshot"]
    key = {"id": "snapshot-id", "as_of": "as-of-timestamp-ms", "ref": "ref"}.get(snapshot["kind"])
    if key is not None:
        body[key] = snapshot["value"]
    if snapshot["kind"] == "appends":
        body["start-snapshot-id"] = snapshot["start"]
        if snapshot["end"] is not None:
            body["end-snapshot-id"] = snapshot["end"]
    if case["options"]:
        body["options"] = case["options"]
    if case["filter"] is not None:
        body["filter"] = case["filter"]
    return body


def _java_tasks(case: dict[str, Any]) -> list[list[tuple[Any, ...]]]:
    return [
        [(t["path"], t["start"], t["length"], t["residual"], [d["path"] for d in t["deletes"]]) for t in combined]
        for combined in case["tasks"]
    ]


def _inline_tasks(body: dict[str, Any]) -> list[list[tuple[Any, ...]]]:
    """The compact wire read back: splits refer to files, files to residuals and delete files."""
    files, residuals, deletes = body["files"], body["residuals"], body["delete-files"]
    return [
        [
            (
                files[f]["data-file"]["file-path"],
                start,
                length,
                residuals[files[f]["residual"]],
                [deletes[i]["file-path"] for i in files[f].get("delete-file-references", [])],
            )
            for f, start, length in task["splits"]
        ]
        for task in body["tasks"]
    ]


def _fetched_tasks(client: httpx.Client, plan_id: str, count: int) -> list[list[tuple[Any, ...]]]:
    """Tasks fetched one range at a time, each self-contained (its own delete files)."""
    out = []
    for start in range(0, count, 3):
        response = client.get(f"/plans/{plan_id}/tasks", params={"start": start, "end": min(start + 3, count)})
        assert response.status_code == 200, response.text
        page = response.json()
        deletes = page["plan"]["delete-files"]
        for task in page["tasks"]:
            out.append(
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
            )
    return out


@pytest.mark.parametrize(
    ("case_id", "filter_string"),
    [("identity_types/bin-hex-eq", "bin = X'00FF'"), ("all_types/bin-hex-gt", "bin > X'05ff'")],
)
def test_binary_literals_of_filter_strings_plan_as_java_plans_their_hex(
    conformance: Conformance, client: httpx.Client, case_id: str, filter_string: str
) -> None:
    """X'..' in a filter string plans what the REST JSON form's hex does in Java (the request is kept in
    its JSON form, where binary values are hex strings: read back as bytes for binary columns)."""
    case = conformance.case(case_id)
    body = {"table": f"db.{case['table']}", "filter": filter_string, "inline-task-limit": 10**6}
    response = client.post("/plan", json=body)
    assert response.status_code == 200, response.text[:300]
    planned = [[task[:3] for task in combined] for combined in _inline_tasks(response.json())]
    assert planned == [[task[:3] for task in combined] for combined in _java_tasks(case)]
    assert client.post("/plan", json={**body, "filter": "bin = 'not hex'"}).status_code == 400


@pytest.mark.parametrize("case_id", [c["id"] for c in CASES])
def test_plan_over_http_matches_java(conformance: Conformance, client: httpx.Client, case_id: str) -> None:
    case = conformance.case(case_id)
    response = client.post("/plan", json=_request(case))
    if case["error"] is not None:
        assert response.status_code in (400, 404), response.text
        assert response.json()["error"]["message"].startswith(our_refusal(conformance, case))
        return
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["task-count"] == len(body["tasks"]) == len(case["tasks"])
    assert _inline_tasks(body) == _java_tasks(case)


def test_a_filter_nested_a_thousand_levels_plans_as_java_plans_it(
    conformance: Conformance, client: httpx.Client
) -> None:
    """F OR (F OR (... F)) a thousand levels deep selects what F does (Java's plan of F); its JSON, deeper
    than orjson writes, travels back in the body's `filter` and residuals."""
    case = conformance.case("unpartitioned/id-lt")
    predicate = orjson.dumps(case["filter"]).decode()
    deep = predicate
    for _ in range(MAX_FILTER_DEPTH):
        deep = f'{{"type":"or","left":{predicate},"right":{deep}}}'
    response = client.post("/plan", content=f'{{"table":"db.unpartitioned","filter":{deep}}}'.encode())
    assert response.status_code == 200, response.text[:300]
    body = orjson.loads(response.content)
    ensure_recursion_headroom()  # comparing the nested dicts recurses too
    assert body["filter"] == orjson.loads(deep)
    planned = [[task[:3] for task in combined] for combined in _inline_tasks(body)]
    assert planned == [[task[:3] for task in combined] for combined in _java_tasks(case)]


@pytest.mark.parametrize("case_id", [c["id"] for c in CASES])
def test_plan_by_id_matches_java(conformance: Conformance, client: httpx.Client, case_id: str) -> None:
    """Over the inline limit, /plan answers with the plan id and per-task estimates; the tasks fetched by
    index equal Java's."""
    case = conformance.case(case_id)
    if case["error"] is not None or not case["tasks"]:
        pytest.skip("no tasks to fetch")
    response = client.post("/plan", json={**_request(case), "inline-task-limit": 0})
    assert response.status_code == 200, response.text
    body = response.json()
    assert "tasks" not in body and "files" not in body
    count = body["task-count"]
    assert count == len(case["tasks"]) == len(body["task-size-bytes"]) == len(body["task-estimated-row-count"])
    assert _fetched_tasks(client, body["plan-id"], count) == _java_tasks(case)
    single = client.get(f"/plans/{body['plan-id']}/tasks/{count - 1}").json()
    assert single["tasks"][0]["index"] == count - 1
    assert single["tasks"][0]["size-bytes"] == body["task-size-bytes"][-1]


def test_a_plan_by_id_without_task_estimates_has_its_count_alone(client: httpx.Client) -> None:
    """task-estimates false (what a Spark driver sends): the plan id, context and task count, no per-task
    arrays; its ETag differs from the answer with them."""
    body = {"table": "db.row_groups", "options": {"split-size": 1024}, "inline-task-limit": 0}
    full = client.post("/plan", json=body)
    counted = client.post("/plan", json={**body, "task-estimates": False})
    assert full.status_code == counted.status_code == 200
    with_estimates, without = full.json(), counted.json()
    assert without["task-count"] == with_estimates["task-count"] == len(with_estimates["task-size-bytes"]) > 1
    assert "task-size-bytes" not in without and "task-estimated-row-count" not in without
    assert without["plan-id"] == with_estimates["plan-id"]
    assert full.headers["etag"] != counted.headers["etag"]


def test_compressed_bodies_and_etags(client: httpx.Client) -> None:
    body = {"table": "db.row_groups", "options": {"split-size": 1024}}
    plain = client.post("/plan", json=body, headers={"Accept-Encoding": "identity"})
    assert plain.status_code == 200 and "content-encoding" not in plain.headers
    for coding in ("zstd", "gzip"):
        response = client.post("/plan", json=body, headers={"Accept-Encoding": f"{coding}, identity;q=0.5"})
        assert response.headers["content-encoding"] == coding and response.headers["vary"] == "Accept-Encoding"
        assert response.json()["tasks"] == plain.json()["tasks"]  # httpx decodes both codings
    etag = plain.headers["etag"]
    again = client.post("/plan", json=body, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.headers["etag"] == etag and not again.content
    other = client.post("/plan", json={**body, "filter": "id > 1"}, headers={"If-None-Match": etag})
    assert other.status_code == 200 and other.headers["etag"] != etag
    metrics = client.get("/metrics").text
    assert 'scan_planner_cache_hits{cache="plans"}' in metrics and 'cache="plan-bodies"' in metrics


def test_plan_ids_survive_a_restart(conformance: Conformance, client: httpx.Client) -> None:
    """Another replica (here: a second service that never saw the plan) serves the same task i."""
    case = conformance.case("row_groups/split-1k-lookback-10-open-0")
    body = client.post("/plan", json={**_request(case), "inline-task-limit": 0}).json()
    warehouse = conformance.dir / "warehouse"
    config = conformance.dir.parent / f"service-{conformance.dir.name}.toml"  # conformance_service's settings
    with (
        running_service("--warehouse", str(warehouse), "--config", str(config)) as other_url,
        httpx.Client(base_url=other_url, timeout=30) as other,
    ):
        assert _fetched_tasks(other, body["plan-id"], body["task-count"]) == _java_tasks(case)
        summary = other.get(f"/plans/{body['plan-id']}").json()
        assert summary["task-count"] == body["task-count"] and summary["snapshot-id"] == body["snapshot-id"]


@pytest.mark.parametrize(
    ("path", "status"),
    [("/plans/nope/tasks/0", 404), ("/plans/p1.AAAA/tasks/0", 404), ("/plans/p1.AAAA", 404)],
)
def test_unknown_plan_ids(client: httpx.Client, path: str, status: int) -> None:
    response = client.get(path)
    assert response.status_code == status and "Unknown plan id" in response.json()["error"]["message"]


def test_task_index_out_of_range(client: httpx.Client) -> None:
    plan_id = client.post("/plan", json={"table": "db.unpartitioned"}).json()["plan-id"]
    response = client.get(f"/plans/{plan_id}/tasks/99")
    assert response.status_code == 404 and "it has 1 tasks" in response.json()["error"]["message"]


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
        (b'{"table": "db.unpartitioned", "snapshot-id": true}', 400, "snapshot-id: Input should be a valid integer"),
        (b'{"table": "db.unpartitioned", "explain": 1}', 400, "explain: Input should be a valid boolean"),
        (b'{"table": "db.unpartitioned", "filter": "id = ' + b"9" * 4301 + b'"}', 400, "4301 digits"),
        (b'{"table": "db.unpartitioned", "filter": "bucket(99999999999999999999, id) = 1"}', 400, "at most 2147483647"),
        (
            b'{"table": "db.unpartitioned", "filter": {"type": "eq", "term": {"type": "transform", "transform": '
            b'"bucket[0]", "term": "id"}, "value": 1}}',
            400,
            "Invalid number of buckets: 0",
        ),
        (b'{"table": "db.unpartitioned", "colour": 1}', 400, "colour: unknown field"),
        (b'{"table": "db.unpartitioned", "filter": "id <"}', 400, "Invalid filter at line 1"),
        (b'{"table": "db.unpartitioned", "filter": {"type": "lt", "term": "nope", "value": 1}}', 400, "nope"),
        (b'{"table": "db.unpartitioned", "options": {"split-size": 0}}', 400, "Split size must be > 0"),
        (b'{"table": "db.unpartitioned", "options": {"colour": 1}}', 400, "Unknown option 'colour'"),
        (b'{"table": "db.unpartitioned", "select": ["nope"]}', 400, "Cannot select unknown column 'nope'"),
        (b'{"table": "db.unpartitioned", "snapshot-id": 1, "ref": "main"}', 400, "Choose at most one"),
        (b'{"table": "unqualified"}', 400, "expected 'namespace.table'"),
        (b'{"table": "db.unpart\\u0000itioned"}', 400, "control characters and path separators"),
        (b'{"table": "db.' + b"x" * 300 + b'"}', 400, "longer than 255 bytes"),
        (b'{"table": "db./etc/passwd"}', 400, "Invalid table name '/etc/passwd'"),
        (b'{"table": "db.nope"}', 404, "Table does not exist: db.nope"),
        (b'{"table": "nope.nope"}', 404, "Table does not exist"),
        (b'{"table": "db.snapshots", "snapshot-id": 123}', 404, "Cannot find snapshot with ID 123"),
        (b'{"table": "db.snapshots", "ref": "nope"}', 404, "Cannot find ref nope"),
        (b'{"table": "db.snapshots", "as-of-timestamp-ms": 0}', 404, "Cannot find a snapshot older than"),
        (b'{"metadata-location": "/etc/hosts"}', 403, "outside the roots this service serves"),
        (
            b'{"table": "db.snapshots", "start-snapshot-id": 1, "end-snapshot-id": 2}',
            400,
            "Cannot find the end snapshot",
        ),
        (b'{"table": "db.snapshots", "end-snapshot-id": 2}', 400, "Cannot set only end-snapshot-id"),
        (b'{"table": "db.snapshots", "ref": "main", "start-snapshot-id": 1}', 400, "when ref is set"),
    ],
)
def test_errors(client: httpx.Client, body: bytes, status: int, message: str) -> None:
    response = client.post("/plan", content=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == status and message in error["message"]
    assert client.get("/health").json()["status"] == "ok"


# db.unpartitioned's columns (tests/conformance/reference_tables.py)
COLUMNS = "the columns are id, category, name, ts, amount"


@pytest.mark.parametrize(
    ("path", "body", "status", "message"),
    [
        ("/plan", {"filter": "idd < 100"}, 400, f"Cannot find field 'idd' (did you mean 'id'?); {COLUMNS}"),
        (
            "/plan",
            {"filter": {"type": "eq", "term": "categori", "value": "a"}},
            400,
            f"Cannot find field 'categori' (did you mean 'category'?); {COLUMNS}",
        ),
        ("/plan", {"select": ["idd"]}, 400, f"Cannot select unknown column 'idd' (did you mean 'id'?); {COLUMNS}"),
        ("/plan", {"select": ["zzz"]}, 400, f"Cannot select unknown column 'zzz'; {COLUMNS}"),
        ("/plan", {"filter": "id < 'abc'"}, 400, "Cannot compare id (long) with the string 'abc'"),
        (
            "/plan",
            {"filter": 'category = "a"'},
            400,
            "Invalid filter at line 1, column 1 in 'category = \"a\"': both sides are columns: string values take "
            "single quotes ('a'), double quotes and backticks name columns",
        ),
        (
            "/aggregate",
            {"aggregates": ["max(amout)"]},
            400,
            f"Invalid aggregate max(amout): cannot find field 'amout' (did you mean 'amount'?); {COLUMNS}",
        ),
        (
            "/plan",
            {"table": "db.unpartitionned"},
            404,
            "Table does not exist: db.unpartitionned (did you mean db.unpartitioned?)",
        ),
        (
            "/plan",
            {"table": "dbb.unpartitioned"},
            404,
            "Table does not exist: dbb.unpartitioned (did you mean db.unpartitioned?)",
        ),
    ],
)
def test_errors_suggest_the_nearest_names(
    client: httpx.Client, path: str, body: dict[str, Any], status: int, message: str
) -> None:
    """An unknown column names the nearest of the table's and lists them (never its struct type); a value in
    the service's words; an unknown table the nearest the caller may list (no policy here: every table)."""
    response = client.post(path, json={"table": "db.unpartitioned", **body})
    assert response.status_code == status, response.text
    assert response.json()["error"]["message"] == message


def test_body_limit_and_unknown_route(client: httpx.Client) -> None:
    response = client.post("/plan", content=b"{" + b" " * (2 * 1024 * 1024) + b"}")
    assert response.status_code == 413 and "over the limit" in response.json()["error"]["message"]

    def chunked() -> Iterator[bytes]:  # no Content-Length: the limit applies while the body streams in
        yield b'{"table": "db.unpartitioned", "filter": "'
        yield from (b"x" * 65536 for _ in range(24))
        yield b'"}'

    response = client.post("/plan", content=chunked())
    assert "content-length" not in response.request.headers
    assert response.status_code == 413 and "over the limit" in response.json()["error"]["message"]
    assert client.get("/health").status_code == 200
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
    java_residuals = {f["path"]: f["residual"] for f in case["files"]}
    for f in explain["data-files"]:
        if f["kept"] and java_residuals[f["file-path"]] is True:  # the partition decides every row
            assert re.fullmatch(r"every row matches .+: partition \(.+\) decides it; rows are not checked", f["reason"])
        elif f["kept"]:  # what the rows are checked against: Java's residual, written as a filter string
            evidence, _, residual = f["reason"].rpartition("; each row is checked against ")
            assert evidence.startswith("may match ") and ": " in evidence, f["reason"]
            assert expression_to_json(parse_filter(residual)) == java_residuals[f["file-path"]]
        else:
            assert f["reason"].startswith(("partition (", "column statistics cannot match ", "record_count is 0"))
    assert all(m["reason"] for m in explain["manifests"])


def _reasons(client: httpx.Client, table: str, filter_: str) -> tuple[list[str], list[str]]:
    """The reasons of the manifests and of the data files of an explained plan."""
    explain = client.post("/plan", json={"table": table, "filter": filter_, "explain": True}).json()["explain"]
    return [m["reason"] for m in explain["manifests"]], [f["reason"] for f in explain["data-files"]]


def test_explain_names_the_deciding_statistics(client: httpx.Client) -> None:
    """Reasons in the filter's own syntax: identity_part is partitioned by category (a, b, c and null), its
    ids count up from 0."""
    _, reasons = _reasons(client, "db.identity_part", "category = 'a' AND id < 0")
    assert "partition (category = 'b') cannot match category = 'a'" in reasons
    assert "partition (category = null) cannot match category = 'a'" in reasons
    by_stats = [r for r in reasons if r.startswith("column statistics")]
    assert by_stats, reasons
    for reason in by_stats:
        assert re.fullmatch(r"column statistics cannot match id < 0: id: \d+\.\.\d+, \d+ values, 0 nulls", reason)


def test_explain_says_the_residual_and_the_partition_summaries(client: httpx.Client) -> None:
    """(The bounds and summaries of kept files and manifests, read from the manifests themselves:
    tests/planning/test_explain.py.)"""
    _, reasons = _reasons(client, "db.identity_part", "category = 'a' AND id < 5")
    kept = [r for r in reasons if r.startswith("may match ")]
    assert kept and all(  # the partition decides category = 'a'; the ids are left to check
        re.fullmatch(
            r"may match category = 'a' AND id < 5: partition \(category = 'a'\); id: \d+\.\.\d+, \d+ values, 0 nulls; "
            r"each row is checked against id < 5",
            reason,
        )
        for reason in kept
    ), kept
    manifests, _ = _reasons(client, "db.identity_part", "category > 'x'")
    assert manifests and set(manifests) == {
        "partition summaries (category: 'a'..'c', may hold nulls) cannot match category > 'x'"
    }
    _, reasons = _reasons(client, "db.identity_part", "category = 'a'")
    assert "every row matches category = 'a': partition (category = 'a') decides it; rows are not checked" in reasons


def test_explain_says_the_counts_that_decide_a_nan_test(client: httpx.Client) -> None:
    """nested_nan's first append writes f = 1.0 to one file, f = 2.5 and null to another: no NaN in either."""
    _, reasons = _reasons(client, "db.nested_nan", "f IS NAN")
    assert "column statistics cannot match f IS NAN: f: 1.0..1.0, 1 value, 0 nulls, 0 NaNs" in reasons
    assert "column statistics cannot match f IS NAN: f: 2.5..2.5, 2 values, 1 null, 0 NaNs" in reasons
    kept = [r for r in reasons if r.startswith("may match ")]
    assert kept and all(
        re.fullmatch(r"may match f IS NAN: f: .*, [1-9]\d* NaNs?; each row is checked against f IS NAN", r)
        for r in kept
    ), kept


def test_cross_site_requests_are_refused(client: httpx.Client) -> None:
    """A page on another site can make a browser POST a "simple" request (text/plain skips CORS preflight):
    it is refused before it is read. The service's own pages (/docs) and clients without Origin are not."""
    body = b'{"table": "db.unpartitioned"}'
    foreign = client.post(
        "/plan", content=body, headers={"Origin": "https://evil.example", "Content-Type": "text/plain"}
    )
    assert foreign.status_code == 403 and "Cross-site request" in foreign.json()["error"]["message"]
    assert client.post("/plan", content=body, headers={"Origin": "null"}).status_code == 403
    own = str(client.base_url).rstrip("/")
    assert client.post("/plan", content=body, headers={"Origin": own}).status_code == 200
    assert client.post("/plan", content=body).status_code == 200
    assert client.get("/health", headers={"Origin": "https://evil.example"}).status_code == 200
    assert "access-control-allow-origin" not in foreign.headers  # CORS is off unless configured

"""Iceberg REST scan planning through a real uvicorn on loopback: Java's planFiles() over HTTP (paged
through plan tasks), async plans, errors, and PyIceberg 0.12 planning through the service and reading the
same rows as it reads planning by itself."""

from __future__ import annotations

import contextlib
import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import TypeAdapter, ValidationError
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import AlwaysTrue, BooleanExpression, GreaterThan, LessThan
from pyiceberg.table import StaticTable, Table

from planner_service.service.rest_plans import Pages
from tests.conformance.cases import CASES, TABLES
from tests.conformance.reference import Conformance, our_refusal
from tests.conftest import running_service

PAGE_SIZE = 4  # conformance_service's plan_task_page_size
ASYNC_MIN_FILES = 10
PLAN_ROUTE = "/v1/namespaces/{namespace}/tables/{table}/plan"
TASKS_ROUTE = "/v1/namespaces/{namespace}/tables/{table}/tasks"


def table_url(name: str, namespace: str = "db") -> str:
    return f"/v1/namespaces/{namespace}/tables/{name}"


@pytest.fixture(scope="module")
def client(conformance_service: str) -> httpx.Client:
    return httpx.Client(base_url=conformance_service, timeout=30)


@pytest.fixture(scope="module")
def async_service(conformance: Conformance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Tables with more than ASYNC_MIN_FILES data files are planned in the background; pages of 3. Two
    extra tables: broken.t (its manifest list is missing: planning fails) and nosummary.t (no file counts in
    its summaries: the estimate reads the manifest list)."""
    with _service_with_extra_tables(conformance, tmp_path_factory, async_plan_min_files=ASYNC_MIN_FILES) as url:
        yield url


@pytest.fixture(scope="module")
def waited_service(conformance: Conformance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Every plan outlasts the request's wait (a microsecond): each is answered `submitted` whatever its size,
    and goes on in the background."""
    with _service_with_extra_tables(conformance, tmp_path_factory, rest_plan_wait_seconds=1e-6) as url:
        yield url


@contextlib.contextmanager
def _service_with_extra_tables(
    conformance: Conformance, tmp_path_factory: pytest.TempPathFactory, **settings: Any
) -> Iterator[str]:
    root = tmp_path_factory.mktemp("async")
    broken = _metadata(conformance, "unpartitioned")
    broken["snapshots"][-1]["manifest-list"] = str(root / "missing-manifest-list.avro")
    broken["snapshots"][-1]["summary"]["total-data-files"] = "1000"
    nosummary = _metadata(conformance, "many_manifests")
    for snapshot in nosummary["snapshots"]:
        snapshot["summary"].pop("total-data-files")
    tables = {}
    for name, meta in (("broken.t", broken), ("nosummary.t", nosummary)):
        path = root / f"{name}.metadata.json"
        path.write_text(json.dumps(meta))
        tables[name] = str(path)
    config = root / "service.json"
    config.write_text(
        json.dumps(
            {
                "allowed_roots": [str(conformance.dir / "warehouse"), str(root)],
                "tables": tables,
                "plan_task_page_size": 3,
                "plan_ttl_seconds": 60,
                **settings,
            }
        )
    )
    with running_service("--warehouse", str(conformance.dir / "warehouse"), "--config", str(config)) as url:
        yield url


@pytest.fixture(scope="module")
def async_client(async_service: str) -> httpx.Client:
    return httpx.Client(base_url=async_service, timeout=30)


def _metadata(conformance: Conformance, table: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(conformance.tables[table]["metadata_location"]).read_text())
    return copy.deepcopy(data)


# --- Reading REST plans ----------------------------------------------------------------------------------


def _tasks_of(page: dict[str, Any]) -> list[tuple[str, Any, list[str]]]:
    """(data file, residual, delete files) per task, checking the page's delete-file rules on the way."""
    deletes = page.get("delete-files", [])
    tasks = page.get("file-scan-tasks", [])
    assert not deletes or tasks, "delete files without tasks"
    used = {i for t in tasks for i in t.get("delete-file-references", [])}
    assert used == set(range(len(deletes))), "each delete file listed once, and only when used"
    return [
        (
            t["data-file"]["file-path"],
            t["residual-filter"],
            [deletes[i]["file-path"] for i in t.get("delete-file-references", [])],
        )
        for t in tasks
    ]


def _all_tasks(client: httpx.Client, table: str, completed: dict[str, Any]) -> list[tuple[str, Any, list[str]]]:
    assert completed["status"] == "completed", completed
    tasks = _tasks_of(completed)
    for token in completed["plan-tasks"]:
        page = client.post(f"{table}/tasks", json={"plan-task": token})
        assert page.status_code == 200, page.text
        assert "plan-tasks" not in page.json()
        tasks += _tasks_of(page.json())
    return tasks


def _java_tasks(case: dict[str, Any]) -> list[tuple[str, Any, list[str]]]:
    return [(f["path"], f["residual"], [d["path"] for d in f["deletes"]]) for f in case["files"]]


def _poll(client: httpx.Client, table: str, plan_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        body: dict[str, Any] = client.get(f"{table}/plan/{plan_id}").json()
        if body["status"] != "submitted":
            return body
        time.sleep(0.02)
    raise AssertionError(f"plan {plan_id} still submitted after 30 s")


def _requests(client: httpx.Client, method: str, route: str) -> int:
    """The service's count of successful requests to a route (its /metrics)."""
    prefix = f'scan_planner_requests_total{{method="{method}",route="{route}",status="200"}} '
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(prefix):
            return int(float(line[len(prefix) :]))
    return 0


def _error(response: httpx.Response, status: int, error_type: str) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert (error["code"], error["type"]) == (status, error_type)
    return str(error["message"])


# --- Java parity over HTTP -------------------------------------------------------------------------------


def _distinct_rest_cases() -> list[str]:
    """One case per REST-expressible scan (split options do not change planFiles())."""
    seen, ids = set(), []
    for c in CASES:
        incremental = c["snapshot"]["kind"] == "appends" and c["snapshot"]["end"] is not None  # REST: both ids
        if c["snapshot"]["kind"] not in ("current", "id") and not incremental:
            continue
        key = (
            c["table"],
            json.dumps(c["snapshot"]),
            json.dumps(c["filter"]),
            c["case_sensitive"],
            json.dumps(c.get("stats_fields")),
        )
        if key not in seen:
            seen.add(key)
            ids.append(c["id"])
    return ids


def _rest_request(case: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"case-sensitive": case["case_sensitive"]}
    if case["snapshot"]["kind"] == "id":
        body["snapshot-id"] = case["snapshot"]["value"]
    if case["snapshot"]["kind"] == "appends":
        body["start-snapshot-id"], body["end-snapshot-id"] = case["snapshot"]["start"], case["snapshot"]["end"]
    if case["filter"] is not None:
        body["filter"] = case["filter"]
    if case.get("stats_fields"):
        body["stats-fields"] = case["stats_fields"]
    return body


@pytest.mark.parametrize("case_id", _distinct_rest_cases())
def test_rest_plan_matches_java(conformance: Conformance, client: httpx.Client, case_id: str) -> None:
    case = conformance.case(case_id)
    table = table_url(case["table"])
    response = client.post(f"{table}/plan", json=_rest_request(case))
    if case["error"] is not None:
        assert response.status_code in (400, 404), response.text
        assert response.json()["error"]["message"].startswith(our_refusal(conformance, case))
        return
    assert response.status_code == 200, response.text
    body = response.json()
    assert len(body["file-scan-tasks"]) == min(PAGE_SIZE, len(case["files"]))
    assert len(body["plan-tasks"]) == max(0, -(-len(case["files"]) // PAGE_SIZE) - 1)
    assert _all_tasks(client, table, body) == _java_tasks(case)
    # column stats: only with stats-fields, and then exactly those Java's includeColumnStats keeps
    ours = [_stats(t["data-file"]) for t in body["file-scan-tasks"]]
    assert ours == [_java_stats(f["stats"]) for f in case["files"][:PAGE_SIZE]]


_STATS_KEYS = {
    "value-counts": "value_counts",
    "null-value-counts": "null_value_counts",
    "nan-value-counts": "nan_value_counts",
    "lower-bounds": "lower_bounds",
    "upper-bounds": "upper_bounds",
}


def _stats(data_file: dict[str, Any]) -> dict[str, Any]:
    return {
        name: dict(zip(data_file[key]["keys"], data_file[key]["values"], strict=True))
        for key, name in _STATS_KEYS.items()
        if key in data_file
    }


def _java_stats(stats: dict[str, Any]) -> dict[str, Any]:
    return {name: {int(k): v for k, v in m.items()} for name, m in stats.items() if m is not None}


def test_completed_plan_can_be_fetched_again_and_cancelled(client: httpx.Client) -> None:
    table = table_url("mor_position_deletes")
    planned = client.post(f"{table}/plan", json={}).json()
    assert len(planned["plan-tasks"]) == 3  # 15 files in pages of 4
    assert client.get(f"{table}/plan/{planned['plan-id']}").json() == planned
    prefixed = f"/v1/some-prefix/namespaces/db/tables/mor_position_deletes/plan/{planned['plan-id']}"
    assert client.get(prefixed).json() == planned
    assert client.delete(f"{table}/plan/{planned['plan-id']}").status_code == 204
    assert client.get(f"{table}/plan/{planned['plan-id']}").json() == {"status": "cancelled"}
    token = planned["plan-tasks"][0]
    _error(client.post(f"{table}/tasks", json={"plan-task": token}), 404, "NoSuchPlanTaskException")


def test_plan_of_an_empty_table(client: httpx.Client) -> None:
    body = client.post(f"{table_url('empty')}/plan", json={}).json()
    assert {k: v for k, v in body.items() if k != "plan-id"} == {
        "status": "completed",
        "delete-files": [],
        "file-scan-tasks": [],
        "plan-tasks": [],
    }


def test_optional_hints_and_unknown_fields_are_accepted(client: httpx.Client) -> None:
    body = {
        "select": ["id", "name"],
        "filter": {"type": "lt", "term": "id", "value": 30},
        "use-snapshot-schema": True,
        "stats-fields": ["id"],
        "min-rows-requested": 10,
        "some-future-hint": {"x": 1},
        # The spec's names are kebab-case; the Python spellings are unknown fields like any other, as in
        # Iceberg's parser (a fuzzer once sent start_snapshot_id alone and got "needs both ... ends").
        "start_snapshot_id": 1,
        "snapshot_id": "not a number",
        "case_sensitive": "yes",
    }
    response = client.post(f"{table_url('unpartitioned')}/plan", json=body)
    assert response.status_code == 200 and response.json()["status"] == "completed", response.text


# --- Errors ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "error_type", "message"),
    [
        (b"", 400, "BadRequestException", "Missing JSON body"),
        (b"{not json", 400, "BadRequestException", "Invalid JSON body"),
        (b'{"snapshot-id": "1"}', 400, "BadRequestException", "snapshot-id: Input should be a valid integer"),
        (b'{"case-sensitive": "yes"}', 400, "BadRequestException", "case-sensitive: Input should be a valid boolean"),
        (b'{"select": "id"}', 400, "BadRequestException", "select: Input should be a valid list"),
        (b'{"select": ["nope"]}', 400, "BadRequestException", "Cannot select unknown column 'nope'"),
        (b'{"filter": "id < 3"}', 400, "BadRequestException", "Cannot parse expression from non-object"),
        (b'{"filter": {"type": "lt", "term": "nope", "value": 1}}', 400, "ValidationException", "nope"),
        (b'{"snapshot-id": 1, "start-snapshot-id": 1, "end-snapshot-id": 2}', 400, "BadRequestException", "not both"),
        (b'{"start-snapshot-id": 1}', 400, "BadRequestException", "needs both start-snapshot-id and end-snapshot-id"),
        (b'{"start-snapshot-id": 1, "end-snapshot-id": 2}', 400, "BadRequestException", "Cannot find the end snapshot"),
        (b'{"snapshot-id": 123}', 404, "NoSuchSnapshotException", "Cannot find snapshot with ID 123"),
        (b'{"stats-fields": ["nope"]}', 400, "BadRequestException", "Cannot find field 'nope' for stats-fields"),
    ],
)
def test_plan_errors(client: httpx.Client, body: bytes, status: int, error_type: str, message: str) -> None:
    response = client.post(f"{table_url('unpartitioned')}/plan", content=body)
    assert message in _error(response, status, error_type)


def test_unknown_tables_plans_and_tasks(client: httpx.Client) -> None:
    _error(client.post(f"{table_url('nope')}/plan", json={}), 404, "NoSuchTableException")
    _error(client.post(f"{table_url('unpartitioned', 'nope')}/plan", json={}), 404, "NoSuchTableException")
    table = table_url("unpartitioned")
    _error(client.get(f"{table}/plan/no-such-plan"), 404, "NoSuchPlanIdException")
    _error(client.delete(f"{table}/plan/no-such-plan"), 404, "NoSuchPlanIdException")
    plan = client.post(f"{table}/plan", json={}).json()
    other = table_url("snapshots")
    _error(client.get(f"{other}/plan/{plan['plan-id']}"), 404, "NoSuchPlanIdException")  # another table's plan
    token = plan["plan-tasks"][0]
    _error(client.post(f"{other}/tasks", json={"plan-task": token}), 404, "NoSuchPlanTaskException")
    for bad in ("nope", f"{plan['plan-id']}:0", f"{plan['plan-id']}:2", f"{plan['plan-id']}:x"):
        _error(client.post(f"{table}/tasks", json={"plan-task": bad}), 404, "NoSuchPlanTaskException")
    _error(client.post(f"{table}/tasks", json={}), 400, "BadRequestException")
    _error(client.post(f"{table}/tasks", json={"plan-task": 1}), 400, "BadRequestException")


# --- Async planning --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "case_id"),
    [
        ("db.many_manifests", "many_manifests/current"),
        ("db.v3_dv", "v3_dv/current"),
        ("nosummary.t", "many_manifests/current"),
    ],
)
def test_async_plan(async_client: httpx.Client, conformance: Conformance, table: str, case_id: str) -> None:
    namespace, name = table.split(".")
    url = table_url(name, namespace)
    submitted = async_client.post(f"{url}/plan", json={}).json()
    assert submitted == {"status": "submitted", "plan-id": submitted["plan-id"]}
    completed = _poll(async_client, url, submitted["plan-id"])
    assert completed["plan-id"] == submitted["plan-id"]
    assert len(completed["file-scan-tasks"]) == 3
    assert _all_tasks(async_client, url, completed) == _java_tasks(conformance.case(case_id))


@pytest.mark.parametrize(
    ("table", "case_id"),
    [("db.unpartitioned", "unpartitioned/current"), ("db.v3_dv", "v3_dv/current"), ("broken.t", None)],
)
def test_plans_past_the_wait_go_on_in_the_background(
    waited_service: str, conformance: Conformance, table: str, case_id: str | None
) -> None:
    """A plan that takes longer than rest_plan_wait_seconds is answered `submitted`; polled, it completes with
    Java's tasks, or fails with its error (the broken table's missing manifest list)."""
    client = httpx.Client(base_url=waited_service, timeout=30)
    namespace, name = table.split(".")
    url = table_url(name, namespace)
    submitted = client.post(f"{url}/plan", json={}).json()
    assert submitted == {"status": "submitted", "plan-id": submitted["plan-id"]}
    done = _poll(client, url, submitted["plan-id"])
    if case_id is None:
        assert (done["status"], done["error"]["type"]) == ("failed", "StorageException")
        return
    assert done["status"] == "completed" and done["plan-id"] == submitted["plan-id"]
    assert _all_tasks(client, url, done) == _java_tasks(conformance.case(case_id))
    assert client.delete(f"{url}/plan/{submitted['plan-id']}").status_code == 204


def test_small_plans_stay_synchronous(async_client: httpx.Client) -> None:
    body = async_client.post(f"{table_url('unpartitioned')}/plan", json={}).json()
    assert body["status"] == "completed" and len(body["plan-tasks"]) == 1  # 6 files in pages of 3


def test_async_plan_failure(async_client: httpx.Client) -> None:
    url = table_url("t", "broken")
    submitted = async_client.post(f"{url}/plan", json={}).json()
    assert submitted["status"] == "submitted"
    failed = _poll(async_client, url, submitted["plan-id"])
    assert failed["status"] == "failed"
    assert (failed["error"]["type"], failed["error"]["code"]) == ("StorageException", 503)
    assert "missing-manifest-list.avro" in failed["error"]["message"]


def test_async_plan_cancel(async_client: httpx.Client) -> None:
    url = table_url("many_manifests")
    unplanned = {"filter": {"type": "gt", "term": "id", "value": -123_456}}  # (no other test plans it: not kept)
    submitted = async_client.post(f"{url}/plan", json=unplanned).json()
    assert submitted["status"] == "submitted", submitted
    plan_id = submitted["plan-id"]
    assert async_client.delete(f"{url}/plan/{plan_id}").status_code == 204
    time.sleep(0.3)  # planning may still finish; its result must be dropped
    assert async_client.get(f"{url}/plan/{plan_id}").json() == {"status": "cancelled"}
    assert async_client.get("/health").json()["status"] == "ok"


def test_pyiceberg_does_not_poll_submitted_plans(async_service: str) -> None:
    """PyIceberg 0.12 raises on `submitted` (polling arrived after 0.12, in apache/iceberg-python#3724)."""
    catalog = RestCatalog("scan-planner", uri=async_service, **{"scan-planning-mode": "server"})
    with pytest.raises(NotImplementedError, match="Async scan planning not yet supported"):  # (a scan not kept)
        unplanned = GreaterThan("id", -654_321)  # type: ignore[call-arg, arg-type]
        catalog.load_table("db.many_manifests").scan(row_filter=unplanned).plan_files()


def test_a_kept_plan_is_answered_completed_at_once(async_client: httpx.Client) -> None:
    """A plan the service holds (planned before, by anyone) is answered `completed` even where its size
    would have it submitted: the same request, the same plan."""
    url = table_url("many_manifests")
    request = {"filter": {"type": "gt", "term": "id", "value": -777}}
    submitted = async_client.post(f"{url}/plan", json=request).json()
    assert submitted["status"] == "submitted"
    polled = _poll(async_client, url, submitted["plan-id"])
    again = async_client.post(f"{url}/plan", json=request).json()
    assert again["status"] == "completed" and again["file-scan-tasks"] == polled["file-scan-tasks"]


# --- Pages ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pages", [1, 2, 3, 7, 12, 40])
@pytest.mark.parametrize("fanout", [0, 1, 2, 3, 5])
def test_nested_pages_reach_every_page_once(pages: int, fanout: int) -> None:
    """Fetching every listed plan task, and what each answer lists in turn (Java's ScanTaskIterable), reaches
    every page after the first exactly once, whatever the fanout; without one, the first lists them all."""
    result = Pages(tasks=pages * 2, page_size=2, fanout=fanout)
    assert result.count == pages
    reached: list[int] = []
    listed = list(result.children(0))
    while listed:
        number = listed.pop()
        reached.append(number)
        listed.extend(result.children(number))
        assert len(result.children(number)) <= (fanout or pages)
    assert sorted(reached) == list(range(1, pages))
    if fanout == 0:
        assert list(result.children(0)) == list(range(1, pages))


# --- PyIceberg 0.12 as the client ------------------------------------------------------------------------

_EXPRESSION = TypeAdapter(BooleanExpression)
EQUALITY_DELETES = "PyIceberg 0.12 does not read equality deletes (NotImplementedError)"
NULL_PARTITIONS = (
    "PyIceberg 0.12 rejects null partition values in REST content files (its `partition` is "
    "list[PrimitiveTypeValue], not nullable); Java and the spec write null"
)
AVRO = "PyIceberg 0.12 reads no Avro data files"
# tables PyIceberg 0.12 cannot load at all: its Snapshot model requires `manifest-list`
UNLOADABLE = frozenset({"v1_inline"})


@pytest.fixture(scope="module")
def catalog(conformance_service: str) -> RestCatalog:
    return RestCatalog("scan-planner", uri=conformance_service, **{"scan-planning-mode": "server"})


@pytest.fixture(scope="module")
def tables(catalog: RestCatalog) -> dict[str, Table]:
    names = {*TABLES, *(c["table"] for c in CASES)} - UNLOADABLE  # (a few cases plan the read tables)
    return {name: catalog.load_table(f"db.{name}") for name in sorted(names)}


def test_pyiceberg_cannot_load_v1_snapshots_that_list_their_manifests(catalog: RestCatalog) -> None:
    """Its limitation, not the service's (which plans these tables as Java does: the conformance cases)."""
    for name in UNLOADABLE:
        with pytest.raises(ValidationError, match="manifest-list"):
            catalog.load_table(f"db.{name}")


def _pyiceberg_filter(expr: Any) -> BooleanExpression:
    if expr is None:
        return AlwaysTrue()
    try:
        return _EXPRESSION.validate_python(expr)
    except (ValidationError, TypeError, ValueError):
        pytest.skip(f"PyIceberg 0.12 cannot express this filter (transform terms, wrapped literals): {expr}")


def _incompatibilities(client: httpx.Client, table: str, body: dict[str, Any]) -> set[str]:
    """What in the service's plan PyIceberg 0.12 cannot take, read from the plan itself."""
    pages = [client.post(f"{table_url(table)}/plan", json=body).json()]
    pages += [client.post(f"{table_url(table)}/tasks", json={"plan-task": t}).json() for t in pages[0]["plan-tasks"]]
    files = [t["data-file"] for p in pages for t in p["file-scan-tasks"]]
    files += [d for p in pages for d in p["delete-files"]]
    found = set()
    if any(f["content"] == "equality-deletes" for f in files):
        found.add(EQUALITY_DELETES)
    if any(v is None for f in files for v in f["partition"]):
        found.add(NULL_PARTITIONS)
    if any(f["file-format"] == "avro" for f in files):
        found.add(AVRO)
    return found


def _is_error_case(case_id: str) -> bool:
    return case_id.split("/")[1].startswith("error-")


def _planning_cases() -> list[str]:
    """The REST cases PyIceberg 0.12 can ask for (it has no incremental scans)."""
    return [
        c
        for c in _distinct_rest_cases()
        if not _is_error_case(c)
        and c.split("/")[0] not in UNLOADABLE
        and CASES_BY_ID[c]["snapshot"]["kind"] != "appends"
    ]


CASES_BY_ID = {c["id"]: c for c in CASES}


@pytest.mark.parametrize("case_id", _planning_cases())
def test_pyiceberg_plan_files_match_java(
    conformance: Conformance, client: httpx.Client, tables: dict[str, Table], case_id: str
) -> None:
    case = conformance.case(case_id)
    row_filter = _pyiceberg_filter(case["filter"])
    scan = tables[case["table"]].scan(row_filter=row_filter, case_sensitive=case["case_sensitive"])
    if case["snapshot"]["kind"] == "id":
        scan = scan.update(snapshot_id=case["snapshot"]["value"])
    blockers = _incompatibilities(client, case["table"], _rest_request(case)) - {AVRO}  # planning reads no data
    if blockers:
        with pytest.raises((NotImplementedError, ValidationError)):
            list(scan.plan_files())
        pytest.skip("; ".join(sorted(blockers)))
    planned = _requests(client, "POST", PLAN_ROUTE)
    tasks = list(scan.plan_files())
    assert _requests(client, "POST", PLAN_ROUTE) == planned + 1  # planned by the service, not by PyIceberg
    ours = [(t.file.file_path, sorted(d.file_path for d in t.delete_files)) for t in tasks]
    assert ours == [(path, sorted(deletes)) for path, _, deletes in _java_tasks(case)]


def _read_cases() -> list[tuple[str, str | None]]:
    """Each table unfiltered, and with up to three of its conformance filters."""
    out: list[tuple[str, str | None]] = []
    for table in (t for t in TABLES if t not in UNLOADABLE):
        out.append((table, None))
        filtered = [
            c["id"]
            for c in CASES
            if c["table"] == table
            and c["filter"] is not None
            and c["snapshot"]["kind"] == "current"
            and not _is_error_case(c["id"])
        ]
        out += [(table, case_id) for case_id in filtered[:3]]
    return out


@pytest.mark.parametrize(("table", "case_id"), _read_cases())
def test_pyiceberg_reads_the_same_rows(
    client: httpx.Client, tables: dict[str, Table], table: str, case_id: str | None
) -> None:
    case: dict[str, Any] = CASES_BY_ID[case_id] if case_id else {"filter": None, "case_sensitive": True}
    row_filter = _pyiceberg_filter(case["filter"])
    served = tables[table].scan(row_filter=row_filter, case_sensitive=case["case_sensitive"])
    blockers = _incompatibilities(client, table, {"filter": case["filter"], "case-sensitive": case["case_sensitive"]})
    if blockers:
        with pytest.raises((NotImplementedError, ValidationError, ValueError)):
            served.to_arrow()
        pytest.skip("; ".join(sorted(blockers)))
    direct = StaticTable.from_metadata(tables[table].metadata_location)
    expected = direct.scan(row_filter=row_filter, case_sensitive=case["case_sensitive"]).to_arrow()
    planned = _requests(client, "POST", PLAN_ROUTE)
    rows = served.to_arrow()
    assert _requests(client, "POST", PLAN_ROUTE) == planned + 1
    assert rows.schema == expected.schema
    assert sorted(map(repr, rows.to_pylist())) == sorted(map(repr, expected.to_pylist()))


def test_pyiceberg_pages_through_plan_tasks(client: httpx.Client, tables: dict[str, Table]) -> None:
    """A plan with more files than a page, read with a projection and a filter."""
    table = tables["unpartitioned"]
    fetched = _requests(client, "POST", TASKS_ROUTE)
    # PyIceberg's own LessThan(term, literal) __init__ is hidden from mypy by pydantic's synthesized one
    below_45 = LessThan("id", 45)  # type: ignore[call-arg, arg-type]
    rows = table.scan(row_filter=below_45, selected_fields=("name",)).to_arrow()
    assert _requests(client, "POST", TASKS_ROUTE) == fetched + 1  # 6 files: 4 inline, 2 in one plan task
    direct = StaticTable.from_metadata(table.metadata_location).scan(row_filter=below_45)
    assert sorted(rows.column("name").to_pylist()) == sorted(direct.to_arrow().column("name").to_pylist())


@pytest.mark.parametrize(
    ("case_id", "delete_format"), [("mor_position_deletes/category", "PARQUET"), ("v3_dv/category", "PUFFIN")]
)
def test_pyiceberg_applies_served_deletes(
    conformance: Conformance, tables: dict[str, Table], case_id: str, delete_format: str
) -> None:
    """Position delete files and deletion vectors reach PyIceberg through delete-file-references."""
    case = conformance.case(case_id)
    scan = tables[case["table"]].scan(row_filter=_pyiceberg_filter(case["filter"]))
    tasks = list(scan.plan_files())
    assert {d.file_format.value for t in tasks for d in t.delete_files} == {delete_format}
    rows = scan.to_arrow().num_rows
    assert rows < sum(t.file.record_count for t in tasks)  # some rows were deleted
    direct = StaticTable.from_metadata(tables[case["table"]].metadata_location)
    assert rows == direct.scan(row_filter=_pyiceberg_filter(case["filter"])).to_arrow().num_rows


def test_pyiceberg_time_travel(tables: dict[str, Table], conformance: Conformance) -> None:
    table = tables["snapshots"]
    first = conformance.case("snapshots/id-first")
    tasks = list(table.scan(snapshot_id=first["snapshot"]["value"]).plan_files())
    assert sorted(t.file.file_path for t in tasks) == sorted(f["path"] for f in first["files"])

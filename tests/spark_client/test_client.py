"""PlannerClient without a server (httpx.MockTransport: retries, backoff, error mapping) and with one (a real
uvicorn on loopback: plans, the service's errors, a 503 that passes on retry, nobody listening)."""

from __future__ import annotations

import json
import shutil
import traceback
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from planner_client import PlannerClient, PlannerServiceError, epoch_millis, plan_request
from tests.conftest import free_port, running_service
from tests.plan_wire import splits

PLAN = {"snapshot-id": 1, "schema": {"type": "struct", "fields": []}, "task-count": 0, "tasks": [], "files": []}
UNAVAILABLE = {"error": {"message": "Storage unreachable: s3://b/m.avro", "type": "ServiceUnavailable", "code": 503}}


def mock_client(
    handler: Callable[[httpx.Request], httpx.Response], retries: int = 3, backoff: float = 0.5
) -> tuple[PlannerClient, list[float]]:
    slept: list[float] = []
    client = PlannerClient(
        "http://planner.test",
        retries=retries,
        backoff=backoff,
        transport=httpx.MockTransport(handler),
        sleep=slept.append,
    )
    return client, slept


def test_plan_posts_the_body_as_json() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=PLAN)

    client, slept = mock_client(handler)
    with client:
        assert client.plan({"table": "db.t", "filter": "id < 3"}) == PLAN
    assert [(r.method, str(r.url)) for r in seen] == [("POST", "http://planner.test/plan")]
    assert json.loads(seen[0].content) == {"table": "db.t", "filter": "id < 3"}
    assert slept == []


def test_503_is_retried_with_exponential_backoff() -> None:
    statuses = iter([503, 503, 200])

    def handler(request: httpx.Request) -> httpx.Response:
        status = next(statuses)
        return httpx.Response(status, json=PLAN if status == 200 else UNAVAILABLE)

    client, slept = mock_client(handler, retries=3, backoff=0.25)
    assert client.plan({"table": "db.t"}) == PLAN
    assert slept == [0.25, 0.5]


def test_a_balancers_502_and_504_are_retried_but_not_the_services_own_502() -> None:
    """HAProxy answers 502 (HTML) for a replica that died mid-request, 504 for one that stopped answering:
    another replica will answer; the service's 502 (JSON: an upstream catalog refused it) stays an error."""
    answers = iter(
        [
            httpx.Response(502, html="<html><body><h1>502 Bad Gateway</h1></body></html>"),
            httpx.Response(504, html="<html><body><h1>504 Gateway Time-out</h1></body></html>"),
            httpx.Response(200, json=PLAN),
        ]
    )
    client, slept = mock_client(lambda request: next(answers), retries=3, backoff=0.25)
    assert client.plan({"table": "db.t"}) == PLAN
    assert slept == [0.25, 0.5]
    refused = {
        "error": {"message": "the catalog refused the service's token", "type": "BadGatewayException", "code": 502}
    }
    client, slept = mock_client(lambda request: httpx.Response(502, json=refused), retries=3)
    with pytest.raises(PlannerServiceError) as info:
        client.plan({"table": "db.t"})
    assert info.value.status == 502 and slept == []


def test_retries_are_bounded_and_the_last_error_is_raised() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(503, json=UNAVAILABLE)

    client, slept = mock_client(handler, retries=2, backoff=1.0)
    with pytest.raises(PlannerServiceError) as info:
        client.plan({"table": "db.t"})
    assert calls == 3 and slept == [1.0, 2.0]
    err = info.value
    assert (err.status, err.type) == (503, "ServiceUnavailable")
    assert err.message.startswith("Storage unreachable: s3://b/m.avro") and "after 3 attempts" in err.message
    assert "HTTP 503 ServiceUnavailable" in str(err) and "http://planner.test/plan" in str(err)


def test_retry_after_is_honoured_within_a_bound() -> None:
    responses = iter(
        [
            httpx.Response(503, headers={"Retry-After": "2"}, json=UNAVAILABLE),
            httpx.Response(503, headers={"Retry-After": "3600"}, json=UNAVAILABLE),
            httpx.Response(200, json=PLAN),
        ]
    )
    client, slept = mock_client(lambda request: next(responses))
    client.plan({"table": "db.t"})
    assert slept == [2.0, 30.0]


def test_connection_errors_are_retried() -> None:
    attempts = iter([httpx.ConnectError("refused"), httpx.RemoteProtocolError("closed"), None])

    def handler(request: httpx.Request) -> httpx.Response:
        error = next(attempts)
        if error is not None:
            raise error
        return httpx.Response(200, json=PLAN)

    client, slept = mock_client(handler, backoff=0.1)
    assert client.plan({"table": "db.t"}) == PLAN
    assert slept == [0.1, 0.2]


def test_read_timeouts_are_not_retried() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        raise httpx.ReadTimeout("slow", request=request)

    client, slept = mock_client(handler)
    with pytest.raises(PlannerServiceError) as info:
        client.plan({"table": "db.t"})
    assert calls == 1 and slept == [] and info.value.type == "Timeout" and info.value.status is None


@pytest.mark.parametrize(
    ("response", "status", "error_type", "message"),
    [
        (
            httpx.Response(
                404,
                json={"error": {"message": "Table does not exist: db.x", "type": "NoSuchTableException", "code": 404}},
            ),
            404,
            "NoSuchTableException",
            "Table does not exist: db.x",
        ),
        (
            httpx.Response(
                400, json={"error": {"message": "Invalid filter", "type": "BadRequestException", "code": 400}}
            ),
            400,
            "BadRequestException",
            "Invalid filter",
        ),
        (httpx.Response(500, text="<html>Server Error</html>"), 500, "HTTPError", "<html>Server Error</html>"),
        (httpx.Response(500, json={"detail": "?"}), 500, "HTTPError", '{"detail":"?"}'),
    ],
)
def test_other_errors_raise_at_once(response: httpx.Response, status: int, error_type: str, message: str) -> None:
    client, slept = mock_client(lambda request: response)
    with pytest.raises(PlannerServiceError) as info:
        client.plan({"table": "db.t"})
    assert (info.value.status, info.value.type, info.value.message) == (status, error_type, message)
    assert slept == []


def test_a_response_without_tasks_is_an_error() -> None:
    client, _ = mock_client(lambda request: httpx.Response(200, json={"tables": []}))
    with pytest.raises(PlannerServiceError, match="no task-count"):
        client.plan({"table": "db.t"})


def test_the_error_survives_pickling() -> None:
    import pickle

    err = pickle.loads(pickle.dumps(PlannerServiceError(404, "NoSuchTableException", "gone", "http://x/plan")))
    assert (err.status, err.type, err.message, err.url) == (404, "NoSuchTableException", "gone", "http://x/plan")


def test_plan_request_names_the_wire_fields() -> None:
    body = plan_request(
        "db.t",
        filter={"type": "lt", "term": "id", "value": 3},
        columns=("id", "name"),
        as_of=datetime(2024, 1, 1, 0, 0, 1, tzinfo=UTC),
        options={"split-size": 1024},
        case_sensitive=False,
    )
    assert body == {
        "table": "db.t",
        "as-of-timestamp-ms": 1704067201000,
        "select": ["id", "name"],
        "filter": {"type": "lt", "term": "id", "value": 3},
        "case-sensitive": False,
        "options": {"split-size": 1024},
    }
    assert plan_request("db.t", snapshot_id=7, filter="id < 3") == {
        "table": "db.t",
        "snapshot-id": 7,
        "filter": "id < 3",
    }
    assert plan_request("db.t", ref="first-load") == {"table": "db.t", "ref": "first-load"}
    with pytest.raises(ValueError, match="at most one snapshot"):
        plan_request("db.t", snapshot_id=1, ref="main")
    with pytest.raises(TypeError):
        plan_request("db.t", columns="id")


def test_epoch_millis() -> None:
    assert epoch_millis(1700000000123) == 1700000000123
    assert epoch_millis(datetime(1970, 1, 1, 0, 0, 0, 1500)) == 1  # naive: UTC
    assert epoch_millis(datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)) == -1
    with pytest.raises(TypeError):
        epoch_millis("2024-01-01")  # type: ignore[arg-type]


# --- against the real service ------------------------------------------------------------------------------


def test_plans_the_demo_table(demo_service: str) -> None:
    with PlannerClient(demo_service) as client:
        full = client.plan(plan_request("demo.events"))
        some = client.plan(plan_request("demo.events", filter="region = 'eu' AND id < 100", columns=["id"]))
    files = len({f["data-file"]["file-path"] for f in splits(full)})
    assert full["tasks"] and files == full["metrics"]["scanned-data-files"] == len(full["files"])
    assert some["metrics"]["scanned-data-files"] < files
    assert [f["name"] for f in some["schema"]["fields"]] == ["id", "region"]  # select plus the filter's columns


def test_the_service_errors_arrive_as_they_were_sent(demo_service: str) -> None:
    with PlannerClient(demo_service, retries=0) as client:
        with pytest.raises(PlannerServiceError) as missing:
            client.plan({"table": "demo.nope"})
        with pytest.raises(PlannerServiceError) as bad_filter:
            client.plan({"table": "demo.events", "filter": "id <"})
    assert missing.value.status == 404 and "demo.nope" in missing.value.message
    assert bad_filter.value.status == 400 and bad_filter.value.type == "BadRequestException"
    assert "Invalid filter" in bad_filter.value.message


def test_nobody_listening_is_a_connection_error_after_the_retries() -> None:
    """It says where, why and what to check, and its traceback is the client's alone (httpx's and httpcore's
    chained errors add nothing to it)."""
    slept: list[float] = []
    url = f"http://127.0.0.1:{free_port()}"
    client = PlannerClient(url, retries=2, backoff=0.01, sleep=slept.append)
    with client, pytest.raises(PlannerServiceError) as info:
        client.plan({"table": "db.t"})
    assert info.value.status is None and info.value.type == "ConnectionError" and slept == [0.01, 0.02]
    assert info.value.message == (
        f"cannot reach the scan-planner service at {url} (connection refused after 3 attempts): "
        "is `scan-planner serve` running there?"
    )
    assert info.value.url == f"{url}/plan"
    assert info.value.__cause__ is None and info.value.__suppress_context__
    shown = "".join(traceback.format_exception(info.value))
    assert "/httpx/" not in shown and "/httpcore/" not in shown and shown.count("\n") < 15, shown


@pytest.mark.parametrize(
    ("service_url", "message"),
    [
        ("localhost:8181", "service_url 'localhost:8181' has no scheme: write http://localhost:8181"),
        ("127.0.0.1:9999", "service_url '127.0.0.1:9999' has no scheme: write http://127.0.0.1:9999"),
        ("ftp://planner:21", "service_url 'ftp://planner:21' is not http:// or https://: write http://planner:21"),
        ("http://", "service_url 'http://' has no host: write http://HOST:PORT"),
    ],
)
def test_a_service_url_it_cannot_reach_by_http_is_refused_before_any_request(service_url: str, message: str) -> None:
    """Not httpx's UnsupportedProtocol at the first request: the client's own error, when it is made."""
    asked: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        return httpx.Response(200, json=PLAN)

    with pytest.raises(PlannerServiceError) as info:
        PlannerClient(service_url, transport=httpx.MockTransport(handler))
    assert info.value.status is None and info.value.type == "InvalidServiceUrl"
    assert info.value.message == message and asked == []


@pytest.fixture(scope="module")
def table_with_a_missing_manifest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The demo table in a SQL catalog, one of its manifests moved aside (the service answers 503)."""
    from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

    from planner_service.demo import DEMO_TABLE, write_demo_table

    root = tmp_path_factory.mktemp("flaky")
    catalog = PyIcebergSqlCatalog("flaky", uri=f"sqlite:///{root / 'catalog.db'}", warehouse=f"file://{root}")
    write_demo_table(catalog)
    table = catalog.load_table(DEMO_TABLE)
    snapshot = table.current_snapshot()
    assert snapshot is not None
    manifest = Path(
        next(m for m in snapshot.manifests(table.io) if m.added_files_count or m.existing_files_count).manifest_path[7:]
    )
    shutil.move(manifest, manifest.with_suffix(".aside"))
    with running_service("--catalog-uri", str(root / "catalog.db"), "--catalog-name", "flaky") as url:
        yield url, manifest
    shutil.rmtree(root, ignore_errors=True)


def test_a_503_that_passes_is_retried_through(table_with_a_missing_manifest: tuple[str, Path]) -> None:
    url, manifest = table_with_a_missing_manifest
    with PlannerClient(url, retries=0) as client, pytest.raises(PlannerServiceError) as info:
        client.plan({"table": "demo.events"})
    assert info.value.status == 503 and str(manifest) in info.value.message

    def put_it_back(seconds: float) -> None:  # storage comes back while the client waits
        shutil.move(manifest.with_suffix(".aside"), manifest)

    with PlannerClient(url, retries=1, backoff=0.01, sleep=put_it_back) as client:
        assert client.plan({"table": "demo.events"})["tasks"]

"""Credentials never appear in logs, explain output or error messages (issue 11, item 3): real services on
loopback at debug log level, with keys of their own (a session token among them), on moto's S3 and STS:

- the upstream: a static vendor behind OAuth2 client credentials (a credentialed REST catalog);
- an STS vendor;
- a downstream service whose tables come from the upstream, with its client secret;
- failures: a store that denies every read (moto with IAM authentication on), and STS that refuses the
  service's keys.

Every response body, with its deliberate fields taken out (`storage-credentials`, LoadTable's `config`, the
token endpoint's `access_token`), and every service's log must hold none of the secrets: the services'
own secret key and session token, the vended secret keys and session tokens (static and from STS, collected
from the deliberate fields), the OAuth2 client secret and the bearer token. So must Spark's explain output of
plan_and_read and of the data source."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from planner_service.errors import BadRequestError
from planner_service.settings import load_settings
from spark_client import ScanPlannerDataSource, plan_and_read
from tests.conftest import moto_server, running_service
from tests.spark_client.vended import (
    READER_SECRET,
    SECRET,
    TABLE,
    static_vending,
    sts_vending,
    vending_service,
)

SESSION_TOKEN = "service-session-token-SVC"  # the services' own keys are temporary ones
STATIC_SESSION_TOKEN = "static-session-token-XYZ"  # handed out by the static vendor with its keys
CLIENT, CLIENT_SECRET = "downstream", "oauth-client-secret-XYZ"  # the downstream's at the upstream
DEBUG = {"log_level": "debug", "s3_session_token": SESSION_TOKEN}
EXPLAIN_MODES = ("simple", "extended", "codegen", "cost", "formatted")
DELIBERATE = ("storage-credentials", "config", "access_token")  # the fields that exist to carry credentials


@dataclass
class Exchanges:
    """Every answer the services gave (without the deliberate fields) and the secrets seen in play."""

    secrets: set[str] = field(
        default_factory=lambda: {SECRET, SESSION_TOKEN, READER_SECRET, STATIC_SESSION_TOKEN, CLIENT_SECRET}
    )
    bodies: list[str] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def record(self, response: httpx.Response) -> httpx.Response:
        body = response.json() if response.content else {}
        if isinstance(body, dict):
            for name in DELIBERATE:
                self.secrets |= _secrets_in(body.pop(name, None))
        self.bodies.append(f"{response.request.method} {response.request.url} {response.status_code}: {body}")
        return response

    def assert_nothing_leaked(self, *more: str) -> None:
        texts = [*self.bodies, *more, *(f"log {path.name}: {path.read_text()}" for path in self.logs)]
        leaks = [_around(text, secret) for text in texts for secret in self.secrets if secret in text]
        assert not leaks, "\n".join(leaks[:10])


def _around(text: str, secret: str) -> str:
    """Where a secret was found: the line around it, the secret itself masked."""
    at = text.index(secret)
    start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
    line = text[start : end if end >= 0 else len(text)]
    return f"{secret[:4]}... in: {line.replace(secret, '<SECRET>')[:600]}"


def _secrets_in(value: Any) -> set[str]:
    """The secret values in a deliberate field: those under keys naming a secret or a token."""
    if isinstance(value, list):
        return set().union(*(_secrets_in(v) for v in value)) if value else set()
    if isinstance(value, dict):
        found = {str(v) for k, v in value.items() if _is_secret(str(k)) and isinstance(v, str)}
        return found.union(*(_secrets_in(v) for v in value.values() if isinstance(v, (dict, list))))
    if isinstance(value, str):
        return {value}  # the token endpoint's access_token
    return set()


def _is_secret(key: str) -> bool:
    return ("secret" in key or "token" in key) and not key.endswith("expires-at-ms")


@pytest.fixture(scope="module")
def denying_store() -> Iterator[str]:
    """A moto server with IAM authentication on and no users: it refuses every S3 read and STS call."""
    with moto_server({"INITIAL_NO_AUTH_ACTION_COUNT": "0"}) as url:
        yield url


@pytest.fixture(scope="module")
def exchanges() -> Exchanges:
    return Exchanges()


@contextlib.contextmanager
def _service(
    exchanges: Exchanges, directory: Path, catalog: str, endpoint: str, **settings: Any
) -> Iterator[httpx.Client]:
    directory.mkdir(exist_ok=True)
    log = directory / "service.log"
    exchanges.logs.append(log)
    with (
        vending_service(directory, catalog, endpoint, log_path=log, **DEBUG, **settings) as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def upstream(
    exchanges: Exchanges, vended_catalog: str, s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    """The static vendor behind OAuth2 client credentials (REST plans of 4 tasks a page); the client carries a
    bearer token from its token endpoint."""
    vending = static_vending(**{"s3.session-token": STATIC_SESSION_TOKEN})
    settings = {**vending, "oauth_clients": {CLIENT: CLIENT_SECRET}, "plan_task_page_size": 4}
    with _service(exchanges, tmp_path_factory.mktemp("upstream"), vended_catalog, s3_endpoint, **settings) as client:
        form = {"grant_type": "client_credentials", "client_id": CLIENT, "client_secret": CLIENT_SECRET}
        token = exchanges.record(client.post("/v1/oauth/tokens", data=form)).json()["access_token"]
        client.headers["Authorization"] = f"Bearer {token}"
        yield client


@pytest.fixture(scope="module")
def sts(
    exchanges: Exchanges, vended_catalog: str, s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    with _service(
        exchanges, tmp_path_factory.mktemp("sts"), vended_catalog, s3_endpoint, **sts_vending(s3_endpoint)
    ) as client:
        known = set(exchanges.secrets)
        exchanges.record(client.post("/plan", json={"table": TABLE}))
        assert len(exchanges.secrets - known) == 2  # STS's secret key and session token, looked for from now on
        yield client


def _plans(exchanges: Exchanges, client: httpx.Client) -> None:
    """What a client asks: native plans (inline, by id, explained, refused), REST config, LoadTable with and
    without delegation, REST plans and a page of their tasks."""
    record = exchanges.record
    assert record(client.post("/plan", json={"table": TABLE})).status_code == 200
    explained = record(client.post("/plan", json={"table": TABLE, "filter": "id < 10", "explain": True}))
    assert explained.status_code == 200 and explained.json()["explain"]
    by_id = record(client.post("/plan", json={"table": TABLE, "inline-task-limit": 0})).json()
    assert record(client.get(f"/plans/{by_id['plan-id']}")).status_code == 200
    assert record(client.get(f"/plans/{by_id['plan-id']}/tasks/0")).status_code == 200
    assert record(client.post("/plan", json={"table": TABLE, "filter": "nope = 1"})).status_code == 400
    assert record(client.post("/plan", json={"table": "demo.nope"})).status_code == 404
    assert record(client.get("/v1/config")).status_code == 200
    table = "/v1/namespaces/demo/tables/events"
    delegated = record(client.get(table, headers={"X-Iceberg-Access-Delegation": "vended-credentials"}))
    assert delegated.status_code == 200
    assert record(client.get(table)).status_code == 200
    planned = record(client.post(f"{table}/plan", json={"filter": {"type": "lt", "term": "id", "value": 100}})).json()
    assert planned["status"] == "completed", planned
    for page in planned.get("plan-tasks", [])[:1]:
        assert record(client.post(f"{table}/tasks", json={"plan-task": page})).status_code == 200


def test_plans_and_tables_carry_credentials_only_where_meant(
    exchanges: Exchanges, upstream: httpx.Client, sts: httpx.Client
) -> None:
    _plans(exchanges, upstream)
    _plans(exchanges, sts)
    exchanges.assert_nothing_leaked()


def test_a_service_behind_the_credentialed_catalog(
    exchanges: Exchanges, upstream: httpx.Client, vended_catalog: str, tmp_path: Path
) -> None:
    """The downstream reads with what the upstream vends (its client secret and token, the vended keys)."""
    config = tmp_path / "downstream.json"
    config.write_text(json.dumps({"rest_catalog_credential": f"{CLIENT}:{CLIENT_SECRET}", **DEBUG}))
    log = tmp_path / "downstream.log"
    exchanges.logs.append(log)
    catalog = str(upstream.base_url)
    with (
        running_service("--rest-catalog-uri", catalog, "--config", str(config), log_path=log) as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        _plans(exchanges, client)
    exchanges.assert_nothing_leaked()


def test_failures_name_no_credential(
    exchanges: Exchanges, vended_catalog: str, s3_endpoint: str, denying_store: str, tmp_path: Path
) -> None:
    """A store that denies the service's keys, and STS refusing them: 503s that say so, and nothing more."""
    denied_at = "s3://denied/t/metadata/v1.metadata.json"
    with _service(exchanges, tmp_path / "denied", vended_catalog, denying_store, tables={"db.t": denied_at}) as denied:
        refused = exchanges.record(denied.post("/plan", json={"table": "db.t"}))
        assert refused.status_code == 503 and "denied access (403)" in refused.text, refused.text
    sts_fails = sts_vending(denying_store)
    with _service(exchanges, tmp_path / "sts-fails", vended_catalog, s3_endpoint, **sts_fails) as failing:
        for path in ("/plan", "/v1/namespaces/demo/tables/events/plan"):
            body = {"table": TABLE} if path == "/plan" else {}
            failed = exchanges.record(failing.post(path, json=body))
            assert failed.status_code == 503 and "STS AssumeRole" in failed.text, failed.text
    exchanges.assert_nothing_leaked()


def test_invalid_settings_do_not_echo_a_secret() -> None:
    """A setting of the wrong shape is named, its value is not (it may be a key)."""
    with pytest.raises(BadRequestError) as refused:
        load_settings(
            None, s3_session_token=[SESSION_TOKEN], vended_storage_properties={"s3.secret-access-key": [SECRET]}
        )
    assert "s3_session_token" in str(refused.value) and "vended_storage_properties" in str(refused.value)
    assert SESSION_TOKEN not in str(refused.value) and SECRET not in str(refused.value)


def _explained(df: Any) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for mode in EXPLAIN_MODES:
            df.explain(mode=mode)
    return out.getvalue()


def test_spark_explains_no_credential(
    exchanges: Exchanges, spark: Any, upstream: httpx.Client, sts: httpx.Client
) -> None:
    """Spark's explain output of plan_and_read (inline and by id; static and STS keys) and of the data source,
    reading the credentialed upstream with its token and what it vends."""
    url, token = str(upstream.base_url), upstream.headers["Authorization"].removeprefix("Bearer ")
    texts = []
    for service, limit in ((url, None), (url, 0), (str(sts.base_url), None)):
        df = plan_and_read(spark, TABLE, service_url=service, token=token, columns=["id"], inline_task_limit=limit)
        assert df.count() > 0
        texts.append(_explained(df))
    spark.dataSource.register(ScanPlannerDataSource)
    source = spark.read.format("scan-planner").option("service-url", url).option("token", token).load(TABLE)
    assert source.filter("id < 10").count() > 0
    texts.append(_explained(source.filter("id < 10")))
    assert all("== Physical Plan ==" in text for text in texts)
    exchanges.assert_nothing_leaked(*texts)

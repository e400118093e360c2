"""Authentication on a real service: static bearer tokens, the Iceberg REST OAuth2 client-credentials flow
(RFC 6749 answers; PyIceberg's REST client with `credential=`), token exchange, expiry and forgery."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import OAuthError, UnauthorizedError

from tests.conformance.reference import Conformance
from tests.conftest import free_port, running_service

KEY = "test-signing-key"
TABLE = "db.unpartitioned"


@pytest.fixture(scope="module")
def service(conformance: Conformance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = tmp_path_factory.mktemp("auth") / "service.json"
    config.write_text(
        json.dumps(
            {
                "warehouse": str(conformance.dir / "warehouse"),
                "auth_tokens": ["static-one", "static-two"],
                "oauth_clients": {"spark": "s3cret"},
                "token_signing_key": KEY,
                "token_ttl_seconds": 600,
            }
        )
    )
    with running_service("--config", str(config), "--log-level", "warning") as url:
        yield url


def _token(url: str, **form: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/oauth/tokens", data=form, timeout=30)


def _signed(claims: dict[str, object], key: str = KEY) -> str:
    """A token in the documented form: base64url(JSON claims) "." base64url(HMAC-SHA256(key, that text))."""
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=")
    signature = base64.urlsafe_b64encode(hmac.new(key.encode(), payload, hashlib.sha256).digest()).rstrip(b"=")
    return f"{payload.decode()}.{signature.decode()}"


def test_every_route_but_health_needs_a_token(service: str) -> None:
    with httpx.Client(base_url=service, timeout=30) as client:
        assert client.get("/health").status_code == 200
        for method, path in (
            ("POST", "/plan"),
            ("GET", "/metrics"),
            ("GET", "/openapi.json"),
            ("GET", "/docs"),
            ("GET", "/v1/config"),
            ("GET", "/v1/namespaces"),
            ("GET", "/plans/x/tasks/0"),
            ("POST", "/v1/namespaces/db/tables/unpartitioned/plan"),
            ("GET", "/nowhere"),
        ):
            response = client.request(method, path, json={"table": TABLE} if method == "POST" else None)
            assert response.status_code == 401, f"{method} {path}: {response.status_code}"
            assert response.headers["www-authenticate"].startswith("Bearer")
            error = response.json()["error"]
            assert error["type"] == "NotAuthorizedException" and "/v1/oauth/tokens" in error["message"]
        for token in ("static-one", "static-two"):
            planned = client.post("/plan", json={"table": TABLE}, headers={"Authorization": f"Bearer {token}"})
            assert planned.status_code == 200, planned.text[:200]


def test_forged_expired_and_malformed_tokens_are_refused(service: str) -> None:
    now = int(time.time())
    refused = [
        "static-three",
        _signed({"sub": "spark", "exp": now + 600}, key="another-key"),
        _signed({"sub": "spark", "exp": now - 1}),
        _signed({"sub": "spark"}),
        _signed({"sub": 7, "exp": now + 600}),
        _signed({"sub": "spark", "exp": now + 600}) + "x",
        "a.b.c",
        ".",
        "%%%",
        "x" * 5000,
    ]
    with httpx.Client(base_url=service, timeout=30) as client:
        for token in refused:
            response = client.post("/plan", json={"table": TABLE}, headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 401, token
        for header in ("Basic c3Bhcms6czNjcmV0", "Bearer", "static-one"):
            assert client.post("/plan", json={"table": TABLE}, headers={"Authorization": header}).status_code == 401
        valid = _signed({"sub": "spark", "exp": now + 600})  # what the service itself would sign
        assert client.post("/plan", json={"table": TABLE}, headers={"Authorization": f"Bearer {valid}"}).is_success


def test_client_credentials_and_token_exchange(service: str) -> None:
    credentials = {"client_id": "spark", "client_secret": "s3cret", "scope": "catalog"}
    issued = _token(service, grant_type="client_credentials", **credentials)
    assert issued.status_code == 200, issued.text
    body = issued.json()
    assert body["token_type"] == "bearer" and body["expires_in"] == 600
    assert body["issued_token_type"] == "urn:ietf:params:oauth:token-type:access_token"
    assert issued.headers["cache-control"] == "no-store"
    basic = httpx.post(
        f"{service}/v1/oauth/tokens", data={"grant_type": "client_credentials"}, auth=("spark", "s3cret"), timeout=30
    )
    assert basic.status_code == 200, basic.text
    exchanged = _token(
        service,
        grant_type="urn:ietf:params:oauth:grant-type:token-exchange",
        subject_token=body["access_token"],
        subject_token_type="urn:ietf:params:oauth:token-type:access_token",
    )
    assert exchanged.status_code == 200, exchanged.text
    for token in (body["access_token"], basic.json()["access_token"], exchanged.json()["access_token"]):
        headers = {"Authorization": f"Bearer {token}"}
        assert httpx.post(f"{service}/plan", json={"table": TABLE}, headers=headers, timeout=30).status_code == 200

    wrong = _token(service, grant_type="client_credentials", client_id="spark", client_secret="nope")
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    unknown = _token(service, grant_type="client_credentials", client_id="who", client_secret="s3cret")
    assert unknown.status_code == 401 and unknown.json()["error"] == "invalid_client"
    assert _token(service, grant_type="password", username="a").json()["error"] == "unsupported_grant_type"
    assert _token(service, grant_type="client_credentials").json()["error"] == "invalid_request"
    bad_exchange = _token(service, grant_type="urn:ietf:params:oauth:grant-type:token-exchange", subject_token="x")
    assert bad_exchange.status_code == 400 and bad_exchange.json()["error"] == "invalid_grant"


def test_pyiceberg_with_credential_plans_on_the_server(service: str) -> None:
    endpoint = {"oauth2-server-uri": f"{service}/v1/oauth/tokens", "scan-planning-mode": "server"}
    catalog = RestCatalog("scan-planner", uri=service, credential="spark:s3cret", **endpoint)
    table = catalog.load_table(TABLE)
    served = sorted(task.file.file_path for task in table.scan().plan_files())
    assert served and all(path.endswith(".parquet") for path in served)
    with_token = RestCatalog("scan-planner", uri=service, token="static-one", **{"scan-planning-mode": "server"})
    assert sorted(t.file.file_path for t in with_token.load_table(TABLE).scan().plan_files()) == served
    with pytest.raises(OAuthError):
        RestCatalog("scan-planner", uri=service, credential="spark:wrong")
    with pytest.raises(UnauthorizedError):
        RestCatalog("scan-planner", uri=service)


def test_a_service_without_auth_serves_only_loopback_unless_told(tmp_path: Path) -> None:
    cli = Path(sys.executable).with_name("scan-planner")
    args = [str(cli), "serve", "--host", "0.0.0.0", "--port", str(free_port()), "--warehouse", str(tmp_path)]
    refused = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "without authentication" in refused.stderr, refused.stderr[-500:]


def test_tokens_issued_without_auth_are_refused(conformance_service: str) -> None:
    answer = _token(conformance_service, grant_type="client_credentials", client_id="a", client_secret="b")
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_request"

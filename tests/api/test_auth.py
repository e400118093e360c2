"""Authentication on a real service: static bearer tokens, the Iceberg REST OAuth2 client-credentials flow
(RFC 6749 answers; PyIceberg's REST client with `credential=`), token exchange, expiry and forgery; tokens
that end when their credential is removed, exchanges that cannot extend a token's life, static tokens that are
principals by name."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
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


def test_every_route_but_health_and_the_pages_needs_a_token(service: str) -> None:
    """The pages hold no table's data (/, the API's documentation and its document, the explorer's page)."""
    with httpx.Client(base_url=service, timeout=30) as client:
        for path in ("/health", "/", "/openapi.json", "/docs", "/redoc", "/ui"):
            assert client.get(path).status_code == 200, path
        for method, path in (
            ("POST", "/plan"),
            ("GET", "/metrics"),
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
            assert error["type"] == "NotAuthorizedException"
            # both ways this service takes tokens, and only those: its static tokens and its OAuth clients
            assert "static tokens (auth_tokens" in error["message"] and "/v1/oauth/tokens" in error["message"]
            assert "OpenID" not in error["message"]
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
        # the documented form, signed with the service's own key but without the credential's fingerprint
        unbound = _signed({"sub": "spark", "knd": "client", "fp": "x", "iat": now, "exp": now + 600})
        response = client.post("/plan", json={"table": TABLE}, headers={"Authorization": f"Bearer {unbound}"})
        assert response.status_code == 401


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


def _claims(token: str) -> dict[str, object]:
    payload = token.split(".")[0]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def test_an_exchange_cannot_extend_a_token(service: str) -> None:
    """The review's hole: an exchange re-issued a full-lifetime token for any valid token, so a token renewed
    itself forever. Now each exchanged token ends when the one exchanged does."""
    first = _token(service, grant_type="client_credentials", client_id="spark", client_secret="s3cret").json()
    token = first["access_token"]
    ends = _claims(token)["exp"]
    time.sleep(1.1)  # (so that a new full lifetime would end later)
    for _ in range(3):
        exchanged = _token(service, grant_type=EXCHANGE, subject_token=token, subject_token_type=TOKEN_TYPE)
        assert exchanged.status_code == 200, exchanged.text
        token = exchanged.json()["access_token"]
        assert _claims(token)["exp"] == ends and exchanged.json()["expires_in"] <= first["expires_in"]


def test_tokens_end_when_their_credential_is_removed(conformance: Conformance, tmp_path: Path) -> None:
    """The review's hole: after the OAuth client was removed, its token still planned and exchanged; a static
    token exchanged for a signed one outlived its removal; principals were list positions, so a new token in
    position N was the old one's principal. Now every request checks the credential behind a token."""
    config = tmp_path / "service.json"
    settings = {
        "warehouse": str(conformance.dir / "warehouse"),
        "auth_tokens": ["old-static"],
        "oauth_clients": {"spark": "s3cret", "etl": "etl-secret"},
        "token_signing_key": KEY,
        "access_reload_seconds": 0.2,
    }
    config.write_text(json.dumps(settings))
    with running_service("--config", str(config), "--log-level", "warning") as url:
        client_token = _token(url, grant_type="client_credentials", client_id="spark", client_secret="s3cret").json()
        etl_token = _token(url, grant_type="client_credentials", client_id="etl", client_secret="etl-secret").json()
        static_signed = _token(url, grant_type=EXCHANGE, subject_token="old-static", subject_token_type=TOKEN_TYPE)
        assert static_signed.status_code == 200
        native = httpx.post(
            f"{url}/plan", json={"table": TABLE, "inline-task-limit": 0}, headers=_bearer("old-static"), timeout=60
        )
        old_plan_id = native.json()["plan-id"]
        tokens = {
            "client": client_token["access_token"],
            "static-exchanged": static_signed.json()["access_token"],
            "static": "old-static",
        }
        for token in [*tokens.values(), etl_token["access_token"]]:
            assert _plans(url, token) == 200
        # spark removed, etl's secret changed, the static token replaced by another in the same position
        config.write_text(
            json.dumps({**settings, "auth_tokens": ["new-static"], "oauth_clients": {"etl": "rotated-secret"}})
        )
        _wait_for(lambda: _plans(url, "new-static") == 200)
        for name, token in tokens.items():
            assert _plans(url, token) == 401, name
            exchanged = _token(url, grant_type=EXCHANGE, subject_token=token, subject_token_type=TOKEN_TYPE)
            assert exchanged.status_code == 400, name
        assert _plans(url, etl_token["access_token"]) == 401  # a changed secret ends the tokens issued for it
        # the new static token is not the old one's principal: the old one's plan id is unknown to it
        stolen = httpx.get(f"{url}/plans/{old_plan_id}", headers=_bearer("new-static"), timeout=60)
        assert stolen.status_code == 404 and stolen.json()["error"]["type"] == "NoSuchPlanIdException"


def test_static_tokens_are_principals_by_name(conformance: Conformance, tmp_path: Path) -> None:
    config = tmp_path / "service.json"
    config.write_text(
        json.dumps({"warehouse": str(conformance.dir / "warehouse"), "auth_tokens": {"alice": "a-tok", "bob": "b-tok"}})
    )
    with running_service("--config", str(config), "--log-level", "warning") as url:
        alice = httpx.post(f"{url}/plan", json={"table": TABLE, "inline-task-limit": 0}, headers=_bearer("a-tok"))
        plan_id = alice.json()["plan-id"]
        assert httpx.get(f"{url}/plans/{plan_id}", headers=_bearer("a-tok"), timeout=60).status_code == 200
        assert httpx.get(f"{url}/plans/{plan_id}", headers=_bearer("b-tok"), timeout=60).status_code == 404


EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _plans(url: str, token: str) -> int:
    return httpx.post(f"{url}/plan", json={"table": TABLE}, headers=_bearer(token), timeout=60).status_code


def _wait_for(condition: Callable[[], bool], seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the settings file was not reloaded"
        time.sleep(0.1)

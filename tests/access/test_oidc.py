"""Principals from an external OpenID Connect provider: panva's oidc-provider on loopback (tests/
oidc_provider.py) issues client-credentials JWT access tokens with a groups claim; the service verifies them
against the provider's JWKS (discovered, kept, fetched again on a new key) and grants by principal and group.

Refused: expired, forged (another key), wrong audience, wrong issuer, unsigned (`alg: none`), HS256 signed
with the provider's public key, no expiry. A key rotation is followed; an unreachable JWKS endpoint is a
503 for a token whose key is not kept (never let through); a JWKS that does not parse stops the start.
PyIceberg's REST client gets its tokens from the provider itself (`oauth2-server-uri`) and plans here."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError

from planner_service.settings import Settings
from tests.access.policies import LISTED, PLANNED
from tests.conformance.reference import Conformance
from tests.conftest import running_service
from tests.oidc_provider import OidcProvider, new_key, oidc_provider

AUDIENCE = "scan-planner"
CLIENTS = {"spark-etl": ("etl-secret", ["etl"]), "notebook": ("nb-secret", ["analysts"])}
RULES = [
    {"groups": ["etl"], "tables": [PLANNED], "privileges": ["plan"]},
    {"groups": ["analysts"], "tables": [LISTED], "privileges": ["plan"]},
]


@pytest.fixture(scope="module")
def provider() -> Iterator[OidcProvider]:
    with oidc_provider(CLIENTS, audience=AUDIENCE) as running:
        yield running


def _settings(directory: Path, conformance: Conformance, issuer: str) -> Path:
    config = directory / "service.json"
    settings = {
        "warehouse": str(conformance.dir / "warehouse"),
        "oidc_issuer": issuer,
        "oidc_audience": AUDIENCE,
        "access_rules": RULES,
    }
    config.write_text(json.dumps(settings))
    return config


@pytest.fixture(scope="module")
def service(
    provider: OidcProvider, conformance: Conformance, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    config = _settings(tmp_path_factory.mktemp("oidc"), conformance, provider.issuer)
    with running_service("--config", str(config), "--log-level", "warning") as url:
        yield url


def _plan(url: str, token: str, table: str = PLANNED) -> httpx.Response:
    return httpx.post(f"{url}/plan", json={"table": table}, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def _signed(key: dict[str, str], claims: dict[str, Any], algorithm: str = "RS256", kid: str | None = None) -> str:
    private = jwt.PyJWK(key).key
    return jwt.encode(claims, private, algorithm=algorithm, headers={"kid": kid or key["kid"]})


def _claims(provider: OidcProvider, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {"iss": provider.issuer, "aud": AUDIENCE, "sub": "spark-etl", "groups": ["etl"], "iat": now}
    return {**claims, "exp": now + 600, **changes}


def test_principals_and_groups_from_the_providers_tokens(provider: OidcProvider, service: str) -> None:
    etl = provider.token("spark-etl", "etl-secret")
    notebook = provider.token("notebook", "nb-secret", basic=True)
    assert _plan(service, etl).status_code == 200
    assert _plan(service, etl, LISTED).status_code == 404  # etl may not see it
    assert _plan(service, notebook, LISTED).status_code == 200
    assert _plan(service, notebook).status_code == 404
    own = _signed(provider.signing_key, _claims(provider))  # the provider's key, as the provider signs
    assert _plan(service, own).status_code == 200


def test_tokens_that_are_not_the_providers_are_refused(provider: OidcProvider, service: str) -> None:
    key = provider.signing_key
    public = {k: v for k, v in key.items() if k in ("kty", "n", "e", "kid", "alg", "use")}
    public_pem = jwt.PyJWK(public).key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    now = int(time.time())
    refused = {
        "expired": _signed(key, _claims(provider, exp=now - 120, iat=now - 800)),
        "not yet valid": _signed(key, _claims(provider, nbf=now + 600)),
        "wrong audience": _signed(key, _claims(provider, aud="another-service")),
        "wrong issuer": _signed(key, _claims(provider, iss="http://127.0.0.1:1")),
        "no expiry": _signed(key, {k: v for k, v in _claims(provider).items() if k != "exp"}),
        "another key, the provider's kid": _signed(new_key() | {"kid": key["kid"]}, _claims(provider)),
        "unsigned": jwt.encode(_claims(provider), "", algorithm="none", headers={"kid": key["kid"]}),
        "hs256 with the public key": _hs256(public_pem, _claims(provider), key["kid"]),
        "no principal claim": _signed(key, {k: v for k, v in _claims(provider).items() if k != "sub"}),
        "garbage": "a.b.c",
    }
    for what, token in refused.items():
        answer = _plan(service, token)
        assert answer.status_code == 401, (what, answer.text)
        assert answer.headers["www-authenticate"].startswith("Bearer")


def _hs256(secret: bytes, claims: dict[str, Any], kid: str) -> str:
    """HS256 over the public key's PEM: the algorithm-confusion attack (PyJWT itself refuses to make it)."""
    import base64
    import hashlib
    import hmac

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    signing_input = (
        f"{b64(json.dumps({'alg': 'HS256', 'typ': 'JWT', 'kid': kid}).encode())}.{b64(json.dumps(claims).encode())}"
    )
    return f"{signing_input}.{b64(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())}"


def test_key_rotation_and_an_unreachable_provider(
    provider: OidcProvider, conformance: Conformance, tmp_path: Path
) -> None:
    config = _settings(tmp_path, conformance, provider.issuer)
    with running_service("--config", str(config), "--log-level", "warning") as url:
        before = provider.token("spark-etl", "etl-secret")
        assert _plan(url, before).status_code == 200
        time.sleep(5.2)  # (the service asks for keys again at most every 5 s)
        provider.rotate(keep_old=False)
        after = provider.token("spark-etl", "etl-secret")
        assert _plan(url, after).status_code == 200  # a new kid: the keys fetched again
        assert _plan(url, before).status_code == 401  # its key is no longer published
        provider.stop()
        time.sleep(5.2)
        assert _plan(url, after).status_code == 200  # a kept key still verifies
        unknown = _signed(new_key(), _claims(provider))
        answer = _plan(url, unknown)
        assert answer.status_code == 503, answer.text  # never let through, never a 401 it cannot know
        assert answer.headers["retry-after"] and "unreachable" in answer.json()["error"]["message"]
        provider.start()


def test_a_jwks_that_does_not_parse_stops_the_start(
    provider: OidcProvider, conformance: Conformance, tmp_path: Path
) -> None:
    provider.restart(garbage_jwks=True)
    try:
        config = _settings(tmp_path, conformance, provider.issuer)
        with pytest.raises(RuntimeError) as failed, running_service("--config", str(config)):
            pass
        assert "JWKS" in str(failed.value) and provider.jwks_uri in str(failed.value)
    finally:
        provider.restart()


def test_pyiceberg_with_the_providers_tokens(provider: OidcProvider, service: str) -> None:
    properties = {"oauth2-server-uri": provider.token_endpoint, "scan-planning-mode": "server", "scope": "catalog"}
    etl = RestCatalog("etl", uri=service, credential="spark-etl:etl-secret", **properties)
    files = [t.file.file_path for t in etl.load_table(PLANNED).scan().plan_files()]
    assert files and all(f.endswith(".parquet") for f in files)
    with pytest.raises(NoSuchTableError):
        etl.load_table(LISTED)
    notebook = RestCatalog("nb", uri=service, credential="notebook:nb-secret", **properties)
    assert [i[1] for i in notebook.list_tables("db")] == [LISTED.split(".")[1]]


def test_a_subject_named_like_a_configured_principal_gets_nothing_of_it(
    provider: OidcProvider, conformance: Conformance, tmp_path: Path
) -> None:
    """A provider token with `sub=admin`, where `admin` is a static token's principal: refused (401), never
    given admin's grants nor its plan ids. A static token and an OAuth client of one name do not load."""
    config = tmp_path / "service.json"
    settings = {
        "warehouse": str(conformance.dir / "warehouse"),
        "oidc_issuer": provider.issuer,
        "oidc_audience": AUDIENCE,
        "auth_tokens": {"admin": "admin-token"},
        "access_rules": [{"principals": ["admin"], "privileges": ["plan"]}, *RULES],
    }
    config.write_text(json.dumps(settings))
    with running_service("--config", str(config), "--log-level", "warning") as url:
        plan_id = httpx.post(
            f"{url}/plan",
            json={"table": PLANNED, "inline-task-limit": 0},
            headers={"Authorization": "Bearer admin-token"},
            timeout=60,
        ).json()["plan-id"]
        posing = _signed(provider.signing_key, _claims(provider, sub="admin", groups=[]))
        assert _plan(url, posing).status_code == 401
        opened = httpx.get(f"{url}/plans/{plan_id}", headers={"Authorization": f"Bearer {posing}"}, timeout=60)
        assert opened.status_code == 401
        assert _plan(url, _signed(provider.signing_key, _claims(provider))).status_code == 200  # spark-etl still
    both = {**settings, "oauth_clients": {"admin": "secret"}}
    with pytest.raises(ValueError, match="both name 'admin'"):
        Settings.model_validate(both)

"""The OIDC provider of the authentication tests (tests/oidc_provider.py) issues what the service will verify:
JWT access tokens by client credentials, with the audience, the client and its groups, signed by a key that
its JWKS publishes; and rotates its keys, or becomes unreachable, when a test asks."""

from __future__ import annotations

import importlib.util
from typing import Any

import httpx
import pytest

from tests.oidc_provider import OidcProvider, decode_jwt, oidc_provider

CLIENTS = {"alice": ("alice-secret", ["analysts"]), "etl": ("etl-secret", ["admins", "etl"])}


def _verified(token: str, provider: OidcProvider) -> dict[str, Any]:
    """The token's claims, its signature checked against the JWKS where PyJWT is installed."""
    header, claims = decode_jwt(token)
    assert header["alg"] == "RS256"
    assert header["kid"] in [key["kid"] for key in provider.jwks()["keys"]]
    if importlib.util.find_spec("jwt") is not None:
        import jwt

        key = jwt.PyJWKClient(provider.jwks_uri).get_signing_key(header["kid"]).key
        verified: dict[str, Any] = jwt.decode(token, key, ["RS256"], audience=provider.audience, issuer=provider.issuer)
        assert verified == claims
    return claims


def test_client_credentials_tokens() -> None:
    with oidc_provider(CLIENTS) as provider:
        discovery = httpx.get(provider.discovery_uri).json()
        assert discovery["issuer"] == provider.issuer
        assert discovery["token_endpoint"] == provider.token_endpoint
        assert discovery["jwks_uri"] == provider.jwks_uri

        for client_id, basic in (("alice", False), ("etl", True)):
            claims = _verified(provider.token(client_id, CLIENTS[client_id][0], basic=basic), provider)
            assert claims["iss"] == provider.issuer
            assert claims["aud"] == "scan-planner"
            assert claims["sub"] == claims["client_id"] == client_id
            assert claims["groups"] == CLIENTS[client_id][1]
            assert claims["scope"] == "catalog"
            assert claims["exp"] - claims["iat"] == 3600
            assert claims["jti"]

        assert decode_jwt(provider.token("alice", "alice-secret", scope=None))[1]["aud"] == "scan-planner"
        for basic in (False, True):
            refused = provider.request_token("alice", "wrong", basic=basic)
            assert refused.status_code == 401
            assert refused.json()["error"] == "invalid_client"
        assert provider.request_token("nobody", "x").status_code == 401


def test_audience_and_lifetime() -> None:
    with oidc_provider({"c": ("s", [])}, audience="https://planner.example/", ttl_seconds=60) as provider:
        claims = _verified(provider.token("c", "s"), provider)
        assert claims["aud"] == "https://planner.example/"
        assert claims["groups"] == []
        assert claims["exp"] - claims["iat"] == 60


def test_key_rotation_and_outages() -> None:
    with oidc_provider(CLIENTS) as provider:
        port = provider.port
        first = decode_jwt(provider.token("alice", "alice-secret"))[0]["kid"]
        assert provider.kids == [first]

        second = provider.rotate(keep_old=True)
        assert second != first and provider.port == port
        assert [key["kid"] for key in provider.jwks()["keys"]] == [second, first]
        assert _verified(provider.token("alice", "alice-secret"), provider)["sub"] == "alice"
        assert decode_jwt(provider.token("alice", "alice-secret"))[0]["kid"] == second

        third = provider.rotate(keep_old=False)
        assert [key["kid"] for key in provider.jwks()["keys"]] == [third]
        assert decode_jwt(provider.token("etl", "etl-secret", basic=True))[0]["kid"] == third

        provider.stop()
        with pytest.raises(httpx.ConnectError):
            provider.jwks()
        provider.start(garbage_jwks=True)
        assert httpx.get(provider.jwks_uri).status_code == 200
        with pytest.raises(ValueError):
            provider.jwks()
        assert decode_jwt(provider.token("alice", "alice-secret"))[0]["kid"] == third
        provider.restart()
        assert [key["kid"] for key in provider.jwks()["keys"]] == [third]
        assert provider.requests("GET", "/jwks") >= 5

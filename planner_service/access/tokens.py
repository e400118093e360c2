"""Who a bearer token names (Authenticator): a static token of the settings, a token this service signed
for an OAuth2 client (or for a static token, by exchange), or a JWT of an external OpenID provider
(access/oidc.py).

A signed token is `<payload>.<signature>`, base64url, HMAC-SHA256 with the signing key over the payload
`{"sub", "knd", "fp", "iat", "exp"}`: the principal, its kind (client or static), a fingerprint of the
credential it was issued for (an HMAC of the client's secret or of the static token), when it was issued,
and when it ends. Every request checks it against the settings in force: a client removed, a secret changed,
a static token removed ends its tokens at once. A token exchange issues a token that ends when the token
exchanged does: no chain of exchanges outlives the first token (a static token, which does not expire,
gives `token_ttl_seconds`).

Static tokens are principals by name (`auth_tokens = {name = "token"}`), or, given as a list, by the
digest of the token (`token-<12 hex digits of its SHA-256>`): never by their position in a list."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planner_service.access.oidc import OidcVerifier
from planner_service.access.principals import Principal
from planner_service.settings import static_token_names

log = logging.getLogger(__name__)

ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


@dataclass(frozen=True)
class Authenticator:
    static: Mapping[str, bytes]  # name -> sha256(token)
    clients: Mapping[str, str]  # client id -> secret
    groups: Mapping[str, frozenset[str]]  # principal name -> groups (static tokens and clients)
    key: bytes
    ttl_seconds: int
    oidc: OidcVerifier | None = None

    @classmethod
    def of(
        cls,
        static_tokens: Sequence[str] | Mapping[str, str],
        clients: Mapping[str, str],
        groups: Mapping[str, Sequence[str]],
        key: bytes,
        ttl_seconds: int,
        oidc: OidcVerifier | None = None,
    ) -> Authenticator:
        static = {name: token_digest(token) for name, token in static_token_names(static_tokens).items()}
        kept = {name: frozenset(g) for name, g in groups.items()}
        return cls(static, dict(clients), kept, hmac.new(key, b"tokens", hashlib.sha256).digest(), ttl_seconds, oidc)

    # --- who a token names ------------------------------------------------------------------------------

    def needs_fetch(self, token: str) -> bool:
        """Whether authenticate() would first fetch an OpenID provider's keys (blocking I/O)."""
        return self.oidc is not None and self.oidc.looks_like_jwt(token) and self.oidc.needs_fetch(token)

    def authenticate(self, token: str) -> Principal | None:
        """The token's principal, or None for an unknown, forged, expired or revoked token."""
        digest = token_digest(token)
        found = None
        for name, known in self.static.items():  # every entry compared: the time says nothing of which
            if hmac.compare_digest(known, digest):
                found = name
        if found is not None:
            return self._principal(found, "static", token)
        claims = self._signed_claims(token)
        if claims is not None:
            return self._principal(claims["sub"], claims["knd"], token)
        if self.oidc is not None and self.oidc.looks_like_jwt(token):
            return self._not_configured(self.oidc.verify(token))
        return None

    def _not_configured(self, principal: Principal | None) -> Principal | None:
        """An OpenID subject, unless it is named as a static token or an OAuth client is: the policy decides
        on names, and such a subject would get that principal's grants (refused, and logged)."""
        if principal is not None and (principal.name in self.static or principal.name in self.clients):
            log.warning(
                "an OpenID token names a configured principal: refused",
                extra={"principal": principal.name, "fix": "rename the static token or OAuth client, or the subject"},
            )
            return None
        return principal

    def _principal(self, name: str, kind: Any, token: str) -> Principal:
        return Principal(name, kind, self.groups.get(name, frozenset()), token)

    def _signed_claims(self, token: str) -> dict[str, Any] | None:
        """A signed token's claims when it is valid now for a credential still configured."""
        payload, _, signature = token.partition(".")
        try:
            if not hmac.compare_digest(_unb64(signature), self._sign(payload.encode())):
                return None
            claims = json.loads(_unb64(payload))
            subject, kind, fingerprint, expires = claims["sub"], claims["knd"], claims["fp"], claims["exp"]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(subject, str) or not isinstance(expires, int) or expires <= time.time():
            return None
        current = self._fingerprint(kind, subject)
        if current is None or not hmac.compare_digest(str(fingerprint), current):
            return None  # the client or static token is gone, or its secret changed
        return {"sub": subject, "knd": kind, "exp": expires}

    def _fingerprint(self, kind: object, name: str) -> str | None:
        if kind == "client":
            secret = self.clients.get(name)
            material = secret.encode() if secret is not None else None
        elif kind == "static":
            material = self.static.get(name)
        else:
            return None
        if material is None:
            return None
        return _b64(hmac.new(self.key, f"{kind}\0{name}\0".encode() + material, hashlib.sha256).digest()[:12])

    # --- issuing ----------------------------------------------------------------------------------------

    def client(self, client_id: str, secret: str) -> bool:
        known = self.clients.get(client_id)
        return known is not None and hmac.compare_digest(known.encode(), secret.encode())

    def issue_for_client(self, client_id: str) -> dict[str, object]:
        return self._issue(client_id, "client", int(time.time()) + self.ttl_seconds)

    def exchange(self, subject_token: str) -> dict[str, object] | None:
        """A token for the subject token's principal that ends when the subject token does; None when the
        subject token is not one this service issued or configured (an OpenID provider's tokens are renewed
        at the provider)."""
        now = int(time.time())
        claims = self._signed_claims(subject_token)
        if claims is not None:
            return self._issue(claims["sub"], claims["knd"], claims["exp"])
        principal = self.authenticate(subject_token)
        if principal is not None and principal.kind == "static":
            return self._issue(principal.name, "static", now + self.ttl_seconds)
        return None

    def _issue(self, subject: str, kind: str, expires: int) -> dict[str, object]:
        now = int(time.time())
        fingerprint = self._fingerprint(kind, subject)
        claims = {"sub": subject, "knd": kind, "fp": fingerprint, "iat": now, "exp": expires}
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        return {
            "access_token": f"{payload}.{_b64(self._sign(payload.encode()))}",
            "token_type": "bearer",
            "expires_in": max(0, expires - now),
            "issued_token_type": ACCESS_TOKEN_TYPE,
        }

    def _sign(self, payload: bytes) -> bytes:
        return hmac.new(self.key, payload, hashlib.sha256).digest()

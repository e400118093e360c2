"""JWT access tokens from an external OpenID Connect provider: verified with PyJWT against the provider's
JWKS (found through its discovery document unless `oidc_jwks_uri` names it), which is kept and fetched
again when it is older than `oidc_jwks_refresh_seconds` or a token names a key it does not have (a key
rotation; at most once per MIN_REFETCH_SECONDS, so forged key ids cannot make the service hammer the
provider). The issuer, audience, expiry and not-before are checked; the principal and its groups come from
configurable claims.

Never open: a token whose key cannot be had (the provider unreachable, its JWKS unparseable) is answered
503, not let through; a JWKS that does not parse at start stops the start (OidcConfigError)."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner_service.access.principals import Principal
from planner_service.errors import IdentityProviderUnavailableError, PlannerError
from planner_service.json_text import parse_json

if TYPE_CHECKING:  # PyJWT and cryptography (20 MB) load with the first verifier: a service without one has neither
    import jwt

log = logging.getLogger(__name__)

MIN_REFETCH_SECONDS = 5.0
MAX_TOKEN_CHARS = 16_384
KEEP_VERIFIED_SECONDS = 60.0  # a verified token is not verified again for this long (nor past its expiry)
MAX_VERIFIED = 10_000


class OidcConfigError(PlannerError):
    """The provider answered, but not with a discovery document or JWKS this service can use."""


@dataclass(frozen=True)
class OidcConfig:
    issuer: str
    audience: str
    jwks_uri: str | None = None
    principal_claim: str = "sub"
    groups_claim: str = "groups"
    algorithms: tuple[str, ...] = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA")
    leeway_seconds: float = 30.0
    refresh_seconds: float = 300.0
    timeout_seconds: float = 5.0


class OidcVerifier:
    def __init__(self, config: OidcConfig) -> None:
        import httpx

        self.config = config
        self._http = httpx.Client(timeout=config.timeout_seconds, headers={"User-Agent": "scan-planner"})
        self._lock = threading.Lock()
        self._jwks_uri = config.jwks_uri
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._fetched_at = float("-inf")  # monotonic
        self._tried_at = float("-inf")
        # sha256(token) -> (its principal, until when, wall clock): the signature checked once a minute at most;
        # emptied whenever the keys are fetched (a key withdrawn ends its tokens then)
        self._verified: dict[bytes, tuple[Principal, float]] = {}

    def start(self) -> None:
        """Fetch the keys once now: a provider that answers nonsense stops the start (OidcConfigError); one
        that cannot be reached is only logged (tokens get 503 until it can)."""
        try:
            self._refresh()
        except IdentityProviderUnavailableError as exc:
            log.warning("openid provider unreachable at start", extra={"error": exc.message})

    def close(self) -> None:
        self._http.close()

    @staticmethod
    def looks_like_jwt(token: str) -> bool:
        return token.count(".") == 2 and len(token) <= MAX_TOKEN_CHARS

    def needs_fetch(self, token: str) -> bool:
        """Whether verifying `token` would first fetch the keys (call verify() off the event loop then)."""
        import jwt

        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.InvalidTokenError:
            return False
        return self._stale() or (kid not in self._keys and self._may_refetch())

    def verify(self, token: str) -> Principal | None:
        """The token's principal, or None when it is not a valid token of this provider for this audience.
        IdentityProviderUnavailableError when its key cannot be had."""
        digest = hashlib.sha256(token.encode()).digest()
        kept = self._verified.get(digest)
        if kept is not None and kept[1] > time.time() and not self._stale():
            return kept[0]
        principal, expires = self._verified_now(token)
        if principal is not None:
            if len(self._verified) >= MAX_VERIFIED:
                self._verified.clear()
            self._verified[digest] = (principal, min(expires, time.time() + KEEP_VERIFIED_SECONDS))
        return principal

    def _verified_now(self, token: str) -> tuple[Principal | None, float]:
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            return None, 0
        kid = header.get("kid")
        key = self._key(kid if isinstance(kid, str) else None)
        if key is None:
            return None, 0
        c = self.config
        try:
            claims = jwt.decode(
                token,
                key=key.key,
                algorithms=list(c.algorithms),
                audience=c.audience,
                issuer=c.issuer,
                leeway=c.leeway_seconds,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.InvalidTokenError:
            return None, 0
        name = claims.get(c.principal_claim)
        if not isinstance(name, str) or not name:
            return None, 0
        return Principal(name, "oidc", _groups(claims.get(c.groups_claim)), token), float(claims["exp"])

    # --- keys ------------------------------------------------------------------------------------------

    def _stale(self) -> bool:
        return time.monotonic() - self._fetched_at > self.config.refresh_seconds and self._may_refetch()

    def _may_refetch(self) -> bool:
        return time.monotonic() - self._tried_at > MIN_REFETCH_SECONDS

    def _key(self, kid: str | None) -> jwt.PyJWK | None:
        if self._stale() or (kid not in self._keys and self._may_refetch()):
            try:
                self._refresh()
            except (IdentityProviderUnavailableError, OidcConfigError) as exc:
                if kid not in self._keys:  # never open: no key, no answer
                    message = exc.message if isinstance(exc, PlannerError) else str(exc)
                    raise IdentityProviderUnavailableError(message) from None
                log.warning("openid provider keys not refreshed", extra={"error": str(exc)})
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(kid)

    def _refresh(self) -> None:
        import jwt

        with self._lock:
            if time.monotonic() - self._tried_at <= MIN_REFETCH_SECONDS and self._keys:
                return  # another thread just did
            self._tried_at = time.monotonic()
            uri = self._jwks_uri or self._discover()
            jwks = self._get_json(uri, "JWKS")
            try:
                keys = jwt.PyJWKSet.from_dict(dict(jwks)).keys
            except (jwt.PyJWKSetError, jwt.InvalidKeyError, KeyError, TypeError, ValueError) as exc:
                raise OidcConfigError(f"The OpenID provider's JWKS at {uri} has no usable key: {exc}") from None
            self._keys = {k.key_id: k for k in keys if k.public_key_use in (None, "sig")}
            self._verified = {}
            self._jwks_uri = uri
            self._fetched_at = time.monotonic()
            log.info("openid provider keys fetched", extra={"jwks-uri": uri, "keys": len(self._keys)})

    def _discover(self) -> str:
        uri = self.config.issuer.rstrip("/") + "/.well-known/openid-configuration"
        document = self._get_json(uri, "discovery document")
        jwks_uri = document.get("jwks_uri")
        if document.get("issuer") != self.config.issuer or not isinstance(jwks_uri, str):
            raise OidcConfigError(
                f"The discovery document at {uri} does not name issuer {self.config.issuer!r} with a jwks_uri: "
                "check oidc_issuer (it must be exactly the provider's `iss`)"
            )
        return jwks_uri

    def _get_json(self, uri: str, what: str) -> Mapping[str, Any]:
        import httpx

        try:
            response = self._http.get(uri)
        except httpx.HTTPError as exc:
            raise IdentityProviderUnavailableError(
                f"Cannot verify tokens: the OpenID provider's {what} at {uri} is unreachable ({type(exc).__name__})",
                retry_in_seconds=5,
            ) from None
        if response.status_code >= 500 or response.status_code == 429:
            raise IdentityProviderUnavailableError(
                f"Cannot verify tokens: the OpenID provider's {what} at {uri} answered {response.status_code}",
                retry_in_seconds=5,
            )
        try:
            body = parse_json(response.content) if response.status_code == 200 else None
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise OidcConfigError(
                f"The OpenID provider's {what} at {uri} is not a JSON object ({response.status_code})"
            )
        return body


def _groups(value: object) -> frozenset[str]:
    """A groups claim: a list of names, or one space-separated string (as some providers give scopes)."""
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, Sequence):
        return frozenset(str(v) for v in value if isinstance(v, str | int))
    return frozenset()

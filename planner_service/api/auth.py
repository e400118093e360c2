"""Authentication: bearer tokens on every route but /health (and the token endpoint itself), when enabled.

Two kinds of token are accepted: static ones from the settings (`auth_tokens`), and tokens this service
signs for a client that proves itself with the Iceberg REST OAuth2 client-credentials flow (`POST
/v1/oauth/tokens`, what PyIceberg's and Java's REST clients send for `credential=id:secret`; Java renews
them with a token exchange). A signed token is `<payload>.<signature>`, base64url, HMAC-SHA256 over the
payload `{"sub": client id, "exp": unix seconds}` with the service's key; it expires after
`token_ttl_seconds`. A request without a valid token gets 401 with `WWW-Authenticate: Bearer`."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from planner_service.api.errors import error_response
from planner_service.settings import Settings

ANONYMOUS = "anonymous"  # (token owners are static:N or client:ID, never this)
OPEN_PATHS = frozenset({"/health", "/v1/oauth/tokens"})
UI_PREFIX = "/ui"  # the plan explorer's page and its files: no data in them (its API calls carry the token)
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Authenticator:
    """Who a bearer token belongs to: `static:N` for the N-th static token, `client:ID` for an OAuth client
    (a signed token carries its owner; a token exchange keeps it)."""

    static: dict[bytes, str]  # sha256(token) -> principal
    clients: dict[str, str]  # client id -> secret
    key: bytes
    ttl_seconds: int

    @classmethod
    def of(cls, settings: Settings) -> Authenticator | None:
        """None when authentication is off (no tokens and no clients configured)."""
        if not settings.auth_enabled:
            return None
        static = {_digest(token): f"static:{i + 1}" for i, token in enumerate(settings.auth_tokens)}
        key = settings.token_signing_key.encode() if settings.token_signing_key else secrets.token_bytes(32)
        return cls(static, dict(settings.oauth_clients), key, settings.token_ttl_seconds)

    def principal(self, token: str) -> str | None:
        """The token's owner, or None for an unknown, forged or expired token."""
        found = None
        digest = _digest(token)
        for known, name in self.static.items():  # every entry compared: the time says nothing of which
            if hmac.compare_digest(known, digest):
                found = name
        if found is not None:
            return found
        payload, _, signature = token.partition(".")
        try:
            if not hmac.compare_digest(_unb64(signature), self._sign(payload.encode())):
                return None
            claims = json.loads(_unb64(payload))
            subject, expires = claims["sub"], claims["exp"]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(subject, str) or not isinstance(expires, int) or expires <= time.time():
            return None
        return subject

    def client(self, client_id: str, secret: str) -> bool:
        known = self.clients.get(client_id)
        return known is not None and hmac.compare_digest(known.encode(), secret.encode())

    def issue(self, subject: str) -> dict[str, object]:
        """An OAuth2 token response for `subject`."""
        payload = _b64(json.dumps({"sub": subject, "exp": int(time.time()) + self.ttl_seconds}).encode())
        token = f"{payload}.{_b64(self._sign(payload.encode()))}"
        return {
            "access_token": token,
            "token_type": "bearer",
            "expires_in": self.ttl_seconds,
            "issued_token_type": ACCESS_TOKEN_TYPE,
        }

    def _sign(self, payload: bytes) -> bytes:
        return hmac.new(self.key, payload, hashlib.sha256).digest()


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers") or []:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


class RequireToken:
    """Every HTTP request but OPEN_PATHS carries a valid bearer token, or gets 401 before it is read; the
    token's owner is `request.state.principal` (anonymous when authentication is off)."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator | None) -> None:
        self.app, self.auth = app, authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        principal = ANONYMOUS
        if self.auth is not None and not _open(scope["path"]) and scope["method"] != "OPTIONS":
            token = bearer(scope)
            found = self.auth.principal(token) if token else None
            if found is None:
                message = "Invalid or expired bearer token" if token else "A bearer token is required"
                response = error_response("NotAuthorizedException", f"{message}: get one at /v1/oauth/tokens", 401)
                response.headers["WWW-Authenticate"] = 'Bearer realm="scan-planner"'
                await response(scope, receive, send)
                return
            principal = found
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)


def _open(path: str) -> bool:
    return path in OPEN_PATHS or path == UI_PREFIX or path.startswith(UI_PREFIX + "/")


async def token_endpoint(request: Request) -> Response:
    """POST /v1/oauth/tokens: client credentials (form fields or HTTP Basic) or a token exchange of a valid
    token, answered as RFC 6749 says (errors: 400/401 `{"error", "error_description"}`)."""
    auth: Authenticator | None = request.app.state.authenticator
    if auth is None:
        return _oauth_error("invalid_request", "Authentication is off: this service issues no tokens", 400)
    form = {k: v[0] for k, v in parse_qs((await request.body()).decode("utf-8", "replace")).items()}
    grant = form.get("grant_type", "")
    if grant == "client_credentials":
        client_id, secret = form.get("client_id"), form.get("client_secret")
        basic = request.headers.get("authorization", "")
        if basic.lower().startswith("basic "):
            try:
                client_id, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
            except ValueError:
                return _oauth_error("invalid_request", "Malformed Basic credentials", 400)
        if not client_id or secret is None:
            return _oauth_error("invalid_request", "client_id and client_secret are required", 400)
        if not auth.client(client_id, secret):
            return _oauth_error("invalid_client", "Unknown client or wrong secret", 401)
        return JSONResponse(auth.issue(f"client:{client_id}"), headers={"Cache-Control": "no-store"})
    if grant == TOKEN_EXCHANGE:
        subject = auth.principal(form.get("subject_token", ""))
        if subject is None:
            return _oauth_error("invalid_grant", "The subject token is invalid or expired", 400)
        return JSONResponse(auth.issue(subject), headers={"Cache-Control": "no-store"})
    return _oauth_error("unsupported_grant_type", "Use client_credentials or a token exchange", 400)


def _oauth_error(error: str, description: str, status: int) -> Response:
    return JSONResponse({"error": error, "error_description": description}, status_code=status)


def client_of(request: Request) -> str:
    """Who is asking: the token's owner, or (authentication off) the client's address."""
    principal = getattr(request.state, "principal", ANONYMOUS)
    if principal != ANONYMOUS:
        return str(principal)
    return f"{ANONYMOUS}@{request.client.host if request.client else 'unknown'}"

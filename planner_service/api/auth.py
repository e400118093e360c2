"""Authentication at the door: bearer tokens on every route but /health (and the token endpoint itself),
when enabled, and the OAuth2 token endpoint.

Who a token names is access/tokens.py's (static tokens, tokens this service signs, an OpenID provider's
JWTs); the access control in force (access/control.py) is taken once per request, so one request is
decided by one policy. A request without a valid token gets 401 with `WWW-Authenticate: Bearer`; one whose
token cannot be verified now (the OpenID provider's keys out of reach) 503: never let through."""

from __future__ import annotations

import base64
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from planner_service.access.control import AccessHolder
from planner_service.access.principals import ANONYMOUS, Principal
from planner_service.access.routes import OPEN_PATHS
from planner_service.access.table_access import CAPABILITIES_HEADER, ENFORCES_CAPABILITY, TableAccess
from planner_service.api.errors import error_response
from planner_service.api.pages import is_open_page
from planner_service.errors import IdentityProviderUnavailableError

UI_PREFIX = "/ui"  # the plan explorer's page and its files: no data in them (its API calls carry the token)
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


def enforces_restrictions(scope: Scope) -> bool:
    """Whether the client declares it enforces read restrictions (X-Iceberg-Client-Capabilities)."""
    for name, value in scope.get("headers") or []:
        if name == CAPABILITIES_HEADER.encode():
            declared = {v.strip().lower() for v in value.decode("latin-1").split(",")}
            if ENFORCES_CAPABILITY in declared:
                return True
    return False


def bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers") or []:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


class RequireToken:
    """Every HTTP request but OPEN_PATHS carries a valid bearer token, or gets 401 before it is read. The
    token's principal and the policy in force become `request.state.access` (a TableAccess; anonymous when
    authentication is off)."""

    def __init__(self, app: ASGIApp, holder: AccessHolder) -> None:
        self.app, self.holder = app, holder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        control = self.holder.current  # the one access control this request is decided by
        principal: Principal = ANONYMOUS
        if control.enabled and not _open(scope["path"]) and scope["method"] != "OPTIONS":
            token = bearer(scope)
            try:
                found = None
                if token is not None:
                    if control.needs_fetch(token):  # the provider's keys first: not on the event loop
                        found = await run_in_threadpool(control.authenticate, token)
                    else:
                        found = control.authenticate(token)
            except IdentityProviderUnavailableError as exc:
                response = error_response("ServiceUnavailableException", exc.message, 503)
                response.headers["Retry-After"] = "5"
                await response(scope, receive, send)
                return
            if found is None:
                message = "Invalid or expired bearer token" if token else "A bearer token is required"
                response = error_response("NotAuthorizedException", f"{message}: {control.token_hint}", 401)
                response.headers["WWW-Authenticate"] = 'Bearer realm="scan-planner"'
                await response(scope, receive, send)
                return
            principal = found
        state = scope.setdefault("state", {})
        state["principal"] = principal
        state["access"] = TableAccess(principal, control.policy, enforces_restrictions(scope))
        await self.app(scope, receive, send)


def _open(path: str) -> bool:
    return path in OPEN_PATHS or path == UI_PREFIX or path.startswith(UI_PREFIX + "/") or is_open_page(path)


async def token_endpoint(request: Request) -> Response:
    """POST /v1/oauth/tokens: client credentials (form fields or HTTP Basic) or a token exchange of a valid
    token, answered as RFC 6749 says (errors: 400/401 `{"error", "error_description"}`)."""
    holder: AccessHolder = request.app.state.access
    auth = holder.current.authenticator
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
        return JSONResponse(auth.issue_for_client(client_id), headers={"Cache-Control": "no-store"})
    if grant == TOKEN_EXCHANGE:
        issued = auth.exchange(form.get("subject_token", ""))
        if issued is None:
            return _oauth_error(
                "invalid_grant",
                "The subject token is invalid, expired or revoked (an OpenID provider's tokens are renewed there)",
                400,
            )
        return JSONResponse(issued, headers={"Cache-Control": "no-store"})
    return _oauth_error("unsupported_grant_type", "Use client_credentials or a token exchange", 400)


def _oauth_error(error: str, description: str, status: int) -> Response:
    return JSONResponse({"error": error, "error_description": description}, status_code=status)


def access_of(request: Request) -> TableAccess:
    """The request's access (what RequireToken decided); anonymous with no policy outside the middleware."""
    access = getattr(request.state, "access", None)
    return access if isinstance(access, TableAccess) else TableAccess()

"""The guard against cross-site requests, before routing: a browser made to send a request that changes
or costs something from another site's page is refused with 403 (in the error shape of api/errors.py)."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from planner_service.api.errors import error_response
from planner_service.errors import quoted


class CrossSiteGuard:
    """Refuse requests that a web page on another site made a browser send: a request that changes or costs
    something (not GET, HEAD or OPTIONS) whose `Origin` is neither this service's own nor one of
    `allowed_origins` gets 403 before it is read. Browsers send `Origin` on every cross-site POST, even the
    "simple" ones (text/plain, forms) that skip CORS preflight; curl and engine clients send none."""

    SAFE = frozenset({"GET", "HEAD", "OPTIONS"})

    def __init__(self, app: ASGIApp, allowed_origins: list[str]) -> None:
        self.app, self.allowed = app, {o.rstrip("/").lower() for o in allowed_origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in self.SAFE:
            headers = dict(scope.get("headers") or [])
            origin = headers.get(b"origin", b"").decode("latin-1").rstrip("/").lower()
            own = headers.get(b"host", b"").decode("latin-1").lower()
            # "null": sandboxed frames and file: pages
            if origin and origin not in self.allowed and (origin == "null" or origin.split("://", 1)[-1] != own):
                message = f"Cross-site request from {quoted(origin)} refused (cors_allowed_origins allows origins)"
                await error_response("ForbiddenException", message, 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)

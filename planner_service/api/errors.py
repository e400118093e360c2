"""Every error leaves the service as `{"error": {"type", "message", "code"}}` (the Iceberg REST error
shape), mapped in one place: planner errors by their kind, malformed requests 400, unknown routes 404,
oversized bodies 413, anything unexpected 500 without a stack trace (it is logged instead)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from planner_service.api.responses import json_response
from planner_service.api.wire import describe_validation_errors
from planner_service.errors import PlannerError, shown

log = logging.getLogger(__name__)

_HTTP_TYPES = {
    400: "BadRequestException",
    404: "NotFoundException",
    405: "MethodNotAllowedException",
    406: "UnsupportedOperationException",
    413: "RequestTooLargeException",
    415: "UnsupportedMediaTypeException",
}


def error_body(error_type: str, message: str, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "code": code}}


def error_response(error_type: str, message: str, code: int) -> Response:
    return json_response(error_body(error_type, message, code), status_code=code)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(PlannerError)
    async def planner_error(request: Request, exc: PlannerError) -> Response:
        if exc.status_code >= 500:
            log.warning("request failed", extra={"path": request.url.path, "error": exc.message})
        response = error_response(exc.error_type, exc.message, exc.status_code)
        if exc.retry_after is not None:  # overloaded, or a store failing for now
            response.headers["Retry-After"] = str(exc.retry_after)
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        return error_response("BadRequestException", describe_validation_errors(exc.errors()), 400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = str(exc.detail) if exc.status_code != 404 else f"No route for {request.method} {request.url.path}"
        return error_response(_HTTP_TYPES.get(exc.status_code, "HTTPException"), message, exc.status_code)


def unexpected_error_response(request: Request, exc: Exception) -> Response:
    """A 500 without internals; the traceback goes to the log."""
    log.error("unexpected error", exc_info=exc, extra={"path": request.url.path})
    message = f"Internal error ({type(exc).__name__}); the service log has the details"
    return error_response("InternalServerError", message, 500)


class BodySizeLimit:
    """Refuse request bodies over `max_bytes` with 413, by Content-Length or while streaming (chunked
    bodies), and bodies that stop arriving for `timeout` seconds with 408: past either, the app is told the
    client went away, whatever it answers is dropped, and the client gets the error."""

    def __init__(self, app: ASGIApp, max_bytes: int, timeout: float) -> None:
        self.app, self.max_bytes, self.timeout = app, max_bytes, timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large()(scope, receive, send)
            return
        seen, complete, started = 0, False, False
        refused: Response | None = None

        async def limited() -> Message:
            nonlocal seen, complete, refused
            if refused is not None:
                return {"type": "http.disconnect"}
            if complete:  # (the app waiting for the client to leave, while it streams its answer)
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.timeout)
            except TimeoutError:
                refused = error_response(
                    "RequestTimeoutException", f"Request body not received within {self.timeout:g} s", 408
                )
                return {"type": "http.disconnect"}
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                complete = not message.get("more_body", False)
                if seen > self.max_bytes:
                    refused = self._too_large()
                    return {"type": "http.disconnect"}
            return message

        async def guarded(message: Message) -> None:
            nonlocal started
            if refused is not None:
                return
            started = True
            await send(message)

        try:
            await self.app(scope, limited, guarded)
        except Exception:
            if refused is None:
                raise
        if refused is not None and not started:
            await refused(scope, receive, send)

    def _too_large(self) -> Response:
        return error_response("RequestTooLargeException", f"Request body over the limit of {self.max_bytes} bytes", 413)


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
                message = f"Cross-site request from {shown(origin)} refused (cors_allowed_origins allows origins)"
                await error_response("ForbiddenException", message, 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)

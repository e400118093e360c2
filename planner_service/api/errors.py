"""Every error leaves the service as `{"error": {"type", "message", "code"}}` (the Iceberg REST error
shape), mapped in one place: planner errors by their kind (the table in api/error_kinds.py), malformed
requests 400, unknown routes 404, a method the path is not served with 405 with the `Allow` header that
RFC 9110 asks for (every method of every route of the path), anything unexpected 500 without a stack trace
(it is logged instead).
The middlewares that refuse requests before routing answer in the same shape (api/body_limit.py,
api/cross_site.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from planner_service.api.error_kinds import HTTP_REFUSALS, error_kind, retry_after
from planner_service.api.request_models import describe_validation_errors
from planner_service.api.responses import json_response
from planner_service.errors import PlannerError

log = logging.getLogger(__name__)


def error_body(error_type: str, message: str, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "code": code}}


def error_response(error_type: str, message: str, code: int) -> Response:
    return json_response(error_body(error_type, message, code), status_code=code)


def planner_error_body(error: PlannerError) -> dict[str, Any]:
    """The error body of a planner error, by its kind."""
    kind = error_kind(error)
    return error_body(kind.type, error.message, kind.status)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(PlannerError)
    async def planner_error(request: Request, exc: PlannerError) -> Response:
        kind = error_kind(exc)
        if kind.status >= 500:
            log.warning("request failed", extra={"path": request.url.path, "error": exc.message})
        response = error_response(kind.type, exc.message, kind.status)
        seconds = retry_after(exc)
        if seconds is not None:  # overloaded, or a store failing for now
            response.headers["Retry-After"] = str(seconds)
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        return error_response("BadRequestException", describe_validation_errors(exc.errors()), 400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        status, headers = exc.status_code, dict(exc.headers or {})
        if status == 404:
            message = f"No route for {request.method} {request.url.path}"
        elif status == 405:  # (Starlette's Allow names the methods of the path's first route only)
            methods = allowed_methods(app.routes, request.scope)
            headers["Allow"] = ", ".join(methods)
            message = f"Method {request.method} not allowed at {request.url.path} (allowed: {headers['Allow']})"
        else:
            message = str(exc.detail)
        refusal = HTTP_REFUSALS.get(status)
        response = error_response(refusal.type if refusal is not None else "HTTPException", message, status)
        response.headers.update(headers)
        return response


METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(routes: Iterable[BaseRoute], scope: Scope) -> list[str]:
    """The methods `scope`'s path is served with: those some route (or included router) fully matches."""
    routes = list(routes)
    return [
        method
        for method in METHODS
        if any(route.matches({**scope, "method": method})[0] is Match.FULL for route in routes)
    ]


def unexpected_error_response(request: Request, exc: Exception) -> Response:
    """A 500 without internals; the traceback goes to the log."""
    log.error("unexpected error", exc_info=exc, extra={"path": request.url.path})
    message = f"Internal error ({type(exc).__name__}); the service log has the details"
    return error_response("InternalServerError", message, 500)

"""The outermost middleware: each request's log line and metrics, and GET /health answered before routing."""

from __future__ import annotations

import logging
import time

from fastapi import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from planner_service.api import native
from planner_service.api.errors import unexpected_error_response
from planner_service.metrics import REQUEST_SECONDS, REQUESTS
from planner_service.service.runtime import Runtime

log = logging.getLogger("planner_service.requests")


class RequestObserver:
    """Each request's log line and metrics (route, status, latency); an exception the app let through is
    answered 500 here, so that the server does not log it a second time. Plain ASGI: a few microseconds of
    the event loop per request. GET /health is answered here, without routing or the other middleware."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        runtime: Runtime | None = getattr(scope["app"].state, "runtime", None)
        if scope["path"] == "/health" and scope["method"] in ("GET", "HEAD") and runtime is not None:
            # the liveness probe skips routing and the other middleware: the least of the event loop
            answer = native.health_response(runtime)
            await answer(scope, receive, send)
            self._observed(scope, runtime, "/health", answer.status_code, started)
            return
        status = [500]
        sent = [False]

        async def observed(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0], sent[0] = message["status"], True
            await send(message)

        try:
            await self.app(scope, receive, observed)
        except Exception as exc:
            if sent[0]:
                raise
            request = Request(scope)
            await unexpected_error_response(request, exc)(scope, receive, send)
        route = str(getattr(scope.get("route"), "path", "unmatched"))
        self._observed(scope, runtime, route, status[0], started)

    @staticmethod
    def _observed(scope: Scope, runtime: Runtime | None, route: str, status: int, started: float) -> None:
        elapsed = time.perf_counter() - started
        if runtime is not None:
            runtime.metrics.inc(REQUESTS, method=scope["method"], route=route, status=str(status))
            runtime.metrics.observe(REQUEST_SECONDS, elapsed, method=scope["method"], route=route)
        log.info(
            "request",
            extra={"method": scope["method"], "path": scope["path"], "status": status, "ms": round(elapsed * 1000, 2)},
        )

"""create_app(settings) -> the FastAPI application: routes, error handlers, request logging and metrics,
and the runtime (catalog, planner, caches) made at startup and closed at shutdown."""

from __future__ import annotations

import gc
import logging
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI, Request
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from planner_service import __version__
from planner_service.api import aggregates, native, rest_catalog, rest_scan
from planner_service.api.auth import Authenticator, RequireToken, token_endpoint
from planner_service.api.errors import BodySizeLimit, CrossSiteGuard, install_error_handlers, unexpected_error_response
from planner_service.service.runtime import Runtime
from planner_service.settings import Settings, get_settings

log = logging.getLogger("planner_service.requests")


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime = Runtime.from_settings(settings)
        # fewer threads contending for the GIL with the event loop: /health answers between their turns
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.worker_threads
        if settings.gil_switch_seconds is not None:
            sys.setswitchinterval(settings.gil_switch_seconds)
        app.state.runtime = runtime
        # the ~120k objects of startup (modules, routes, models) move out of the collector's reach: a full
        # collection otherwise walks them about once a second under load, a 30-50 ms pause of every request
        gc.collect()
        gc.freeze()
        log.info("ready", extra={"catalog-sources": len(runtime.catalog.sources), "demo": settings.serves_demo})
        try:
            yield
        finally:
            gc.unfreeze()
            runtime.close()

    app = FastAPI(
        title="scan-planner",
        version=__version__,
        description="Scan planning for Apache Iceberg: Iceberg Java 1.10's planFiles()/planTasks() as a service, "
        "with the Iceberg REST catalog's scan-planning endpoints.",
        lifespan=lifespan,
        telemetry=dict.fromkeys(("tracing", "metrics", "logs"), settings.opentelemetry),  # type: ignore[arg-type]
    )
    install_error_handlers(app)
    app.state.authenticator = Authenticator.of(settings)
    app.add_api_route(
        "/v1/oauth/tokens",
        token_endpoint,
        methods=["POST"],
        tags=["Iceberg REST catalog"],
        summary="An access token: OAuth2 client credentials (form or Basic) or a token exchange",
    )
    app.include_router(native.router)
    app.include_router(aggregates.router)
    app.include_router(rest_catalog.router)
    app.include_router(rest_scan.router)

    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes, timeout=settings.body_timeout_seconds)
    app.add_middleware(RequireToken, authenticator=app.state.authenticator)
    if settings.cors_allowed_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=settings.cors_allowed_origins, allow_methods=["*"], allow_headers=["*"]
        )
    app.add_middleware(CrossSiteGuard, allowed_origins=settings.cors_allowed_origins)
    app.add_middleware(Observe)  # outermost: refusals (401, 403, 408, 413) are logged and counted too
    return app


def create_worker_app() -> FastAPI:
    """The app of one uvicorn worker process (`--workers N`): settings and logging from the environment."""
    from planner_service.logs import configure_logging

    settings = get_settings()
    configure_logging(settings.log_level.upper())
    return create_app(settings)


class Observe:
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
            await native.health_response(runtime)(scope, receive, send)
            self._observed(scope, runtime, "/health", 200, started)
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
            runtime.metrics.inc(
                "scan_planner_requests_total", "HTTP requests", method=scope["method"], route=route, status=str(status)
            )
            runtime.metrics.observe(
                "scan_planner_request_seconds", "HTTP request latency", elapsed, method=scope["method"], route=route
            )
        log.info(
            "request",
            extra={"method": scope["method"], "path": scope["path"], "status": status, "ms": round(elapsed * 1000, 2)},
        )

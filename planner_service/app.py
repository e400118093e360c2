"""create_app(settings) -> the FastAPI application: routes, error handlers, request logging and metrics,
and the runtime (catalog, planner, caches) made at startup and closed at shutdown."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from planner_service import __version__
from planner_service.access.audit import write_audit_to
from planner_service.access.control import AccessHolder, watch_settings_file
from planner_service.access.signing_key import signing_key
from planner_service.api import aggregates, explore, native, pages, rest_catalog, rest_scan, ui
from planner_service.api.auth import RequireToken, token_endpoint
from planner_service.api.body_limit import BodySizeLimit
from planner_service.api.cross_site import CrossSiteGuard
from planner_service.api.documented import answers
from planner_service.api.errors import install_error_handlers
from planner_service.api.openapi_document import TOKEN_REQUEST, TOKEN_URL, install_openapi
from planner_service.api.request_observer import RequestObserver
from planner_service.api.response_models import OAuthError, OAuthTokenResponse, described
from planner_service.service.lifecycle import drain_on_sigterm
from planner_service.service.runtime import Runtime
from planner_service.settings import WORKER_SETTINGS, Settings, get_settings, worker_settings

log = logging.getLogger("planner_service.requests")  # (the startup line beside the requests' lines)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    key = signing_key(settings)
    holder = AccessHolder(settings, key)
    write_audit_to(settings.audit_log)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime = Runtime.from_settings(settings, key)
        # fewer threads contending for the GIL with the event loop: /health answers between their turns
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.worker_threads
        if settings.gil_switch_seconds is not None:
            sys.setswitchinterval(settings.gil_switch_seconds)
        app.state.runtime = runtime
        # the ~120k objects of startup (modules, routes, models) move out of the collector's reach: a full
        # collection otherwise walks them about once a second under load, a 30-50 ms pause of every request
        gc.collect()
        gc.freeze()
        drain_on_sigterm(runtime.lifecycle, settings.shutdown_drain_seconds)
        log.info("ready", extra={"catalog-sources": len(runtime.catalog.sources), "demo": settings.serves_demo})
        watcher = asyncio.get_running_loop().create_task(watch_settings_file(holder, settings.access_reload_seconds))
        try:
            yield
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            gc.unfreeze()
            runtime.close()

    app = FastAPI(
        title="scan-planner",
        version=__version__,
        description="Scan planning for Apache Iceberg: Iceberg Java 1.10's planFiles()/planTasks() as a service, "
        "with the Iceberg REST catalog's scan-planning endpoints.",
        lifespan=lifespan,
        docs_url=None,  # (api/pages.py serves them, with their scripts: no CDN)
        redoc_url=None,
        telemetry=dict.fromkeys(("tracing", "metrics", "logs"), settings.opentelemetry),  # type: ignore[arg-type]
    )
    install_error_handlers(app)
    install_openapi(app)
    app.state.access = holder
    app.add_api_route(
        TOKEN_URL,
        token_endpoint,
        methods=["POST"],
        tags=["iceberg-rest-catalog"],
        summary="An access token: OAuth2 client credentials (form or Basic) or a token exchange",
        operation_id="getToken",
        openapi_extra=TOKEN_REQUEST,
        responses=answers(  # (open: no bearer token asked; its own errors are RFC 6749's)
            {
                **described(OAuthTokenResponse, "The token"),
                **described(OAuthError, "invalid_request, invalid_grant or unsupported_grant_type", status=400),
                **described(OAuthError, "invalid_client", status=401),
            },
            body=True,
            token=False,
        ),
    )
    app.include_router(native.router)
    app.include_router(aggregates.router)
    app.include_router(explore.router)
    app.include_router(ui.router)
    app.include_router(pages.router)
    app.include_router(rest_catalog.router)
    app.include_router(rest_scan.router)

    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes, timeout=settings.body_timeout_seconds)
    app.add_middleware(RequireToken, holder=holder)
    if settings.cors_allowed_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=settings.cors_allowed_origins, allow_methods=["*"], allow_headers=["*"]
        )
    app.add_middleware(
        CrossSiteGuard,
        allowed_origins=settings.cors_allowed_origins,
        allowed_hosts=settings.allowed_hosts,
        check_host=not settings.auth_enabled or bool(settings.allowed_hosts),
        bound_host=settings.host,
    )
    app.add_middleware(RequestObserver)  # outermost: refusals (401, 403, 408, 413) are logged and counted too
    return app


def create_worker_app() -> FastAPI:
    """The app of one uvicorn worker process (`--workers N`): settings and logging from the environment."""
    from planner_service.logs import configure_logging

    handed = os.environ.get(WORKER_SETTINGS)
    settings = worker_settings(handed) if handed else get_settings()
    configure_logging(settings.log_level.upper())
    return create_app(settings)

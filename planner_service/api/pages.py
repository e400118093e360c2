"""The pages a person opens in a browser, beside the plan explorer (api/ui.py): `/` (where to go next, or for
an API client the same as JSON), and the API's documentation, `/docs` (Swagger UI) and `/redoc` (ReDoc),
whose scripts and styles the service serves itself (the `fastapi-offline` package ships them), so that they
work with no network but the service's. None of them holds data of any table: they are open with
authentication on (the documentation's "Try it out" sends the token its user authorizes with)."""

from __future__ import annotations

import html
from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from starlette.responses import JSONResponse, Response

from planner_service import __version__
from planner_service.api.errors import error_response

router = APIRouter()

ASSETS_PREFIX = "/docs-assets"
_ASSETS_DIR = Path(fastapi_offline.__file__).parent / "static"
ASSETS = {  # name -> media type: the only files served from the package
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "redoc.standalone.js": "text/javascript; charset=utf-8",
}
OAUTH2_REDIRECT = "/docs/oauth2-redirect"
# what the documentation pages may load: their own scripts (and FastAPI's inline start-up script), nothing
# from another origin; ReDoc renders in a worker it makes from a blob
DOCS_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' "
    "'unsafe-inline'; img-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; base-uri 'none'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
LINKS = {  # where a newcomer goes from /
    "/ui": "the plan explorer: why a scan reads what it reads",
    "/docs": "the HTTP API, to read and try (Swagger UI)",
    "/redoc": "the HTTP API as one page (ReDoc)",
    "/openapi.json": "the OpenAPI document",
    "/health": "whether the service is up",
    "/v1/config": "the Iceberg REST catalog (Spark, PyIceberg, DuckDB)",
}
OPEN_PAGES = frozenset({"/", "/docs", "/redoc", OAUTH2_REDIRECT, "/openapi.json"})


def is_open_page(path: str) -> bool:
    """A page (or a file of one) that holds no data: served without a token."""
    return path in OPEN_PAGES or path.startswith(ASSETS_PREFIX + "/")


@router.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
async def home(request: Request) -> Response:
    """A browser gets a small page of links; an API client (curl, anything not asking for HTML) JSON."""
    if "text/html" in request.headers.get("accept", ""):
        return Response(_home_page(), media_type="text/html; charset=utf-8", headers=DOCS_HEADERS)
    return JSONResponse({"service": "scan-planner", "version": __version__, "links": LINKS})


@router.get("/docs", include_in_schema=False)
async def swagger_ui() -> Response:
    page = get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="scan-planner: the HTTP API",
        swagger_js_url=f"{ASSETS_PREFIX}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS_PREFIX}/swagger-ui.css",
        swagger_favicon_url="/favicon.ico",
        oauth2_redirect_url=OAUTH2_REDIRECT,
    )
    page.headers.update(DOCS_HEADERS)
    return page


@router.get(OAUTH2_REDIRECT, include_in_schema=False)
async def swagger_ui_redirect() -> Response:
    return get_swagger_ui_oauth2_redirect_html()


@router.get("/redoc", include_in_schema=False)
async def redoc() -> Response:
    page = get_redoc_html(
        openapi_url="/openapi.json",
        title="scan-planner: the HTTP API",
        redoc_js_url=f"{ASSETS_PREFIX}/redoc.standalone.js",
        redoc_favicon_url="/favicon.ico",
        with_google_fonts=False,
    )
    page.headers.update(DOCS_HEADERS)
    return page


@router.api_route(ASSETS_PREFIX + "/{name}", methods=["GET", "HEAD"], include_in_schema=False)
async def asset(name: str) -> Response:
    media_type = ASSETS.get(name)
    if media_type is None:
        return error_response("NotFoundException", f"No file {name!r} in the API documentation's assets", 404)
    body = (_ASSETS_DIR / name).read_bytes()
    return Response(body, media_type=media_type, headers={**DOCS_HEADERS, "Cache-Control": "public, max-age=86400"})


def _home_page() -> str:
    items = "\n".join(
        f'    <li><a href="{path}"><code>{path}</code></a>: {html.escape(what)}</li>' for path, what in LINKS.items()
    )
    return f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>scan-planner</title>
  <link rel="icon" href="/favicon.ico">
</head>
<body>
  <h1>scan-planner {html.escape(__version__)}</h1>
  <p>Scan planning for Apache Iceberg, as a service. Plan with <code>POST /plan</code>, or from Spark,
  PyIceberg and DuckDB through the Iceberg REST catalog.</p>
  <ul>
{items}
  </ul>
</body>
</html>
"""

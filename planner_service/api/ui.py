"""GET /ui: the plan explorer, a page served from planner_service/ui (plain HTML, CSS and JavaScript; nothing
fetched from elsewhere). The page holds no data: it is open, and asks the API with the token its user
gives when authentication is on. It is served with where the tokens the service takes now come from
(`data-token-sources` on its root element, the words of a 401: access/control.py token_sources), so that
its token field says where one comes from; the kinds configured, never a token, client or secret."""

from __future__ import annotations

import html
from importlib.resources import files

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse
from starlette.responses import Response

from planner_service.access.control import AccessHolder
from planner_service.api.errors import error_response

router = APIRouter()

ASSETS = {  # name -> media type: the only files served
    "index.html": "text/html; charset=utf-8",
    "explorer.js": "text/javascript; charset=utf-8",
    "explorer.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
# the page's own files only: no inline script, no other origin, not framed by another site
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


_SOURCES_SLOT = b'data-token-sources=""'  # in index.html's <html>: where tokens come from, "; or " between


@router.api_route("/ui", methods=["GET", "HEAD"], include_in_schema=False)
async def page(request: Request) -> Response:
    holder: AccessHolder = request.app.state.access
    sources = html.escape("; or ".join(holder.current.token_sources), quote=True)
    body = _read("index.html").replace(_SOURCES_SLOT, f'data-token-sources="{sources}"'.encode(), 1)
    return Response(body, media_type=ASSETS["index.html"], headers=SECURITY_HEADERS)


@router.api_route("/favicon.ico", methods=["GET", "HEAD"], include_in_schema=False)
async def favicon() -> Response:  # what a browser asks of any page of the service (/docs too): the explorer's icon
    return _asset("favicon.svg")


@router.get("/ui/", include_in_schema=False)
async def page_slash() -> Response:
    return RedirectResponse("/ui", status_code=308)


@router.api_route("/ui/{name}", methods=["GET", "HEAD"], include_in_schema=False)
async def asset(name: str, request: Request) -> Response:
    return await page(request) if name == "index.html" else _asset(name)


def _asset(name: str) -> Response:
    media_type = ASSETS.get(name)
    if media_type is None:
        return error_response("NotFoundException", f"No file {name!r} in the plan explorer", 404)
    return Response(_read(name), media_type=media_type, headers=SECURITY_HEADERS)


def _read(name: str) -> bytes:
    return files("planner_service.ui").joinpath(name).read_bytes()

"""A REST catalog fronted as hosted catalogs are, for tests: a proxy on loopback before a real one (another
scan-planner's /v1) that

- answers `GET /v1/config` itself, by its `warehouse` parameter, with the `defaults` and `overrides` given
  (a `prefix` per warehouse, as Polaris, Lakekeeper and Unity give one);
- refuses with 403 and the REST ErrorModel every request under a forbidden namespace, as a catalog answers
  a principal without the privilege; with `grants` (bearer token -> the namespaces it may use), it decides
  per caller as Polaris does: 401 for a token it does not know, 403 under a namespace the token is not
  granted (changed by the test while it runs: a revoked grant);
- forwards everything else unchanged (the scan-planner behind serves `/v1/{prefix}/...` too);
- records each request's method, path and query string, so a test sees what a client asked for.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.conftest import free_port

FORBIDDEN_MESSAGE = "Principal 'planner' is not authorized for op LOAD_TABLE"  # Polaris's wording
_HOP_BY_HOP = {"host", "content-length", "transfer-encoding", "connection", "content-encoding"}


@dataclass
class FrontedCatalog:
    upstream: str
    configs: Mapping[str | None, Mapping[str, Mapping[str, str]]]  # warehouse -> {"defaults", "overrides"}
    forbidden_namespace: str = "a"  # with the namespaces under it
    requests: list[str] = field(default_factory=list)  # "GET /v1/config?warehouse=w", ...
    grants: dict[str, set[str]] | None = None  # bearer token -> namespaces (first level) it may use
    callers: list[str | None] = field(default_factory=list)  # the bearer token of each request

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        path = scope["raw_path"].decode("ascii")  # as sent: levels joined by %1F
        query = request.url.query
        self.requests.append(f"{request.method} {path}{'?' + query if query else ''}")
        response = await self._answer(request, path)
        await response(scope, receive, send)

    def paths(self, method: str = "GET") -> list[str]:
        return [r.split(" ", 1)[1] for r in self.requests if r.startswith(method + " ")]

    async def _answer(self, request: Request, path: str) -> Response:
        if path == "/v1/config":
            config = self.configs.get(request.query_params.get("warehouse"), {})
            return JSONResponse(
                {"defaults": dict(config.get("defaults", {})), "overrides": dict(config.get("overrides", {}))}
            )
        if re.search(f"/namespaces/{re.escape(self.forbidden_namespace)}(%1F|/|$)", path):
            error = {"message": FORBIDDEN_MESSAGE, "type": "ForbiddenException", "code": 403}
            return JSONResponse({"error": error}, status_code=403)
        if self.grants is not None:
            refusal = self._per_caller(request, path)
            if refusal is not None:
                return refusal
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        async with httpx.AsyncClient(timeout=60) as client:
            answer = await client.request(
                request.method,
                f"{self.upstream}{path}",
                params=request.query_params,
                headers=headers,
                content=await request.body(),
            )
        kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP}
        return Response(answer.content, status_code=answer.status_code, headers=kept)

    def _per_caller(self, request: Request, path: str) -> Response | None:
        assert self.grants is not None
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        caller = token if scheme.lower() == "bearer" else None
        self.callers.append(caller)
        if caller is None or caller not in self.grants:
            error = {"message": "Not authorized: unknown token", "type": "NotAuthorizedException", "code": 401}
            return JSONResponse({"error": error}, status_code=401)
        match = re.search(r"/namespaces/([^/%]+)", path)
        if match is not None and match[1] not in self.grants[caller]:
            message = f"Principal '{caller[:8]}' is not authorized for op LOAD_TABLE"
            return JSONResponse({"error": {"message": message, "type": "ForbiddenException", "code": 403}}, 403)
        return None


@contextlib.contextmanager
def fronted(catalog: FrontedCatalog) -> Iterator[str]:
    """The proxy served by uvicorn in a thread of this process while the block runs; its URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(catalog, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="fronted-catalog", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the fronted catalog did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)

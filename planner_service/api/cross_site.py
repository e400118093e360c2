"""The guards against browsers made to call the service from another site, before routing (answers in the
error shape of api/errors.py):

- DNS rebinding: a page of `rebind.example`, once that name points at 127.0.0.1, is same-origin with the
  service in the browser's eyes, and only the `Host` header it sends tells. When authentication is off (or
  `allowed_hosts` is set), a request whose Host is neither a loopback name, the bound host, nor one of
  `allowed_hosts` is refused (403), /health aside.
- Cross-site requests: a request that changes or costs something (not GET, HEAD or OPTIONS) whose `Origin`
  is neither this service's own nor one of `cors_allowed_origins` is refused (403) before it is read.
  Browsers send `Origin` on every cross-site POST, even the "simple" ones that skip CORS preflight; curl and
  engine clients send none. GETs are guarded too (a plan by id costs a plan): one a browser marks as
  cross-site or same-site (`Sec-Fetch-Site`, which pages cannot set; an `<img src>` is one), or that carries
  a foreign `Origin`, is refused, except a person's navigation to `/`, the explorer or the API docs."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from planner_service.api.errors import error_response
from planner_service.errors import quoted

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
NAVIGABLE = ("/ui", "/docs", "/redoc", "/openapi.json")  # pages a person may open from a link elsewhere
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})


def host_name(host: str) -> str:
    """A Host header's name, without its port (an IPv6 literal keeps its brackets)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class CrossSiteGuard:
    SAFE = frozenset({"GET", "HEAD", "OPTIONS"})

    def __init__(
        self,
        app: ASGIApp,
        allowed_origins: list[str],
        allowed_hosts: Iterable[str] = (),
        check_host: bool = False,
        bound_host: str = "",
    ) -> None:
        self.app, self.allowed = app, {o.rstrip("/").lower() for o in allowed_origins}
        hosts = {host_name(h) for h in allowed_hosts} | LOOPBACK_NAMES
        if bound_host not in WILDCARD_BINDS:
            hosts.add(host_name(bound_host))
        self.hosts, self.any_host, self.check_host = frozenset(hosts), "*" in hosts, check_host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1").lower()
        refusal = self._host_refusal(host, scope["path"]) or self._site_refusal(headers, host, scope)
        if refusal is not None:
            await error_response("ForbiddenException", refusal, 403)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _host_refusal(self, host: str, path: str) -> str | None:
        if not self.check_host or self.any_host or not host or path == "/health":
            return None
        if host_name(host) in self.hosts:
            return None
        return f"Host {quoted(host)} is not served here: add its name to allowed_hosts (a DNS-rebinding guard)"

    def _site_refusal(self, headers: dict[bytes, bytes], host: str, scope: Scope) -> str | None:
        origin = headers.get(b"origin", b"").decode("latin-1").rstrip("/").lower()
        # "null": sandboxed frames and file: pages
        foreign = (
            bool(origin) and origin not in self.allowed and (origin == "null" or origin.split("://", 1)[-1] != host)
        )
        if scope["method"] not in self.SAFE:
            return (
                f"Cross-site request from {quoted(origin)} refused (cors_allowed_origins allows origins)"
                if foreign
                else None
            )
        if scope["method"] == "OPTIONS":
            return None
        site = headers.get(b"sec-fetch-site", b"").decode("latin-1").lower()
        if origin and origin in self.allowed:
            return None
        if not foreign and site not in ("cross-site", "same-site"):
            return None
        navigation = headers.get(b"sec-fetch-mode", b"").decode("latin-1").lower() == "navigate"
        if navigation and not foreign and (scope["path"] == "/" or scope["path"].startswith(NAVIGABLE)):
            return None
        return (
            "Cross-site request refused: another site's page cannot read or plan here "
            "(cors_allowed_origins allows origins)"
        )

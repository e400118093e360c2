"""PlannerClient: ask the scan-planning service for a plan over HTTP (httpx).

The contract with the service is its JSON, nothing else: this package imports nothing from planner_service
(nor pyarrow, nor pyspark), so a driver or a tool needs only httpx to plan. Planning is read-only, so a
request that failed for a reason that may pass (503: storage unreachable or a manifest briefly missing; the
connection refused or dropped) is retried a bounded number of times with exponential backoff; any other
error raises PlannerServiceError at once, carrying the service's status, error type and message. So does a
service_url that is not an http:// or https:// URL, when the client is made, and a service that cannot be
reached, after the retries: its message says where, why, and what to check first, without httpx's traceback.
"""

from __future__ import annotations

import copy
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx

from planner_client.scan import Scan

__all__ = [
    "CAPABILITIES_HEADER",
    "DEFAULT_SERVICE_URL",
    "TOKEN_VARIABLE",
    "URL_VARIABLE",
    "PlannerClient",
    "PlannerServiceError",
    "default_service_url",
]

DEFAULT_SERVICE_URL = "http://127.0.0.1:8181"  # where `scan-planner serve` listens unless told otherwise
URL_VARIABLE = "SCAN_PLANNER_URL"  # the service's base URL when none is given
TOKEN_VARIABLE = "SCAN_PLANNER_TOKEN"  # the bearer token when none is given (a service with authentication on)
RETRY_STATUSES = frozenset({503})
# a balancer's own answers for a replica that went away mid-request (HAProxy: 502, 504); the service's own
# 502 (a JSON error: an upstream catalog refused it) is not retried
PROXY_RETRY_STATUSES = frozenset({502, 504})
# Errors on the way to the service that a later attempt may not meet; a read timeout is not one of them:
# the service is planning (and would plan again), so waiting longer is the caller's decision (timeout=).
RETRY_EXCEPTIONS: tuple[type[Exception], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
    httpx.PoolTimeout,
)
MAX_RETRY_AFTER_SECONDS = 30.0
# what a client declares it does with what it is served (Iceberg's REST header; comma-separated tokens, e.g.
# "read-restrictions": it enforces a principal's read restrictions itself, as Iceberg PR #16394 defines it)
CAPABILITIES_HEADER = "X-Iceberg-Client-Capabilities"
_ERRNO = re.compile(r"^\[Errno -?\d+\] ")  # an OSError's prefix, in a connection error's text


def default_service_url() -> str:
    """$SCAN_PLANNER_URL, else http://127.0.0.1:8181 (where `scan-planner serve` listens by default)."""
    return os.environ.get(URL_VARIABLE) or DEFAULT_SERVICE_URL


class PlannerServiceError(Exception):
    """The service refused or failed a request (`status` None: it could not be reached at all)."""

    def __init__(self, status: int | None, error_type: str, message: str, url: str = "") -> None:
        self.status = status
        self.type = error_type
        self.message = message
        self.url = url
        where = f" ({url})" if url else ""
        code = f"HTTP {status} " if status is not None else ""
        super().__init__(f"{code}{error_type}: {message}{where}")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable with its fields (Spark ships exceptions around)
        return (type(self), (self.status, self.type, self.message, self.url))


class PlannerClient:
    """A client of one scan-planner service; use it as a context manager, or call close().

    retries: how many times a 503 or a connection error is retried (0: never); the n-th retry waits
    backoff * 2**(n-1) seconds, or what a 503's Retry-After asks (at most 30 s).
    service_url: the service's base URL (default: $SCAN_PLANNER_URL, else http://127.0.0.1:8181).
    token: the bearer token of a service with authentication on (default: $SCAN_PLANNER_TOKEN).
    capabilities: what the caller declares in every request (X-Iceberg-Client-Capabilities), e.g.
      ("read-restrictions",) from a reader that enforces them; none by default: this client reads no data,
      so it promises nothing of its own.
    """

    def __init__(
        self,
        service_url: str | None = None,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.5,
        *,
        token: str | None = None,
        capabilities: Sequence[str] = (),
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if retries < 0:
            raise ValueError(f"retries must be >= 0, not {retries}")
        if backoff < 0:
            raise ValueError(f"backoff must be >= 0, not {backoff}")
        self.service_url = _checked_service_url(service_url or default_service_url())
        self.retries = retries
        self.backoff = backoff
        self._sleep = sleep
        self.token = token if token is not None else os.environ.get(TOKEN_VARIABLE) or None
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        self._http = httpx.Client(base_url=self.service_url, timeout=timeout, transport=transport, headers=headers)
        self.capabilities: tuple[str, ...] = ()
        self._capability_headers: dict[str, str] = {}
        self._declare(capabilities)

    def __enter__(self) -> PlannerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def with_capabilities(self, *capabilities: str) -> PlannerClient:
        """A client of the same service, settings and connections whose requests also declare `capabilities`
        (this one's stay as they are: a promise made for one reader is not made for the client's other
        users). It shares this client's connections: close this one, not it."""
        other = copy.copy(self)
        other._declare(capabilities)
        return other

    def _declare(self, capabilities: Sequence[str]) -> None:
        if isinstance(capabilities, str):
            raise TypeError('capabilities is a list such as ["read-restrictions"], not a string')
        for name in capabilities:
            if not name or "," in name or name.strip() != name:
                raise ValueError(f"a capability is one token without commas or spaces, not {name!r}")
        self.capabilities = tuple(dict.fromkeys((*self.capabilities, *capabilities)))
        self._capability_headers = {CAPABILITIES_HEADER: ",".join(self.capabilities)} if self.capabilities else {}

    def plan(self, scan: Scan | Mapping[str, Any]) -> dict[str, Any]:
        """POST /plan: the plan of a Scan (or of a PlanRequest body). Inline (`files`, `tasks`, ...) when it has at most
        the service's inline task limit of tasks, else its `plan-id` and `task-count`: fetch the tasks
        with task()."""
        body = scan.request() if isinstance(scan, Scan) else dict(scan)
        result = self._request("POST", "/plan", body)
        if not isinstance(result, dict) or "task-count" not in result:
            raise PlannerServiceError(
                None, "InvalidResponse", "the /plan response has no task-count", self._url("/plan")
            )
        return result

    def aggregate(self, scan: Scan | Mapping[str, Any], aggregates: Sequence[str] = ()) -> dict[str, Any]:
        """POST /aggregate: `aggregates` (count(*), count(col), min(col), max(col)) of a Scan from metadata (or
        of an AggregateRequest body), each with `exact` (and a `reason` when not):
        {"exact", "aggregates": [{"name", "type", "value", "exact"}], ...}."""
        body = scan.aggregate_request(aggregates) if isinstance(scan, Scan) else dict(scan)
        result = self._request("POST", "/aggregate", body)
        if not isinstance(result, dict) or not isinstance(result.get("aggregates"), list):
            raise PlannerServiceError(
                None, "InvalidResponse", "the /aggregate response has no aggregates", self._url("/aggregate")
            )
        return result

    def task(self, plan_id: str, index: int) -> dict[str, Any]:
        """Task `index` of a plan, self-contained: {"plan": reader context and delete files, "task": ...}."""
        path = f"/plans/{plan_id}/tasks/{int(index)}"
        result = self._request("GET", path, None)
        if not isinstance(result, dict) or not result.get("tasks"):
            raise PlannerServiceError(None, "InvalidResponse", "the task response has no tasks", self._url(path))
        return {"plan": result["plan"], "task": result["tasks"][0]}

    def _request(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        url = self._url(path)
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, json=body, headers=self._capability_headers)
            except RETRY_EXCEPTIONS as exc:
                if attempt >= self.retries:  # (httpx's own traceback, chained, would add nothing to ours)
                    raise _unreachable(exc, self.service_url, url, attempt + 1) from None
                self._sleep(self._delay(attempt, None))
            except httpx.TimeoutException as exc:
                raise PlannerServiceError(None, "Timeout", f"{type(exc).__name__}: {exc}", url) from None
            else:
                if response.is_success:
                    return _json(response, url)
                if not _retried(response) or attempt >= self.retries:
                    raise _error_of(response, url, attempt + 1)
                self._sleep(self._delay(attempt, response.headers.get("retry-after")))
            attempt += 1

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), MAX_RETRY_AFTER_SECONDS)
            except ValueError:
                pass  # an HTTP date: rare from a planner, fall back to our own backoff
        return float(self.backoff * 2**attempt)

    def _url(self, path: str) -> str:
        return f"{self.service_url}{path}"


def _checked_service_url(service_url: str) -> str:
    """`service_url` without a trailing slash, when it is an http:// or https:// URL with a host; else
    PlannerServiceError saying how to write it, before any request (httpx takes "localhost" in
    "localhost:8181" for a scheme, and fails each request with its own UnsupportedProtocol)."""
    scheme, separator, rest = service_url.partition("://")
    if not separator:
        fix = f": write http://{service_url.lstrip('/')}" if service_url else ""
        raise PlannerServiceError(None, "InvalidServiceUrl", f"service_url {service_url!r} has no scheme{fix}")
    if scheme.lower() not in ("http", "https"):
        raise PlannerServiceError(
            None, "InvalidServiceUrl", f"service_url {service_url!r} is not http:// or https://: write http://{rest}"
        )
    try:
        host = httpx.URL(service_url).host
    except httpx.InvalidURL as exc:
        raise PlannerServiceError(None, "InvalidServiceUrl", f"service_url {service_url!r}: {exc}") from None
    if not host:
        raise PlannerServiceError(
            None, "InvalidServiceUrl", f"service_url {service_url!r} has no host: write {scheme}://HOST:PORT"
        )
    return service_url.rstrip("/")


def _unreachable(exc: Exception, service_url: str, url: str, attempts: int) -> PlannerServiceError:
    """A request that got no answer after `attempts`: why, in words; a connection never made asks whether
    the service runs there."""
    tries = f"after {attempts} attempt{'s' if attempts > 1 else ''}"
    reason = _ERRNO.sub("", str(exc)).strip() or type(exc).__name__
    reason = reason[:1].lower() + reason[1:]
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        message = (
            f"cannot reach the scan-planner service at {service_url} ({reason} {tries}): "
            "is `scan-planner serve` running there?"
        )
    else:
        message = f"the connection to the scan-planner service at {service_url} failed ({reason} {tries})"
    return PlannerServiceError(None, "ConnectionError", message, url)


def _json(response: httpx.Response, url: str) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise PlannerServiceError(response.status_code, "InvalidResponse", f"not JSON: {exc}", url) from None


def _error_of(response: httpx.Response, url: str, attempts: int) -> PlannerServiceError:
    """The service's `{"error": {"message", "type", "code"}}`, or what the response has instead."""
    error_type, message = "HTTPError", response.text.strip()[:1000] or response.reason_phrase
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict):
        error_type = str(error.get("type") or error_type)
        message = str(error.get("message") or message)
    if attempts > 1:
        message = f"{message} (after {attempts} attempts)"
    return PlannerServiceError(response.status_code, error_type, message, url)


def _retried(response: httpx.Response) -> bool:
    """Whether an error answer is worth another attempt: the service's 503s (overloaded, storage failing,
    draining), and a balancer's 502 or 504 (not the service's JSON)."""
    if response.status_code in RETRY_STATUSES:
        return True
    json = response.headers.get("content-type", "").startswith("application/json")
    return response.status_code in PROXY_RETRY_STATUSES and not json

"""PlannerClient: ask the scan-planning service for a plan over HTTP (httpx).

The contract with the service is its JSON, nothing else: this module imports nothing from planner_service,
so a Spark driver needs only httpx to plan. Planning is read-only, so a request that failed for a reason
that may pass (503: storage unreachable or a manifest briefly missing; the connection refused or dropped)
is retried a bounded number of times with exponential backoff; any other error raises
PlannerServiceError at once, carrying the service's status, error type and message.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import httpx

__all__ = ["DEFAULT_SERVICE_URL", "PlannerClient", "PlannerServiceError", "plan_request"]

DEFAULT_SERVICE_URL = "http://127.0.0.1:8181"
TOKEN_VARIABLE = "SCAN_PLANNER_TOKEN"  # the bearer token when none is given (a service with authentication on)
RETRY_STATUSES = frozenset({503})
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
    token: the bearer token of a service with authentication on (default: $SCAN_PLANNER_TOKEN).
    """

    def __init__(
        self,
        service_url: str = DEFAULT_SERVICE_URL,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.5,
        *,
        token: str | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if retries < 0:
            raise ValueError(f"retries must be >= 0, not {retries}")
        if backoff < 0:
            raise ValueError(f"backoff must be >= 0, not {backoff}")
        self.service_url = service_url.rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self._sleep = sleep
        self.token = token if token is not None else os.environ.get(TOKEN_VARIABLE) or None
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else None
        self._http = httpx.Client(base_url=self.service_url, timeout=timeout, transport=transport, headers=headers)

    def __enter__(self) -> PlannerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def plan(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST /plan: the plan for a PlanRequest body. Inline (`files`, `tasks`, ...) when it has at most
        the service's inline task limit of tasks, else its `plan-id` and `task-count`: fetch the tasks
        with task()."""
        result = self._request("POST", "/plan", dict(body))
        if not isinstance(result, dict) or "task-count" not in result:
            raise PlannerServiceError(
                None, "InvalidResponse", "the /plan response has no task-count", self._url("/plan")
            )
        return result

    def aggregate(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST /aggregate: count(*), count(col), min(col), max(col) from metadata, each with `exact` (and a
        `reason` when not): {"exact", "aggregates": [{"name", "type", "value", "exact"}], ...}."""
        result = self._request("POST", "/aggregate", dict(body))
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
                response = self._http.request(method, path, json=body)
            except RETRY_EXCEPTIONS as exc:
                if attempt >= self.retries:
                    raise PlannerServiceError(
                        None, "ConnectionError", f"{type(exc).__name__}: {exc} (after {attempt + 1} attempts)", url
                    ) from exc
                self._sleep(self._delay(attempt, None))
            except httpx.TimeoutException as exc:
                raise PlannerServiceError(None, "Timeout", f"{type(exc).__name__}: {exc}", url) from exc
            else:
                if response.is_success:
                    return _json(response, url)
                if response.status_code not in RETRY_STATUSES or attempt >= self.retries:
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


def plan_request(
    table: str,
    *,
    filter: str | Mapping[str, Any] | bool | None = None,
    columns: list[str] | tuple[str, ...] | None = None,
    snapshot_id: int | None = None,
    as_of: int | datetime | None = None,
    ref: str | None = None,
    options: Mapping[str, int | str] | None = None,
    case_sensitive: bool = True,
    inline_task_limit: int | None = None,
    start_snapshot_id: int | None = None,
    end_snapshot_id: int | None = None,
    limit: int | None = None,
    parallelism: int | None = None,
) -> dict[str, Any]:
    """A POST /plan body. `as_of`: epoch milliseconds or a datetime (a naive one is taken as UTC).
    `inline_task_limit`: plans with more tasks come back as a plan id (default: the service's setting).
    `start_snapshot_id` (exclusive) / `end_snapshot_id` (inclusive, default the current snapshot): an
    incremental append scan, as Spark's read options of those names (the service checks the combination).
    `limit`: the rows wanted; the service may plan only the first files that surely hold them.
    `parallelism`: Spark's (max of the default parallelism and the shuffle partitions), for the split size
    Spark + Iceberg adapts to it."""
    chosen = [
        name for name, value in (("snapshot_id", snapshot_id), ("as_of", as_of), ("ref", ref)) if value is not None
    ]
    if len(chosen) > 1:
        raise ValueError(f"choose at most one snapshot: {', '.join(chosen)} were all given")
    body: dict[str, Any] = {"table": table}
    if snapshot_id is not None:
        body["snapshot-id"] = int(snapshot_id)
    if as_of is not None:
        body["as-of-timestamp-ms"] = epoch_millis(as_of)
    if ref is not None:
        body["ref"] = ref
    if start_snapshot_id is not None:
        body["start-snapshot-id"] = int(start_snapshot_id)
    if end_snapshot_id is not None:
        body["end-snapshot-id"] = int(end_snapshot_id)
    if columns is not None:
        if isinstance(columns, str):
            raise TypeError("columns is a list of column names, not a string")
        body["select"] = list(columns)
    if filter is not None:
        body["filter"] = filter if isinstance(filter, str | bool) else dict(filter)
    if not case_sensitive:
        body["case-sensitive"] = False
    if options:
        body["options"] = dict(options)
    if inline_task_limit is not None:
        body["inline-task-limit"] = int(inline_task_limit)
    if limit is not None:
        body["limit"] = int(limit)
    if parallelism is not None:
        body["parallelism"] = int(parallelism)
    return body


def epoch_millis(value: int | datetime) -> int:
    """Milliseconds since the epoch; a naive datetime is taken as UTC."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        delta = value - datetime(1970, 1, 1, tzinfo=UTC)
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"as_of is epoch milliseconds (int) or a datetime, not {type(value).__name__}")
    return value

"""Drive one HTTP endpoint from N concurrent clients for a bounded time: requests/s, latency percentiles, errors.

Each client is a thread with its own keep-alive httpx.Client. All start together; each sends the same
POST (or cycles through a list of requests, a mixed load) again and again until the duration is up (or it
has sent `max_requests`), streaming every response
to its end without parsing it, and times each request from sending it to its last byte. A response other
than 200, or a failed connection, is an error. The loop is bounded: no request starts after the deadline,
and each request has a timeout.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class _Client:
    latencies_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    response_bytes: int = 0


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank q-th percentile (0 < q <= 100) of `values` (not empty)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


Request = tuple[str, str, bytes | None]  # method, URL, body


def _run_client(
    requests: list[Request],
    duration_s: float,
    max_requests: int | None,
    timeout: float,
    start: threading.Barrier,
    first: int = 0,
) -> _Client:
    out = _Client()
    headers = {"content-type": "application/json"}
    with httpx.Client(timeout=timeout) as client:
        start.wait()
        deadline = time.monotonic() + duration_s
        while time.monotonic() < deadline and (max_requests is None or len(out.latencies_s) < max_requests):
            method, url, body = requests[(first + len(out.latencies_s)) % len(requests)]
            began = time.perf_counter()
            try:
                with client.stream(method, url, content=body, headers=headers) as response:
                    size = sum(len(chunk) for chunk in response.iter_raw())
                    status = response.status_code
            except httpx.HTTPError as err:
                out.errors.append(f"{type(err).__name__}: {err}")
                out.latencies_s.append(time.perf_counter() - began)
                continue
            out.latencies_s.append(time.perf_counter() - began)
            out.response_bytes += size
            if status != 200:
                out.errors.append(f"HTTP {status}")
    return out


def drive(
    url: str,
    body: bytes,
    clients: int,
    duration_s: float,
    max_requests: int | None = None,
    timeout: float = 600,
    mixed: list[Request] | None = None,
) -> dict[str, Any]:
    """`clients` threads POSTing `body` to `url` for `duration_s` seconds (at most `max_requests` each); with
    `mixed`, each client cycles through those requests instead (client i starting at the i-th)."""
    requests = mixed or [("POST", url, body)]
    results: list[_Client] = [_Client() for _ in range(clients)]
    start = threading.Barrier(clients + 1)  # the clients start together, once all are ready

    def work(i: int) -> None:
        try:
            results[i] = _run_client(requests, duration_s, max_requests, timeout, start, i)
        except Exception as err:  # a client that dies is an error, not a silently missing client
            start.abort()
            results[i].errors.append(f"client failed: {type(err).__name__}: {err}")

    threads = [threading.Thread(target=work, args=(i,), name=f"bench-client-{i}") for i in range(clients)]
    for thread in threads:
        thread.start()
    with contextlib.suppress(threading.BrokenBarrierError):  # a client failed before the start: it says why
        start.wait()
    began = time.monotonic()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    latencies = [s for r in results for s in r.latencies_s]
    errors = [e for r in results for e in r.errors]
    return {
        "clients": clients,
        "duration_s": duration_s,
        "elapsed_s": elapsed,
        "requests": len(latencies),
        "errors": len(errors),
        "error_samples": sorted(set(errors))[:5],
        "requests_per_s": len(latencies) / elapsed if elapsed > 0 else 0.0,
        "p50_ms": percentile(latencies, 50) * 1000 if latencies else None,
        "p99_ms": percentile(latencies, 99) * 1000 if latencies else None,
        "max_ms": max(latencies) * 1000 if latencies else None,
        "mean_response_bytes": sum(r.response_bytes for r in results) / max(1, len(latencies)),
    }

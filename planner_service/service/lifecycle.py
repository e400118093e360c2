"""Stopping without failing a request (a rolling restart, a deploy, a scale-down).

On SIGTERM the service first reports itself not ready: GET /health answers 503 `{"status": "draining"}`,
so a balancer's health check (HAProxy's, a Kubernetes readiness probe) stops sending it requests. It keeps
serving everything meanwhile, new requests too, for `shutdown_drain_seconds`: the requests a balancer sends
before it notices still succeed. Then it stops as uvicorn does: no new connections, the requests in flight
finished (for at most `shutdown_grace_seconds`). A second SIGTERM, or SIGINT (Ctrl-C), stops it at once.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from types import FrameType

log = logging.getLogger(__name__)


class Lifecycle:
    """Whether the service is draining (about to stop: not ready for new work)."""

    def __init__(self) -> None:
        self._draining = threading.Event()

    @property
    def draining(self) -> bool:
        return self._draining.is_set()

    def drain(self) -> None:
        self._draining.set()


def drain_on_sigterm(lifecycle: Lifecycle, seconds: float) -> None:
    """Wrap the SIGTERM handler the server installed (uvicorn's: stop gracefully) so that the first SIGTERM
    drains for `seconds` before it. Called from the app's startup, in the main thread, under a running loop;
    elsewhere (tests' in-process clients, another thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        return
    stop = signal.getsignal(signal.SIGTERM)
    if not callable(stop):
        return  # no server handler to defer to: the default (terminate) stays
    loop = asyncio.get_running_loop()

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        if lifecycle.draining:  # a second SIGTERM: stop now
            stop(signum, frame)
            return
        lifecycle.drain()
        log.info("draining", extra={"seconds": seconds, "then": "stopping: no new connections, requests finished"})
        loop.call_soon_threadsafe(loop.call_later, seconds, stop, signum, None)

    signal.signal(signal.SIGTERM, on_sigterm)

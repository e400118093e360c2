"""How uvicorn serves the app: its HTTP protocol with a deadline for a request's headers, and its options.

uvicorn times out idle keep-alive connections but not a request whose headers never finish (a client that
connects and sends nothing, or a header line a minute): each such connection is held for ever, and enough of
them take every file descriptor. Here a request's headers are due `header_timeout` seconds after its first
byte (or after the connection opens, for the first request); late, the connection is answered 408 in the
service's error shape and closed. The body has its own deadline (api/body_limit.py), and `limit_concurrency`
bounds the connections and requests in progress (uvicorn answers 503 past it).
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from planner_service.api.errors import error_body
from planner_service.settings import Settings


class HeaderDeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, but a request whose headers take longer than `header_timeout` seconds is
    answered 408 and its connection closed."""

    def __init__(self, *args: Any, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = header_timeout
        self._header_deadline: asyncio.TimerHandle | None = None
        self._headers_due = False  # a request (or the connection's first) whose headers have not all come

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()  # (a kept-alive connection's next request: its first byte starts the clock)

    def on_headers_complete(self) -> None:
        self._headers_due = False
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._headers_due = True
        if self._header_deadline is None:
            self._header_deadline = self.loop.call_later(self.header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_late(self) -> None:
        self._header_deadline = None
        if self.transport.is_closing() or not self._headers_due:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self._arm()  # a pipelined request behind one being answered: refused once that answer is out
            return
        message = (
            f"Request headers not received within {self.header_timeout:g} s (header_timeout_seconds): send a "
            "request's headers at once"
        )
        body = orjson.dumps(error_body("RequestTimeoutException", message, 408))
        head = (
            "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        )
        self.transport.write(head.encode() + body)
        self.transport.close()


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """uvicorn.run's options for `settings` (one worker or many): the protocol with a header deadline, the
    bound on connections, keep-alive and shutdown times. The protocol is a partial of a module-level class,
    so that it also reaches worker processes."""
    return {
        "http": functools.partial(HeaderDeadlineProtocol, header_timeout=settings.header_timeout_seconds),
        "limit_concurrency": settings.max_connections,
        "timeout_keep_alive": settings.keep_alive_seconds,
        "timeout_graceful_shutdown": int(settings.shutdown_grace_seconds),
        "log_config": None,
    }

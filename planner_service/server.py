"""How uvicorn serves the app: its HTTP protocol with deadlines for a request's headers and for a client
that stops reading its answer, and its options.

uvicorn times out idle keep-alive connections but not a request whose headers never finish (a client that
connects and sends nothing, or a header line a minute): each such connection is held for ever, and enough of
them take every file descriptor. Here a request's headers are due `header_timeout` seconds after its first
byte (or after the connection opens, for the first request); late, the connection is answered 408 in the
service's error shape and closed. The body has its own deadline (api/body_limit.py), and `limit_concurrency`
bounds the connections and requests in progress (uvicorn answers 503 past it).

Nor does uvicorn time out a client that stops reading an answer: the answer's memory stays counted against
the plans' budget while it waits (api/held_responses.py), so a few such clients could keep every other plan
at 503. Here a connection whose unsent output stays above the transport's high-water mark for
`send_timeout` seconds (the client accepted too little of it in that time) is dropped, as if the client had
reset it: the answer stops and its memory is released.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from planner_service.api.errors import error_body
from planner_service.settings import Settings

log = logging.getLogger("planner_service.requests")


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, but a request whose headers take longer than `header_timeout` seconds is
    answered 408 and its connection closed, and a connection whose client reads none of its answer's pending
    output for `send_timeout` seconds is dropped."""

    def __init__(self, *args: Any, header_timeout: float, send_timeout: float = 60.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = header_timeout
        self.send_timeout = send_timeout
        self._header_deadline: asyncio.TimerHandle | None = None
        self._headers_due = False  # a request (or the connection's first) whose headers have not all come
        self._send_deadline: asyncio.TimerHandle | None = None

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
        self._unstalled()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._send_deadline is None:
            self._send_deadline = self.loop.call_later(self.send_timeout, self._stalled)

    def resume_writing(self) -> None:
        self._unstalled()
        super().resume_writing()

    def _unstalled(self) -> None:
        if self._send_deadline is not None:
            self._send_deadline.cancel()
            self._send_deadline = None

    def _stalled(self) -> None:
        """The client has not taken the answer's pending output for `send_timeout` seconds: drop it."""
        self._send_deadline = None
        if self.transport.is_closing():
            return
        client = "{}:{}".format(*self.client) if self.client else "?"
        log.warning(
            "dropped a client that stopped reading its answer",
            extra={"client": client, "send-timeout-seconds": self.send_timeout, "path": self._path()},
        )
        self.transport.abort()  # (connection_lost follows: the answer sees a disconnect, its hold is released)

    def _path(self) -> str | None:
        return self.cycle.scope.get("path") if self.cycle is not None else None

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
    """uvicorn.run's options for `settings` (one worker or many): the protocol with its deadlines, the bound on
    connections, keep-alive and shutdown times. The protocol is a partial of a module-level class, so that it
    also reaches worker processes."""
    protocol = functools.partial(
        DeadlineProtocol, header_timeout=settings.header_timeout_seconds, send_timeout=settings.send_timeout_seconds
    )
    return {
        "http": protocol,
        "limit_concurrency": settings.max_connections,
        "timeout_keep_alive": settings.keep_alive_seconds,
        "timeout_graceful_shutdown": int(settings.shutdown_grace_seconds),
        "log_config": None,
    }

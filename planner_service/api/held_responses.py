"""Responses whose memory admission counts until they are sent (planning/admission.py `Admission.hold`).

A slow client keeps what the service has not sent it yet: the plan a streamed answer is rendered from (when
no cache keeps it), the chunks rendered ahead of the socket, the copy kept for the body cache. A held
response releases its hold once sent, or once its client has gone, whichever way the ASGI call ends (and,
should it never be called, when it is collected).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

Release = Callable[[], None]


class _Held:
    """Mixed into a Response class: `release` is called once the response has been sent or abandoned."""

    def __init__(self, *args: Any, release: Release, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._release = release
        weakref.finalize(self, release)  # (a response never sent: released when collected)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)  # type: ignore[misc]
        finally:
            self._release()


class HeldResponse(_Held, Response):
    """A whole body, held until sent."""


class HeldStreamingResponse(_Held, StreamingResponse):
    """A streamed body, held until its last chunk is sent."""

"""The request body limits, before routing: bodies over `max_body_bytes` are refused with 413, bodies not all
received `body_timeout_seconds` after the request began with 408, however they trickle (in the error shape
of api/errors.py)."""

from __future__ import annotations

import asyncio

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from planner_service.api.error_kinds import HTTP_REFUSALS
from planner_service.api.errors import error_response


class BodySizeLimit:
    """Refuse request bodies over `max_bytes` with 413, by Content-Length or while streaming (chunked
    bodies), and bodies not complete `timeout` seconds after the request reached the app with 408: past
    either, the app is told the client went away, whatever it answers is dropped, and the client gets the
    error."""

    def __init__(self, app: ASGIApp, max_bytes: int, timeout: float) -> None:
        self.app, self.max_bytes, self.timeout = app, max_bytes, timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large()(scope, receive, send)
            return
        seen, complete, started = 0, False, False
        refused: Response | None = None
        deadline = asyncio.get_running_loop().time() + self.timeout  # the whole body's, not a gap's

        async def limited() -> Message:
            nonlocal seen, complete, refused
            if refused is not None:
                return {"type": "http.disconnect"}
            if complete:  # (the app waiting for the client to leave, while it streams its answer)
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(deadline - asyncio.get_running_loop().time(), 0))
            except TimeoutError:
                refused = error_response(
                    HTTP_REFUSALS[408].type, f"Request body not received within {self.timeout:g} s", 408
                )
                return {"type": "http.disconnect"}
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                complete = not message.get("more_body", False)
                if seen > self.max_bytes:
                    refused = self._too_large()
                    return {"type": "http.disconnect"}
            return message

        async def guarded(message: Message) -> None:
            nonlocal started
            if refused is not None:
                return
            started = True
            await send(message)

        try:
            await self.app(scope, limited, guarded)
        except Exception:
            if refused is None:
                raise
        if refused is not None and not started:
            await refused(scope, receive, send)

    def _too_large(self) -> Response:
        message = f"Request body over the limit of {self.max_bytes} bytes"
        return error_response(HTTP_REFUSALS[413].type, message, 413)

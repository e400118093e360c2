"""Work that stops when its client goes away: the request's disconnect sets the work's Cancellation."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from planner_service.planning.admission import Cancellation

T = TypeVar("T")


def disconnection(request: Request) -> Callable[[], Awaitable[None]]:
    """What returns once the client has disconnected (the request's body must have been read)."""

    async def disconnected() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    return disconnected


async def until_disconnected(request: Request, work: Callable[[Cancellation], T]) -> T:
    """`work(cancel)` in a worker thread; `cancel` is set if the client disconnects before it is done (the
    request's body must have been read: what arrives next is the disconnect)."""
    cancel = Cancellation()
    disconnected = disconnection(request)

    async def watch() -> None:
        await disconnected()
        cancel.cancel()

    watcher = asyncio.ensure_future(watch())
    try:
        return await run_in_threadpool(work, cancel)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher

"""Work that stops when its client goes away: the request's disconnect sets the work's Cancellation."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from planner_service.planning.admission import Cancellation

T = TypeVar("T")


@contextlib.asynccontextmanager
async def cancelled_on_disconnect(request: Request) -> AsyncIterator[Cancellation]:
    """A Cancellation that is set if the client disconnects while the block runs (the request's body must
    have been read: what arrives next is the disconnect). Work that outlives the block keeps it, unwatched."""
    cancel = Cancellation()

    async def watch() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        cancel.cancel()

    watcher = asyncio.ensure_future(watch())
    try:
        yield cancel
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def until_disconnected(request: Request, work: Callable[[Cancellation], T]) -> T:
    """`work(cancel)` in a worker thread; `cancel` is set if the client disconnects before it is done."""
    async with cancelled_on_disconnect(request) as cancel:
        return await run_in_threadpool(work, cancel)

"""Admission of plans: how many are made at once, how much memory they may hold together, how many may wait,
and for how long; and cancellation, which stops a plan at its next step when nobody wants it any more.

A plan's cost is its estimated memory: the data files of its snapshot (the manifest list's counts) times
BYTES_PER_FILE, and the ranges its split size cuts them into beyond one a file times BYTES_PER_RANGE.
Plans run while fewer than `slots` run and their costs fit the budget; a plan bigger than the whole budget
runs alone. Answers being sent hold memory too (a plan no cache keeps, the body rendered ahead of a slow
reader): `hold` counts it against the same budget until the answer is sent, so that plans wait for slow
readers instead of adding to what they hold; only with nothing held and nothing running does a plan
bigger than the budget run. A plan that would wait while `max_waiting` already wait, or that waits
`queue_seconds`, is refused (OverloadedError, saying when to try again); a waiting plan whose client
goes away leaves the queue."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from planner_service.errors import OverloadedError, PlanCancelledError, PlanTimeoutError
from planner_service.splitting.combine import BYTES_PER_RANGE
from planner_service.splitting.stop import Stop

BYTES_PER_FILE = 1024  # a planned data file's share of a plan's peak: its index rows, tasks and encoded body
WAIT_STEP_SECONDS = 0.25  # how often a waiting plan looks at its cancellation


class Cancellation:
    """Set once when the plan is no longer wanted; `check()` raises PlanCancelledError from then on. With a
    time limit (`limit`), the plan is also stopped once it has run that long: PlanTimeoutError."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._flag = bytearray(1)  # what the compiled loops look at (splitting/stop.py)
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._deadline: float | None = None
        self._seconds = 0.0

    def limit(self, seconds: float | None) -> None:
        """Stop the plan `seconds` from now (None: no limit); the earliest limit set holds."""
        if seconds is None:
            return
        deadline = time.monotonic() + seconds
        with self._lock:
            if self._deadline is None or deadline < self._deadline:
                self._deadline, self._seconds = deadline, seconds

    @property
    def expired(self) -> bool:
        return self._deadline is not None and time.monotonic() > self._deadline

    @property
    def cancelled(self) -> bool:
        return self._event.is_set() or self.expired

    def cancel(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            self._flag[0] = 1
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def stop(self) -> Stop:
        """What stops the compiled loops of this plan: its cancellation, and its deadline as it is now."""
        return Stop(self._flag, self._deadline or 0.0, self.check)

    def check(self) -> None:
        if self._event.is_set():
            raise PlanCancelledError("The plan was cancelled: its client went away or cancelled it")
        if self.expired:
            raise PlanTimeoutError(
                f"The plan did not finish within {self._seconds:g} s (plan_timeout_seconds): its storage is slow "
                "or failing; retry later"
            )


class SharedCancellation:
    """One cancellation for work that several requests wait on: cancelled when every one of them is."""

    def __init__(self) -> None:
        self.cancellation = Cancellation()
        self._wanted = 0
        self._abandoned = False
        self._lock = threading.Lock()

    def join(self, cancel: Cancellation) -> bool:
        """Want the work until `cancel` is set; False (not joined) once everyone has left it."""
        with self._lock:
            if self._abandoned:
                return False
            self._wanted += 1
        cancel.on_cancel(self._leave)
        return True

    def _leave(self) -> None:
        with self._lock:
            self._wanted -= 1
            self._abandoned = self._wanted == 0
            last = self._abandoned
        if last:
            self.cancellation.cancel()


class Admission:
    def __init__(self, slots: int, budget_bytes: int, queue_seconds: float, max_waiting: int) -> None:
        self.slots, self.budget_bytes = slots, budget_bytes
        self.queue_seconds, self.max_waiting = queue_seconds, max_waiting
        self._changed = threading.Condition()
        self._running = 0
        self._used = 0
        self._waiting = 0
        self._patient = 0  # waiting without a deadline, outside max_waiting (submitted REST plans)
        self._held = 0  # bytes answers hold while they are sent (hold)

    @contextmanager
    def admitted(
        self, files: int, cancel: Cancellation, patient: bool = False, *, extra_ranges: int = 0
    ) -> Iterator[None]:
        """Run the body once admitted (a plan of about `files` data files, cut into about `extra_ranges` more
        ranges than files by its split size). A `patient` plan (one already accepted, planned in the
        background, a few at a time) waits for its turn however long it takes, until it is cancelled, and
        does not count against the waiting requests' bound."""
        cost = max(files, 1) * BYTES_PER_FILE + max(extra_ranges, 0) * BYTES_PER_RANGE
        if patient:
            self._wait_patiently(cost, cancel)
        else:
            self._enter(cost, cancel)
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._used -= cost
                self._changed.notify_all()

    def hold(self, cost: int) -> Callable[[], None]:
        """Count `cost` bytes an answer holds while it is sent, until the returned release is called (once or
        more). The memory is held already, so this never waits: plans are admitted around it."""
        cost = max(cost, 0)
        with self._changed:
            self._held += cost
        released = False

        def release() -> None:
            nonlocal released
            with self._changed:
                if released:
                    return
                released = True
                self._held -= cost
                self._changed.notify_all()

        return release

    def state(self) -> dict[str, int]:
        with self._changed:
            return {
                "running": self._running,
                "waiting": self._waiting + self._patient,
                "bytes": self._used + self._held,
                "held-bytes": self._held,
            }

    def _fits(self, cost: int) -> bool:
        if self._running == 0 and self._held == 0:  # (alone: however big)
            return True
        return self._running < self.slots and self._used + self._held + cost <= self.budget_bytes

    def _enter(self, cost: int, cancel: Cancellation) -> None:
        with self._changed:
            if not self._fits(cost):
                if self._waiting >= self.max_waiting:
                    raise OverloadedError(
                        f"Too many plans waiting ({self._waiting}); retry later",
                        retry_in_seconds=self._retry_in_seconds(),
                    )
                self._waiting += 1
                deadline = time.monotonic() + self.queue_seconds
                try:
                    while not self._fits(cost):
                        cancel.check()
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise OverloadedError(
                                f"Too many plans in progress: waited {self.queue_seconds:.0f}s for a turn; retry later",
                                retry_in_seconds=self._retry_in_seconds(),
                            )
                        self._changed.wait(min(left, WAIT_STEP_SECONDS))
                finally:
                    self._waiting -= 1
            self._running += 1
            self._used += cost

    def _wait_patiently(self, cost: int, cancel: Cancellation) -> None:
        with self._changed:
            self._patient += 1
            try:
                while not self._fits(cost):
                    cancel.check()
                    self._changed.wait(WAIT_STEP_SECONDS)
            finally:
                self._patient -= 1
            self._running += 1
            self._used += cost

    def _retry_in_seconds(self) -> int:
        return max(1, int(self.queue_seconds // 6))

"""What stops the compiled loops of splitting and packing before they finish: a plan cancelled (its client went
away, a REST plan was cancelled or dropped) or out of time. The loops run without the GIL, in C, and look at a
flag byte and a monotonic deadline every 65,536 steps (planner_service/csrc/kernels.h: stop_at), so a plan of
any size stops within milliseconds of being told."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

from planner_service.errors import PlanCancelledError


def _no_reason() -> None:
    return None


@dataclass(frozen=True)
class Stop:
    """`flag[0]` set (by any thread) or time.monotonic() past `deadline` (0: none) stops the loops; `reason`
    raises why (the plan's Cancellation.check), called once a loop has stopped."""

    flag: bytearray = field(default_factory=lambda: bytearray(1))
    deadline: float = 0.0
    reason: Callable[[], None] = _no_reason

    def stopped(self) -> NoReturn:
        """Raise why the loops stopped."""
        self.reason()
        raise PlanCancelledError("The plan was stopped: its client went away or cancelled it")


def never() -> Stop:
    """A Stop nothing sets: the loops run to the end."""
    return Stop()

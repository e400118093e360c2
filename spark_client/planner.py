"""The PlannerClient spark_client asks the service with, in the driver and on the executors: every request
declares the capability `read-restrictions` (X-Iceberg-Client-Capabilities, as Iceberg PR #16394 defines
it), because this package's reader enforces a principal's read restrictions itself (restrictions.py); a
service serves a restricted principal's plans only to a client that declares it. A client the caller gives
is used through a copy that declares it too, so the caller's own client promises nothing it did not."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from planner_client import PlannerClient

__all__ = ["CAPABILITIES", "READ_RESTRICTIONS", "planner"]

READ_RESTRICTIONS = "read-restrictions"
CAPABILITIES = (READ_RESTRICTIONS,)  # what spark_client does with what it is served


@contextmanager
def planner(
    client: PlannerClient | None = None, service_url: str | None = None, token: str | None = None
) -> Iterator[PlannerClient]:
    """A client declaring CAPABILITIES: `client`'s copy (left open: its owner closes it), else one for
    `service_url` and `token`, closed at the end. Made on entry, so a service_url it cannot take is refused
    there."""
    if client is not None:
        yield client.with_capabilities(*CAPABILITIES)
        return
    with PlannerClient(service_url, token=token, capabilities=CAPABILITIES) as own:
        yield own

"""The scan planner's HTTP client: a Scan says what to read, a PlannerClient asks the service for its plan
(or its aggregates from metadata). Needs only httpx; knows the service only through its JSON.

    from planner_client import PlannerClient, Scan
    with PlannerClient("http://127.0.0.1:8181") as client:
        plan = client.plan(Scan("demo.events", filter="region = 'eu'", columns=["id", "ts"]))
"""

from __future__ import annotations

from planner_client.client import (
    CAPABILITIES_HEADER,
    DEFAULT_SERVICE_URL,
    TOKEN_VARIABLE,
    URL_VARIABLE,
    PlannerClient,
    PlannerServiceError,
    default_service_url,
)
from planner_client.scan import Scan, ScanArgs, epoch_millis, plan_request

__all__ = [
    "CAPABILITIES_HEADER",
    "DEFAULT_SERVICE_URL",
    "TOKEN_VARIABLE",
    "URL_VARIABLE",
    "PlannerClient",
    "PlannerServiceError",
    "Scan",
    "ScanArgs",
    "default_service_url",
    "epoch_millis",
    "plan_request",
]

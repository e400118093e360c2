"""What each route of the service asks of its caller: one table over every route of the OpenAPI document
(tests/access/test_route_privileges.py fails on a route missing here, and holds each table route to it on a
running service). The doors decide with it: the authentication middleware lets the `OPEN` routes through
without a token; the others ask, per table, for the privilege named here (a listing answers only what the
caller may list)."""

from __future__ import annotations

from typing import Final, Literal

from planner_service.access.policy import Privilege

OPEN: Final = "open"  # no token asked (the service's health, the token endpoint itself)
TOKEN: Final = "token"  # a token, and nothing of any table (the catalog's configuration)

Needs = Privilege | Literal["open", "token"]

_TABLE = "/v1/namespaces/{namespace}/tables/{table}"
ROUTE_PRIVILEGES: dict[tuple[str, str], Needs] = {
    ("GET", "/health"): OPEN,
    ("POST", "/v1/oauth/tokens"): OPEN,
    ("GET", "/metrics"): Privilege.METRICS,
    ("GET", "/v1/config"): TOKEN,
    ("POST", "/plan"): Privilege.PLAN,
    ("GET", "/plans/{plan_id}"): Privilege.PLAN,
    ("GET", "/plans/{plan_id}/tasks"): Privilege.PLAN,
    ("GET", "/plans/{plan_id}/tasks/{index}"): Privilege.PLAN,
    ("POST", "/explore"): Privilege.PLAN,
    ("POST", "/aggregate"): Privilege.READ_METADATA,
    ("GET", "/tables/{name}/snapshots"): Privilege.READ_METADATA,
    ("GET", "/tables/{name}/refs"): Privilege.READ_METADATA,
    ("GET", "/tables/{name}/history"): Privilege.READ_METADATA,
    ("GET", "/v1/namespaces"): Privilege.LIST,
    ("GET", "/v1/namespaces/{namespace}"): Privilege.LIST,
    ("HEAD", "/v1/namespaces/{namespace}"): Privilege.LIST,
    ("GET", "/v1/namespaces/{namespace}/tables"): Privilege.LIST,
    ("HEAD", _TABLE): Privilege.LIST,
    ("GET", _TABLE): Privilege.READ_METADATA,  # (and credentials, when asked: vended only with that privilege)
    ("POST", f"{_TABLE}/metrics"): Privilege.READ_METADATA,
    ("POST", f"{_TABLE}/plan"): Privilege.PLAN,
    ("GET", f"{_TABLE}/plan/{{plan_id}}"): Privilege.PLAN,
    ("DELETE", f"{_TABLE}/plan/{{plan_id}}"): Privilege.PLAN,
    ("POST", f"{_TABLE}/tasks"): Privilege.PLAN,
}

OPEN_PATHS = frozenset(path for (_, path), needs in ROUTE_PRIVILEGES.items() if needs == OPEN) | {"/favicon.ico"}

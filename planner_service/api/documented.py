"""What each route answers, as its OpenAPI `responses`: its own success, and one response per error status it
can give, derived from the error kinds it declares through the one table (api/error_kinds.py), never written
by hand. Besides its own kinds, a route answers what the doors every request passes refuse before routing
(create_app's middleware): the cross-site guard (403), the bearer token when authentication is on (401; 503
while the OpenID provider's keys are out of reach), the body limit (408, 413) and the body's checks (400).

Every error is the Iceberg REST spec's IcebergErrorResponse (response_models.py), native routes and REST
routes alike; a 503 may say when to try again (Retry-After), a 401 how to authenticate (WWW-Authenticate).
The document's own fix-ups (FastAPI's 422 out, the security schemes in) are api/openapi_document.py's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from planner_service.api.error_kinds import HTTP_REFUSALS, ErrorKind, kind_of
from planner_service.api.request_models import json_body_schema
from planner_service.api.response_models import IcebergErrorResponse, described
from planner_service.errors import (
    BadRequestError,
    CatalogUnavailableError,
    CorruptMetadataError,
    ForbiddenError,
    IdentityProviderUnavailableError,
    InvalidOptionError,
    LocationNotAllowedError,
    MissingFileError,
    NoSuchNamespaceError,
    NoSuchPlanIdError,
    NoSuchPlanTaskError,
    NoSuchRefError,
    NoSuchSnapshotError,
    NoSuchTableError,
    NotAuthenticatedError,
    OverloadedError,
    PlannerError,
    PlanTimeoutError,
    StorageError,
    UpstreamCatalogError,
)
from planner_service.expressions.binding import InvalidFilterError

Answers = dict[int | str, dict[str, Any]]

# The doors' refusals, by what a route takes (create_app's middleware, in the order a request meets them)
GUARDED: tuple[type[PlannerError], ...] = (ForbiddenError,)  # CrossSiteGuard, before every route
AUTHENTICATED: tuple[type[PlannerError], ...] = (NotAuthenticatedError, IdentityProviderUnavailableError)
BODY_REFUSALS: tuple[ErrorKind, ...] = (HTTP_REFUSALS[408], HTTP_REFUSALS[413])  # BodySizeLimit

# What the routes' work raises, by the work
CATALOG: tuple[type[PlannerError], ...] = (
    BadRequestError,  # a namespace or table name that cannot be one
    NoSuchNamespaceError,
    StorageError,  # a SQL catalog's or warehouse's storage
    CatalogUnavailableError,
    UpstreamCatalogError,
)
TABLE: tuple[type[PlannerError], ...] = (
    *CATALOG,
    NoSuchTableError,
    LocationNotAllowedError,
    CorruptMetadataError,
    MissingFileError,
)
PLANNING: tuple[type[PlannerError], ...] = (
    *TABLE,
    NoSuchSnapshotError,
    NoSuchRefError,
    InvalidFilterError,
    InvalidOptionError,
    OverloadedError,  # admission: plans wait their turn, then 503 with Retry-After
    PlanTimeoutError,
)
PLAN_ID: tuple[type[PlannerError], ...] = (NoSuchPlanIdError, *PLANNING)  # a plan id's plan is made again
PLAN_TASK: tuple[type[PlannerError], ...] = (NoSuchPlanTaskError, NoSuchPlanIdError, *PLANNING)

_WHY = {  # what a status means on every route, before the kinds that answer it
    400: "A malformed request: JSON that does not parse, a field or parameter its schema refuses, or a check "
    "the schema cannot make, which the field's description names",
    401: "No valid bearer token (authentication on)",
    403: "Refused: a cross-site request, a location outside the allowed roots, or a privilege the caller lacks",
    404: "What the request names does not exist, or the caller may not see it",
    408: "The body stopped arriving (body_timeout_seconds)",
    413: "The body is over max_body_bytes",
    422: "The table's metadata cannot be decoded",
    502: "An upstream catalog answered what it should not",
    503: "Not now: overloaded, storage or a catalog failing, a plan past its time, the OpenID provider out of reach",
}
_HEADERS = {
    401: {"WWW-Authenticate": 'Bearer realm="scan-planner" (from the bearer-token check)'},
    503: {"Retry-After": "seconds after which trying again may succeed (overload, failing storage or catalog)"},
}


def answers(
    success: Mapping[int | str, Mapping[str, Any]],
    raises: Iterable[type[PlannerError]] = (),
    *,
    body: bool = False,
    token: bool = True,
) -> Answers:
    """A route's `responses=`: `success` (status -> OpenAPI response, e.g. described()), then one error
    response per status of the kinds it `raises` and of the doors' refusals: the cross-site guard always,
    the bearer token unless the route is open (`token=False`), and with a JSON `body` its checks (400)
    and the body limit. A status that `success` documents itself wins (the token endpoint's RFC 6749 errors)."""
    rows = [kind_of(kind) for kind in (*GUARDED, *(AUTHENTICATED if token else ()), *raises)]
    if body:
        rows += [kind_of(BadRequestError), *BODY_REFUSALS]
    types: dict[int, set[str]] = {}
    for row in rows:
        types.setdefault(row.status, set()).add(row.type)
    documented: Answers = {status: dict(answer) for status, answer in success.items()}
    for status in sorted(types):
        if status not in documented:
            documented[status] = error_answer(status, sorted(types[status]))
    return documented


def error_answer(status: int, types: Iterable[str]) -> dict[str, Any]:
    """The OpenAPI response of an error status: the IcebergErrorResponse, naming the error types it may carry."""
    why = _WHY.get(status, "An error")
    answer: dict[str, Any] = {"model": IcebergErrorResponse, "description": f"{why} ({', '.join(types)})"}
    headers = _HEADERS.get(status)
    if headers:
        integer = {"type": "integer", "minimum": 0}
        answer["headers"] = {
            name: {"description": text, "schema": integer if name == "Retry-After" else {"type": "string"}}
            for name, text in headers.items()
        }
    return answer


def json_route(
    body: type[BaseModel],
    answer: type[BaseModel],
    description: str,
    raises: Iterable[type[PlannerError]],
    headers: dict[str, str] | None = None,
    links: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The OpenAPI keywords of a route that takes a JSON `body` (parsed by parse_body()) and answers
    `answer`, or the errors of what it `raises`."""
    return {
        "openapi_extra": json_body_schema(body),
        "responses": answers(described(answer, description, headers, links), raises, body=True),
    }


def link(operation_id: str, description: str, **parameters: Any) -> dict[str, Any]:
    """An OpenAPI link from an answer to the operation `operation_id` (what a client, or schemathesis's
    stateful phase, calls next), its parameters runtime expressions such as `$response.body#/plan-id`; a
    `request_body` parameter is the link's requestBody."""
    body = parameters.pop("request_body", None)
    out: dict[str, Any] = {"operationId": operation_id, "description": description, "parameters": parameters}
    if body is not None:
        out["requestBody"] = body
    return out

"""What the Iceberg REST routes share: serving each route at `/v1/...` and `/v1/{prefix}/...`, the
endpoint strings `/v1/config` advertises, and namespace path segments.

The service is one catalog, so it needs no prefix and `/v1/config` returns none: clients then call
`/v1/namespaces/...`. A client configured with a `prefix` of its own still works, because every route is
also served under `/v1/{prefix}/`, whatever the prefix (it is accepted and ignored).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from fastapi import APIRouter

from planner_service.catalog.base import TableIdentifier, check_name
from planner_service.errors import BadRequestError, quoted

_PATH_PARAM = re.compile(r"\{(\w+)\}")

# REST spec: a multi-level namespace in a path is its levels joined by the unit separator (%1F)
NAMESPACE_SEPARATOR = "\x1f"

F = TypeVar("F", bound=Callable[..., Any])


class V1Routes:
    """Registers each route twice on `router` (at /v1 and /v1/{prefix}) and records its endpoint string,
    "<VERB> /v1/{prefix}/<path>", the form of the spec's `endpoints` list (and of Java's Endpoint), in the
    list of every route module's endpoints (`V1Routes.endpoints`, what /v1/config advertises).
    Path parameters are Python names here (`{plan_id}`) and kebab-case in the spec (`{plan-id}`)."""

    endpoints: ClassVar[list[str]] = []  # of every V1Routes, in registration order

    def __init__(self, router: APIRouter) -> None:
        self.router = router

    def route(self, method: str, path: str, **kwargs: Any) -> Callable[[F], F]:
        def register(endpoint: F) -> F:
            self.router.add_api_route(f"/v1{path}", endpoint, methods=[method], **kwargs)
            self.router.add_api_route(
                f"/v1/{{prefix}}{path}", endpoint, methods=[method], include_in_schema=False, **kwargs
            )
            spec_path = _PATH_PARAM.sub(lambda m: "{" + m.group(1).replace("_", "-") + "}", path)
            V1Routes.endpoints.append(f"{method} /v1/{{prefix}}{spec_path}")
            return endpoint

        return register


def parse_namespace(text: str) -> tuple[str, ...]:
    """A namespace path segment or `parent` parameter (already percent-decoded) as its levels."""
    levels = tuple(text.split(NAMESPACE_SEPARATOR))
    if not text or any(not level for level in levels):
        raise BadRequestError(f"Invalid namespace {quoted(text)}: levels must be non-empty and joined by %1F")
    for level in levels:
        check_name(level, "namespace level")
    return levels


def table_identifier(namespace: str, table: str) -> TableIdentifier:
    """The table of a REST path. Its levels and name hold no dot: the service names a table `namespace.name`
    (TableIdentifier.parse), so a dot in either would name another table."""
    identifier = TableIdentifier(parse_namespace(namespace), check_name(table, "table name"))  # (levels checked)
    if any("." in part for part in (*identifier.namespace, identifier.name)):
        raise BadRequestError(f"Invalid table {quoted(str(identifier))}: a namespace level or table name holds a dot")
    return identifier

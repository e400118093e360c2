"""The read side of the Iceberg REST catalog: `/v1/config`, namespaces and tables, enough for a REST
client (PyIceberg, Iceberg Java 1.11) to load a table and plan its scans here (api/rest_scan.py).

Namespaces are those of the configured catalog sources; a namespace exists when it or a namespace under it
holds tables (as Java's JdbcCatalog answers). Nothing here writes: create, drop, rename and commit are
not served, and not advertised.
"""

from __future__ import annotations

import base64
import functools
import logging
import re
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from planner_service.access.policy import Privilege
from planner_service.access.table_access import TableAccess
from planner_service.api.auth import access_of
from planner_service.api.dependencies import NamespacePath, PrettyDep, RestTablePath, RuntimeDep, TableNamespacePath
from planner_service.api.documented import CATALOG, TABLE, answers
from planner_service.api.request_models import NAME_RULE, NAMESPACE, ReportMetricsRequest, json_body_schema, parse_body
from planner_service.api.response_models import LoadTableResult, described
from planner_service.api.responses import json_response
from planner_service.api.rest_routes import NAMESPACE_SEPARATOR, V1Routes, parse_namespace, table_identifier
from planner_service.catalog.base import LoadedTable, TableIdentifier
from planner_service.errors import (
    BadRequestError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NotFoundError,
    did_you_mean,
    nearest_names,
    quoted,
)
from planner_service.metrics import METRICS_REPORTS
from planner_service.service.runtime import Runtime

log = logging.getLogger(__name__)

SCAN_PLANNING_MODE = "scan-planning-mode"  # Iceberg 1.11 / PyIceberg 0.12: "client" | "server"
# Iceberg Java's REST client names itself "Apache Iceberg 1.12.0 (commit ...)" in X-Client-Version
_JAVA_CLIENT = re.compile(r"Apache Iceberg (\d+)\.(\d+)")
_JAVA_SERVER_PLANNING = (1, 11)  # RESTTableScan: polls submitted plans, fetches plan tasks, every delete kind


def advertises_server_planning(setting: str, client_version: str | None) -> bool:
    """Whether /v1/config tells this client to plan its scans here (Settings.advertise_server_planning).

    "auto" tells only Iceberg Java 1.11 and later: PyIceberg 0.12 plans server-side synchronously only and
    refuses null partition values and equality deletes, and DuckDB 1.5 plans for itself (and takes a table's
    non-empty `config` as storage options, so nothing is ever put there), so with their defaults they plan
    in the client and read every table; they plan here when asked (`scan-planning-mode=server`)."""
    if setting != "auto":
        return setting == "all"
    match = _JAVA_CLIENT.match(client_version or "")
    return match is not None and (int(match[1]), int(match[2])) >= _JAVA_SERVER_PLANNING


router = APIRouter(tags=["iceberg-rest-catalog"])
routes = V1Routes(router)


_EXISTS = {
    **described(None, "It exists", status=204),
    **described(None, "It does not exist, or the caller may not see it (no body)", status=404),
}


@router.get(
    "/v1/config",
    summary="Catalog configuration and the endpoints this service serves",
    operation_id="getConfig",
    responses=answers({}),
)
async def config(
    runtime: RuntimeDep,
    pretty: PrettyDep,
    warehouse: Annotated[str | None, Query(description="accepted and ignored: the service is one catalog")] = None,
    client_version: Annotated[
        str | None, Header(alias="X-Client-Version", description="the client, e.g. Apache Iceberg 1.12.0")
    ] = None,
) -> Response:
    advertised = advertises_server_planning(runtime.settings.advertise_server_planning, client_version)
    defaults = {SCAN_PLANNING_MODE: "server"} if advertised else {}
    body = {"defaults": defaults, "overrides": {}, "endpoints": V1Routes.endpoints}  # exactly the routes served
    response = json_response(body, pretty=pretty)
    response.headers["Vary"] = "X-Client-Version"
    return response


# --- Namespaces ------------------------------------------------------------------------------------------


def _namespaces(runtime: Runtime, access: TableAccess) -> list[tuple[str, ...]]:
    """The namespaces the caller may see: all of them without a policy; with one, those that hold (or hold
    a namespace that holds) a table it may list."""
    if access.policy is None:
        return runtime.catalog_for(access.principal).list_namespaces()
    visible: set[tuple[str, ...]] = set()
    for namespace, tables in runtime.namespace_tables(access.principal).items():
        if access.visible(tables):
            visible.update(namespace[:depth] for depth in range(1, len(namespace) + 1))
    return sorted(visible)


def _exists(namespace: tuple[str, ...], known: list[tuple[str, ...]]) -> bool:
    return any(ns[: len(namespace)] == namespace for ns in known)


def _require_namespace(runtime: Runtime, namespace: tuple[str, ...], access: TableAccess) -> None:
    known = _namespaces(runtime, access)
    if not _exists(namespace, known):
        raise _missing_namespace(namespace, known)


def _missing_namespace(namespace: tuple[str, ...], known: list[tuple[str, ...]]) -> NoSuchNamespaceError:
    """A namespace the caller does not see, with the nearest of those it sees (and of their parents)."""
    wanted = ".".join(namespace)
    seen = dict.fromkeys(".".join(ns[:depth]) for ns in known for depth in range(1, len(ns) + 1))
    return NoSuchNamespaceError(f"Namespace does not exist: {wanted}{did_you_mean(nearest_names(wanted, seen))}")


def _children(runtime: Runtime, parent: tuple[str, ...], access: TableAccess) -> list[tuple[str, ...]]:
    known = _namespaces(runtime, access)
    if parent and not _exists(parent, known):
        raise _missing_namespace(parent, known)
    depth = len(parent) + 1
    return sorted({ns[:depth] for ns in known if len(ns) >= depth and ns[: len(parent)] == parent})


PageTokenQuery = Annotated[
    str | None, Query(alias="pageToken", description="from the previous page's next-page-token; empty: the first")
]
PageSizeQuery = Annotated[int | None, Query(alias="pageSize", ge=1, description="at most this many (default: all)")]


def _page(items: list[str], token: str | None, size: int | None) -> tuple[list[str], str | None]:
    """One page of sorted `items` after the token's item, and the next page's token (None: the last page).
    A token names the last item of its page, so a page is the same whatever was hidden from the caller."""
    after = _page_after(token)
    rest = [item for item in items if after is None or item > after]
    if size is None or len(rest) <= size:
        return rest, None
    page = rest[:size]
    return page, base64.urlsafe_b64encode(page[-1].encode()).decode()


def _page_after(token: str | None) -> str | None:
    if not token:
        return None
    try:
        return base64.urlsafe_b64decode(token.encode()).decode()
    except ValueError:
        raise BadRequestError(f"Invalid pageToken {quoted(token)}: use the next-page-token of a page") from None


@routes.route(
    "GET",
    "/namespaces",
    summary="List namespaces (top level, or the children of `parent`)",
    operation_id="listNamespaces",
    responses=answers({}, CATALOG),
)
async def list_namespaces(
    request: Request,
    runtime: RuntimeDep,
    pretty: PrettyDep,
    parent: Annotated[
        str | None,
        Query(description=f"a namespace, levels joined by %1F; {NAME_RULE}", json_schema_extra={"pattern": NAMESPACE}),
    ] = None,
    page_token: PageTokenQuery = None,
    page_size: PageSizeQuery = None,
) -> Response:
    parent_levels = parse_namespace(parent) if parent is not None else ()
    found = await run_in_threadpool(_children, runtime, parent_levels, access_of(request))
    names = {NAMESPACE_SEPARATOR.join(ns): ns for ns in found}
    page, next_token = _page(sorted(names), page_token, page_size)
    body: dict[str, Any] = {"namespaces": [list(names[n]) for n in page]}
    if next_token is not None:
        body["next-page-token"] = next_token
    return json_response(body, pretty=pretty)


@routes.route(
    "GET",
    "/namespaces/{namespace}",
    summary="Load a namespace (it has no properties)",
    operation_id="loadNamespaceMetadata",
    responses=answers({}, CATALOG),
)
async def load_namespace(
    namespace: NamespacePath, request: Request, runtime: RuntimeDep, pretty: PrettyDep
) -> Response:
    levels = parse_namespace(namespace)
    await run_in_threadpool(_require_namespace, runtime, levels, access_of(request))
    return json_response({"namespace": list(levels), "properties": {}}, pretty=pretty)


@routes.route(
    "HEAD",
    "/namespaces/{namespace}",
    summary="Whether a namespace exists: 204 or 404",
    operation_id="namespaceExists",
    status_code=204,
    responses=answers(_EXISTS, CATALOG),
)
async def namespace_exists(namespace: NamespacePath, request: Request, runtime: RuntimeDep) -> Response:
    levels = parse_namespace(namespace)
    return await _exists_response(_require_namespace, runtime, levels, access_of(request))


# --- Tables ----------------------------------------------------------------------------------------------


def _list_tables(runtime: Runtime, namespace: tuple[str, ...], access: TableAccess) -> list[TableIdentifier]:
    _require_namespace(runtime, namespace, access)
    try:
        return access.visible(runtime.catalog_for(access.principal).list_tables(namespace))
    except NoSuchNamespaceError:  # a namespace that only holds namespaces
        return []


@routes.route(
    "GET",
    "/namespaces/{namespace}/tables",
    summary="List the tables of a namespace",
    operation_id="listTables",
    responses=answers({}, CATALOG),
)
async def list_tables(
    namespace: NamespacePath,
    request: Request,
    runtime: RuntimeDep,
    pretty: PrettyDep,
    page_token: PageTokenQuery = None,
    page_size: PageSizeQuery = None,
) -> Response:
    found = await run_in_threadpool(_list_tables, runtime, parse_namespace(namespace), access_of(request))
    by_name = {t.name: t for t in found}
    page, next_token = _page(sorted(by_name), page_token, page_size)
    body: dict[str, Any] = {"identifiers": [{"namespace": list(by_name[n].namespace), "name": n} for n in page]}
    if next_token is not None:
        body["next-page-token"] = next_token
    return json_response(body, pretty=pretty)


def load_table_result(
    runtime: Runtime, table: LoadedTable, access: TableAccess, delegation: str | None = None
) -> dict[str, Any]:
    """The spec's LoadTableResult: the metadata.json as read, and the table's client config; with the
    client's X-Iceberg-Access-Delegation asking for vended-credentials (and the service vending them, to a
    caller with the credentials privilege), the table's `storage-credentials`, the first of them in `config`
    too (for clients that read only that). A caller whose reads of the table the policy restricts gets its
    `read-restrictions` (the spec's form: bound to the table's current schema, masks by field id),
    `scan-planning-mode: server`, and no credentials; a restriction that does not bind is a 403 naming the
    rule."""
    table_config: dict[str, str] = {}  # scan planning is advertised in /v1/config only (see config())
    result: dict[str, Any] = {
        "metadata-location": table.metadata_location,
        "metadata": table.metadata.raw,
        "config": table_config,
    }
    identifier = table.identifier
    restriction = access.restriction(identifier) if identifier is not None else None
    if restriction is not None:
        bound = restriction.bound(table.metadata.schema, table.name)
        result["read-restrictions"] = bound.to_json()
        table_config["scan-planning-mode"] = "server"
        access.audit_credentials(table.name, "withheld")
        return result
    wanted = delegation is not None and "vended-credentials" in [d.strip() for d in delegation.split(",")]
    credentials = runtime.storage_credentials(table, access) if wanted else None
    if credentials:
        result["storage-credentials"] = credentials
        table_config.update(credentials[0]["config"])
    return result


@routes.route(
    "GET",
    "/namespaces/{namespace}/tables/{table}",
    summary="Load a table (LoadTableResult)",
    operation_id="loadTable",
    responses=answers(
        described(LoadTableResult, "The table's metadata and client config (and vended credentials)"), TABLE
    ),
)
async def load_table(
    namespace: TableNamespacePath,
    table: RestTablePath,
    request: Request,
    runtime: RuntimeDep,
    pretty: PrettyDep,
    snapshots: Annotated[str | None, Query(description="all | refs: ignored, every snapshot is returned")] = None,
    delegation: Annotated[
        str | None,
        Header(alias="X-Iceberg-Access-Delegation", description="vended-credentials: the table's storage credentials"),
    ] = None,
) -> Response:
    identifier = table_identifier(namespace, table)
    access = access_of(request)
    loaded = await run_in_threadpool(runtime.load_table, str(identifier), None, access, Privilege.READ_METADATA)
    result = await run_in_threadpool(load_table_result, runtime, loaded, access, delegation)
    return json_response(result, pretty=pretty)


@routes.route(
    "HEAD",
    "/namespaces/{namespace}/tables/{table}",
    summary="Whether a table exists: 204 or 404",
    operation_id="tableExists",
    status_code=204,
    responses=answers(_EXISTS, TABLE),
)
async def table_exists(
    namespace: TableNamespacePath, table: RestTablePath, request: Request, runtime: RuntimeDep
) -> Response:
    identifier = table_identifier(namespace, table)
    check = functools.partial(runtime.load_table, suggest=False)  # (a 404 without a body suggests nothing)
    return await _exists_response(check, str(identifier), None, access_of(request), Privilege.LIST)


async def _exists_response(check: Callable[..., object], *args: Any) -> Response:
    """204 when `check(*args)` succeeds, a bare 404 when it raises NotFoundError (HEAD has no body)."""
    try:
        await run_in_threadpool(check, *args)
    except NotFoundError:
        return Response(status_code=404)
    return Response(status_code=204)


# --- Metrics ---------------------------------------------------------------------------------------------


@routes.route(
    "POST",
    "/namespaces/{namespace}/tables/{table}/metrics",
    summary="Report metrics (a ScanReport or CommitReport): logged and counted, 204",
    operation_id="reportMetrics",
    status_code=204,
    openapi_extra=json_body_schema(ReportMetricsRequest),
    responses=answers(described(None, "Logged and counted", status=204), (NoSuchTableError,), body=True),
)
async def report_metrics(
    namespace: TableNamespacePath, table: RestTablePath, request: Request, runtime: RuntimeDep
) -> Response:
    identifier = table_identifier(namespace, table)
    access_of(request).require(identifier, Privilege.READ_METADATA)
    body = await parse_body(request, ReportMetricsRequest)
    runtime.metrics.inc(METRICS_REPORTS, report_type=body.report_type)
    log.info("metrics report received", extra={"table": str(identifier), "report": body.model_dump(by_alias=True)})
    return Response(status_code=204)

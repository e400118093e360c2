"""The read side of the Iceberg REST catalog: `/v1/config`, namespaces and tables, enough for a REST
client (PyIceberg, Iceberg Java 1.11) to load a table and plan its scans here (api/rest_scan.py).

Namespaces are those of the configured catalog sources; a namespace exists when it or a namespace under it
holds tables (as Java's JdbcCatalog answers). Nothing here writes: create, drop, rename and commit are
not served, and not advertised.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from planner_service.api.dependencies import NamespacePath, PrettyDep, RestTablePath, RuntimeDep
from planner_service.api.request_models import ReportMetricsRequest, json_body_schema, parse_body
from planner_service.api.response_models import LoadTableResult, described
from planner_service.api.responses import json_response
from planner_service.api.rest_routes import V1Routes, parse_namespace, table_identifier
from planner_service.catalog.base import LoadedTable, TableIdentifier
from planner_service.errors import NoSuchNamespaceError, NotFoundError
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


@router.get("/v1/config", summary="Catalog configuration and the endpoints this service serves")
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


def _namespaces(runtime: Runtime) -> list[tuple[str, ...]]:
    return runtime.catalog.list_namespaces()


def _exists(namespace: tuple[str, ...], known: list[tuple[str, ...]]) -> bool:
    return any(ns[: len(namespace)] == namespace for ns in known)


def _require_namespace(runtime: Runtime, namespace: tuple[str, ...]) -> None:
    if not _exists(namespace, _namespaces(runtime)):
        raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(namespace)}")


def _children(runtime: Runtime, parent: tuple[str, ...]) -> list[tuple[str, ...]]:
    known = _namespaces(runtime)
    if parent and not _exists(parent, known):
        raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(parent)}")
    depth = len(parent) + 1
    return sorted({ns[:depth] for ns in known if len(ns) >= depth and ns[: len(parent)] == parent})


@routes.route("GET", "/namespaces", summary="List namespaces (top level, or the children of `parent`)")
async def list_namespaces(
    runtime: RuntimeDep,
    pretty: PrettyDep,
    parent: Annotated[str | None, Query(description="a namespace, levels joined by %1F")] = None,
    page_token: Annotated[str | None, Query(alias="pageToken", description="ignored: one page")] = None,
    page_size: Annotated[int | None, Query(alias="pageSize", description="ignored: one page")] = None,
) -> Response:
    parent_levels = parse_namespace(parent) if parent is not None else ()
    found = await run_in_threadpool(_children, runtime, parent_levels)
    return json_response({"namespaces": [list(ns) for ns in found]}, pretty=pretty)


@routes.route("GET", "/namespaces/{namespace}", summary="Load a namespace (it has no properties)")
async def load_namespace(namespace: NamespacePath, runtime: RuntimeDep, pretty: PrettyDep) -> Response:
    levels = parse_namespace(namespace)
    await run_in_threadpool(_require_namespace, runtime, levels)
    return json_response({"namespace": list(levels), "properties": {}}, pretty=pretty)


@routes.route("HEAD", "/namespaces/{namespace}", summary="Whether a namespace exists: 204 or 404")
async def namespace_exists(namespace: NamespacePath, runtime: RuntimeDep) -> Response:
    levels = parse_namespace(namespace)
    return await _exists_response(_require_namespace, runtime, levels)


# --- Tables ----------------------------------------------------------------------------------------------


def _list_tables(runtime: Runtime, namespace: tuple[str, ...]) -> list[TableIdentifier]:
    _require_namespace(runtime, namespace)
    try:
        return runtime.catalog.list_tables(namespace)
    except NoSuchNamespaceError:  # a namespace that only holds namespaces
        return []


@routes.route("GET", "/namespaces/{namespace}/tables", summary="List the tables of a namespace")
async def list_tables(
    namespace: NamespacePath,
    runtime: RuntimeDep,
    pretty: PrettyDep,
    page_token: Annotated[str | None, Query(alias="pageToken", description="ignored: one page")] = None,
    page_size: Annotated[int | None, Query(alias="pageSize", description="ignored: one page")] = None,
) -> Response:
    found = await run_in_threadpool(_list_tables, runtime, parse_namespace(namespace))
    identifiers = [{"namespace": list(t.namespace), "name": t.name} for t in found]
    return json_response({"identifiers": identifiers}, pretty=pretty)


def load_table_result(runtime: Runtime, table: LoadedTable, delegation: str | None = None) -> dict[str, Any]:
    """The spec's LoadTableResult: the metadata.json as read, and the table's client config; with the
    client's X-Iceberg-Access-Delegation asking for vended-credentials (and the service vending them), the
    table's `storage-credentials`, the first of them in `config` too (for clients that read only that)."""
    table_config: dict[str, str] = {}  # scan planning is advertised in /v1/config only (see config())
    result: dict[str, Any] = {
        "metadata-location": table.metadata_location,
        "metadata": table.metadata.raw,
        "config": table_config,
    }
    wanted = delegation is not None and "vended-credentials" in [d.strip() for d in delegation.split(",")]
    credentials = runtime.storage_credentials(table) if wanted else None
    if credentials:
        result["storage-credentials"] = credentials
        table_config.update(credentials[0]["config"])
    return result


@routes.route(
    "GET",
    "/namespaces/{namespace}/tables/{table}",
    summary="Load a table (LoadTableResult)",
    responses=described(LoadTableResult, "The table's metadata and client config (and vended credentials)"),
)
async def load_table(
    namespace: NamespacePath,
    table: RestTablePath,
    runtime: RuntimeDep,
    pretty: PrettyDep,
    snapshots: Annotated[str | None, Query(description="all | refs: ignored, every snapshot is returned")] = None,
    delegation: Annotated[
        str | None,
        Header(alias="X-Iceberg-Access-Delegation", description="vended-credentials: the table's storage credentials"),
    ] = None,
) -> Response:
    identifier = table_identifier(namespace, table)
    loaded = await run_in_threadpool(runtime.catalog.load_table, identifier)
    result = await run_in_threadpool(load_table_result, runtime, loaded, delegation)
    return json_response(result, pretty=pretty)


@routes.route("HEAD", "/namespaces/{namespace}/tables/{table}", summary="Whether a table exists: 204 or 404")
async def table_exists(namespace: NamespacePath, table: RestTablePath, runtime: RuntimeDep) -> Response:
    return await _exists_response(runtime.catalog.load_table, table_identifier(namespace, table))


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
    status_code=204,
    openapi_extra=json_body_schema(ReportMetricsRequest),
)
async def report_metrics(
    namespace: NamespacePath, table: RestTablePath, request: Request, runtime: RuntimeDep
) -> Response:
    identifier = table_identifier(namespace, table)
    body = await parse_body(request, ReportMetricsRequest)
    runtime.metrics.inc(METRICS_REPORTS, report_type=body.report_type)
    log.info("metrics report received", extra={"table": str(identifier), "report": body.model_dump(by_alias=True)})
    return Response(status_code=204)

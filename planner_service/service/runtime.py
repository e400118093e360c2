"""What a running service holds: its settings, storage, catalog, planner (with its caches) and metrics.
Built once per process from Settings; routes reach it through a FastAPI dependency."""

from __future__ import annotations

import contextlib
import itertools
import logging
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iceberg_io import AzureConfig, GcsConfig, S3Config, StorageConfig
from planner_service.access.policy import Privilege
from planner_service.access.principals import Principal
from planner_service.access.signing_key import signing_key
from planner_service.access.table_access import TableAccess
from planner_service.cache import LruCache
from planner_service.catalog.base import LoadedTable, TableIdentifier, load_by_metadata_location, missing_table
from planner_service.catalog.rest import RestCatalog, RestCatalogConfig
from planner_service.catalog.router import CatalogRouter
from planner_service.catalog.sql import SqlCatalog
from planner_service.errors import (
    MAX_COMPARED_NAMES,
    BadRequestError,
    LocationNotAllowedError,
    NoSuchNamespaceError,
    NoSuchPlanIdError,
    NoSuchTableError,
    PlannerError,
)
from planner_service.io.fileio import FileIO
from planner_service.io.presigning import Presigner
from planner_service.io.roots import Roots, table_directory, table_root
from planner_service.io.vending import (
    CredentialVendor,
    StaticVendor,
    StorageCredentials,
    StsVendor,
    vendable_location,
)
from planner_service.metadata.manifest import warm_up
from planner_service.metrics import DATA_FILES, MANIFESTS, STAGE_SECONDS, MetricsRegistry
from planner_service.planning.admission import Admission
from planner_service.planning.index_store import IndexStore
from planner_service.planning.index_tier import index_tier
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.read_restriction import ScanRestriction
from planner_service.planning.scan_plan import ScanPlan
from planner_service.service.cached_plan import CachedPlan
from planner_service.service.lifecycle import Lifecycle
from planner_service.service.memory_limit import cgroup_memory_limit, fit_to_memory, service_memory_bytes
from planner_service.service.plan_cache import PlanCache
from planner_service.service.plan_ids import CanonicalRequest, PlanIds
from planner_service.service.plan_spill import plan_spill
from planner_service.service.scan_report_sender import ScanReports
from planner_service.settings import Settings

log = logging.getLogger(__name__)

NAME_CHECK_SECONDS = 1.0  # a plan id's table name is asked of the catalog again after this
LISTING_SECONDS = 1.0  # the catalog's namespaces and tables, listed for policies' listings at most this often


@dataclass
class Runtime:
    settings: Settings
    io: FileIO
    catalog: CatalogRouter
    planner: ScanPlanner
    metrics: MetricsRegistry
    plans: PlanCache
    vendor: CredentialVendor | None = None  # vended credentials for tables and plans (vend_credentials)
    scan_reports: ScanReports | None = None  # each fresh plan's ScanReport: logged, perhaps sent to the catalog
    # explained plans (the plan explorer's) by plan id, within a quarter of the plan cache's bytes: paging
    # through one plans it once
    explained: LruCache[CachedPlan] = field(default_factory=lambda: explained_plans(512 * 1024 * 1024))
    lifecycle: Lifecycle = field(default_factory=Lifecycle)  # draining before a stop (service/lifecycle.py)
    plan_ids: PlanIds = field(default_factory=lambda: PlanIds(secrets.token_bytes(32)))  # issues and opens plan ids
    presigner: Presigner | None = None  # presigned URLs of a restricted plan's files (None: none are made)
    _names_checked: dict[tuple[str, str, str], float] = field(default_factory=dict)  # (_still_named)
    _listing: tuple[float, dict[tuple[str, ...], list[TableIdentifier]]] = (float("-inf"), {})  # (namespace_tables)

    @classmethod
    def from_settings(cls, settings: Settings, key: bytes | None = None) -> Runtime:
        """The runtime `settings` describe; `key` signs plan ids (access/signing_key.signing_key)."""
        limit = cgroup_memory_limit()
        settings = fit_to_memory(settings, limit)  # a container's limit: budgets under it
        io = file_io(settings, service_roots(settings))
        catalog = CatalogRouter.of(
            io,
            settings.tables,
            settings.catalog_uri,
            settings.catalog_name,
            settings.warehouse,
            rest_catalog_config(settings),
        )
        if settings.serves_demo:
            catalog.sources.append(_demo_catalog(io, settings))
        log.info("serving roots", extra={"roots": io.roots.describe(), "follows-catalogs": io.roots.follow_catalogs})
        key = key if key is not None else signing_key(settings)
        planner = ScanPlanner(
            io,
            cache_bytes=settings.cache_bytes,
            threads=settings.manifest_threads,
            timeout_seconds=settings.plan_timeout_seconds,
            range_budget_bytes=settings.plan_memory_bytes,
            memory_bytes=service_memory_bytes(limit),
            tier=index_tier(settings.index_directory, settings.index_bytes, key, _index_store(settings)),
        )
        warm_up()  # what loads on first use loads now, not in the first plan
        admission = Admission(
            settings.max_concurrent_plans,
            settings.plan_memory_bytes,
            settings.plan_queue_seconds,
            settings.max_waiting_plans,
        )
        spill = (
            plan_spill(Path(settings.plan_spill_directory), settings.plan_spill_bytes)
            if settings.plan_spill_directory and settings.plan_spill_bytes
            else None
        )
        plans = PlanCache(planner, settings.plan_cache_bytes, admission, spill)
        metrics = MetricsRegistry()
        upstream = next((c for c in catalog.sources if isinstance(c, RestCatalog)), None)
        reports = ScanReports(upstream if settings.rest_catalog_report_metrics else None, metrics)
        explained = explained_plans(settings.plan_cache_bytes // 4)
        plan_ids = PlanIds(key)
        vendor = credential_vendor(settings)
        presigner = Presigner(io, settings.presigned_url_ttl_seconds)
        return cls(
            settings,
            io,
            catalog,
            planner,
            metrics,
            plans,
            vendor,
            reports,
            explained,
            plan_ids=plan_ids,
            presigner=presigner,
        )

    def record_plan(self, plan: ScanPlan) -> None:
        """A fresh plan's metrics (Prometheus) and its ScanReport (log; the REST catalog when configured)."""
        if self.scan_reports is not None:
            self.scan_reports.publish(plan)
        m, registry = plan.metrics, self.metrics
        for stage, ms in m.stage_ms.items():
            registry.observe(STAGE_SECONDS, ms / 1000, stage=stage)
        registry.inc(DATA_FILES, m.scanned_data_files, outcome="planned")
        registry.inc(DATA_FILES, m.skipped_data_files, outcome="skipped")
        read = m.total_data_manifests - m.skipped_data_manifests
        registry.inc(MANIFESTS, read, outcome="read")
        registry.inc(MANIFESTS, m.skipped_data_manifests, outcome="skipped")

    def storage_credentials(self, table: LoadedTable, access: TableAccess) -> StorageCredentials | None:
        """What a client reads the table's files with, when the service vends credentials (else None): only
        for a table a catalog named, to a caller with the credentials privilege, for the table's own
        directory (io/vending.vendable_location) within the roots. Each one vended is audited."""
        identifier = table.identifier
        if identifier is None or (self.vendor is None and table.vended is None):
            return None
        if not access.may(identifier, Privilege.CREDENTIALS):
            access.audit_credentials(str(identifier), "withheld")
            return None
        if table.vended is not None:  # the upstream catalog's, for this caller: passed on as they are
            if table.vended:
                access.audit_credentials(str(identifier), "passed-on")
            return table.vended or None
        assert self.vendor is not None
        location = vendable_location(table.metadata_location, table.metadata.location)
        try:
            if location is None:
                raise LocationNotAllowedError(
                    f"{table.metadata.location} is not the directory of {table.metadata_location}"
                )
            self.io.roots.check(location)
        except LocationNotAllowedError as exc:
            log.warning("no credentials vended", extra={"table": str(identifier), "reason": exc.message})
            access.audit_credentials(str(identifier), "refused")
            return None
        credentials = self.vendor.storage_credentials(location)
        if credentials:
            access.audit_credentials(str(identifier), "vended")
        return credentials

    def plan_credentials(self, request: CanonicalRequest, access: TableAccess) -> StorageCredentials | None:
        """The credentials a plan by id is answered with: vended for this caller now (the table as the catalog
        names it to the caller), never those kept with a plan another caller made."""
        if request.table == request.metadata_location:
            return None
        if self.vendor is None and not self.settings.rest_catalog_delegation:
            return None  # (nothing to vend: no catalog load on the way)
        try:
            table = self.catalog_for(access.principal).load_table(TableIdentifier.parse(request.table))
        except PlannerError:
            return None
        return self.storage_credentials(table, access)

    def load_table(
        self,
        name: str | None,
        metadata_location: str | None,
        access: TableAccess,
        privilege: Privilege,
        *,
        suggest: bool = True,
    ) -> LoadedTable:
        """A table by catalog name or by its metadata.json location (exactly one of them), when `access`
        holds `privilege` on it (checked before anything is read). A name no catalog has, or one the caller
        may not list, is answered alike: missing_table with the nearest of the tables the caller may list
        (`suggest` False: without them, for an answer that has no body)."""
        if (name is None) == (metadata_location is None):
            raise BadRequestError("Give exactly one of 'table' (namespace.name) and 'metadata-location'")
        if metadata_location is not None:
            self.require_location(metadata_location, access, privilege)
            return load_by_metadata_location(self.io, metadata_location)
        assert name is not None
        identifier = TableIdentifier.parse(name)
        try:
            access.require(identifier, privilege)
            return self.catalog_for(access.principal).load_table(identifier)
        except NoSuchTableError:
            if not suggest:
                raise
            raise missing_table(identifier, self.listable_tables(access)) from None

    def listable_tables(self, access: TableAccess) -> list[TableIdentifier]:
        """The tables `access`'s principal may list (as the REST catalog's listings filter them), from the
        listing namespace_tables keeps, at most MAX_COMPARED_NAMES of the catalog's considered; none when the
        catalog cannot be listed now (a missing table's suggestions are not worth an error of their own)."""
        try:
            listing = self.namespace_tables(access.principal)
        except PlannerError:
            return []
        return access.visible(itertools.islice(itertools.chain.from_iterable(listing.values()), MAX_COMPARED_NAMES))

    def require_location(self, metadata_location: str, access: TableAccess, privilege: Privilege) -> None:
        """A table by its metadata file, when `access` holds `privilege` on it (decided by the access wing on
        the location storage reads and every name the catalogs give the table there; with
        rest_catalog_delegation, by the upstream too, asked as the caller)."""
        upstream = self.catalog_for(access.principal).load_table if self.settings.rest_catalog_delegation else None
        access.require_location(metadata_location, privilege, self.io.roots, self.catalog, upstream)

    def namespace_tables(self, principal: Principal) -> dict[tuple[str, ...], list[TableIdentifier]]:
        """Every namespace of the catalog as `principal` sees it, with its tables: what a listing under a policy
        filters. Listed once every LISTING_SECONDS for all callers (an upstream asked as each caller keeps its
        own answers briefly), not for each request."""
        delegated = self.settings.rest_catalog_delegation and principal.token is not None
        listed_at, listing = self._listing
        if not delegated and time.monotonic() - listed_at < LISTING_SECONDS:
            return listing
        catalog = self.catalog_for(principal)
        fresh: dict[tuple[str, ...], list[TableIdentifier]] = {}
        for namespace in catalog.list_namespaces():
            with contextlib.suppress(NoSuchNamespaceError):
                fresh[namespace] = catalog.list_tables(namespace)
        if not delegated:
            self._listing = (time.monotonic(), fresh)
        return fresh

    def catalog_for(self, principal: Principal) -> CatalogRouter:
        """The catalog as `principal` sees it: the service's own, or, asking an upstream REST catalog as the
        caller (rest_catalog_delegation), one whose upstream is asked with the caller's token."""
        if not self.settings.rest_catalog_delegation or principal.token is None:
            return self.catalog
        token = principal.token
        return CatalogRouter(
            [source.as_caller(token) if isinstance(source, RestCatalog) else source for source in self.catalog.sources]
        )

    def issue_plan_id(self, request: CanonicalRequest, access: TableAccess, rest: bool = False) -> str:
        """The caller's own id of a plan (a REST scan plan's with `rest`), good for plan_id_ttl_seconds (REST:
        plan_ttl_seconds); a 400 when the request cannot be carried in an id."""
        ttl = self.settings.plan_ttl_seconds if rest else self.settings.plan_id_ttl_seconds
        return self.plan_ids.issue(request, access.principal.key, ttl, rest)

    def open_plan_id(self, plan_id: str, access: TableAccess, rest: bool = False) -> CanonicalRequest:
        """The request a plan id carries, when it was issued to this principal at this door, has not expired,
        and the principal may still plan the table by the name the id carries, which must still name the table
        planned (a grant revoked, a table renamed or replaced since: the id is as unknown as any)."""
        request = self.plan_ids.open(plan_id, access.principal.key, rest)
        if request.table == request.metadata_location:
            self.require_location(request.metadata_location, access, Privilege.PLAN)
            return request
        identifier = TableIdentifier.parse(request.table)
        access.require(identifier, Privilege.PLAN)
        if not self._still_named(identifier, request.metadata_location, access.principal):
            raise NoSuchPlanIdError(
                f"Plan id {plan_id[:64]!r} names table {identifier}, which is no longer the table it was planned on "
                "(renamed, dropped or replaced since): plan the scan again"
            )
        planned = request.scan.restriction
        now = self._restriction_now(access, identifier, request) if access.restricts else None
        if (planned and planned.to_json()) != (now and now.to_json()):
            raise NoSuchPlanIdError(
                f"Plan id {plan_id[:64]!r} was planned under read restrictions other than the caller's now (the "
                "access rules changed since): plan the scan again"
            )
        return request

    def _restriction_now(
        self, access: TableAccess, identifier: TableIdentifier, request: CanonicalRequest
    ) -> ScanRestriction | None:
        """The caller's read restrictions on a plan id's table, bound as they are now to the table version it
        was planned on (None: none)."""
        restriction = access.restriction(identifier)
        if restriction is None:
            return None
        schema = load_by_metadata_location(self.io, request.metadata_location).metadata.schema
        return ScanRestriction.of_rule(restriction, schema, request.table)

    def _still_named(self, identifier: TableIdentifier, metadata_location: str, principal: Principal) -> bool:
        """Whether `identifier` names, now, the table of `metadata_location` (its directory): asked of the catalog
        (as the caller, with rest_catalog_delegation) at most every NAME_CHECK_SECONDS per name and caller."""
        key = (str(identifier), principal.key if self.settings.rest_catalog_delegation else "", metadata_location)
        now = time.monotonic()
        checked = self._names_checked.get(key)
        if checked is not None and now - checked < NAME_CHECK_SECONDS:
            return True
        try:
            current = self.catalog_for(principal).load_table(identifier)
        except NoSuchTableError:
            return False
        if table_directory(current.metadata_location) != table_directory(metadata_location):
            return False
        if len(self._names_checked) >= 65_536:
            self._names_checked.clear()
        self._names_checked[key] = now
        return True

    def load_planned(self, principal: Principal, table: str, metadata_location: str) -> LoadedTable:
        """The table a plan id names, at the metadata file it was planned on. Loaded through the catalog
        first when it is a catalog name: the catalog vouches for the table's location (a replica that never
        served the table may read it) and hands out the storage credentials it is read with; only then is
        it vouched for (credentials vended)."""
        vouched, vended = False, None
        if table != metadata_location:
            with contextlib.suppress(PlannerError):
                found = self.catalog_for(principal).load_table(TableIdentifier.parse(table))
                vouched, vended = found.vouched, found.vended
        loaded = load_by_metadata_location(self.io, metadata_location)
        return LoadedTable(table, loaded.metadata_location, loaded.metadata, vouched, vended)

    def caches(self) -> dict[str, LruCache[Any]]:
        """Every cache by name, for metrics."""
        caches: dict[str, LruCache[Any]] = {"table-metadata": self.io.parsed, **self.planner.caches()}
        return {
            **caches,
            "plans": self.plans.cache,
            "plan-bodies": self.plans.bodies,
            "explained-plans": self.explained,
        }

    def close(self) -> None:
        self.planner.close()
        if self.plans.spill is not None:
            self.plans.spill.close()
        if self.scan_reports is not None:
            self.scan_reports.close()


def explained_plans(max_bytes: int) -> LruCache[CachedPlan]:
    """A cache of explained plans, each weighed with the indexes its explanation holds."""

    def weight(result: CachedPlan) -> int:
        explain = result.plan.explain
        return result.weight + (explain.nbytes if explain is not None else 0)

    return LruCache(max_bytes, weight)


def service_roots(settings: Settings) -> Roots:
    """The `allowed_roots` setting when given; otherwise what the service was configured to serve: the
    warehouse, the explicit tables' directories, the demo warehouse, and the tables its catalogs name."""
    if settings.allowed_roots:
        return Roots(settings.allowed_roots)
    roots = [table_root(location) for location in settings.tables.values()]
    if settings.warehouse:
        roots.append(settings.warehouse)
    if settings.serves_demo:
        from planner_service.demo import default_demo_dir

        roots.append(settings.demo_dir or str(default_demo_dir()))
    return Roots(roots, follow_catalogs=True)


def credential_vendor(settings: Settings) -> CredentialVendor | None:
    s3 = storage_config(settings).s3
    if settings.vend_credentials == "static":
        return StaticVendor(settings.vended_storage_properties, s3)
    if settings.vend_credentials == "sts":
        assert settings.sts_role_arn is not None
        return StsVendor(
            settings.sts_role_arn, s3, settings.sts_endpoint, settings.sts_region, settings.sts_duration_seconds
        )
    return None


def rest_catalog_config(settings: Settings) -> RestCatalogConfig | None:
    if not settings.rest_catalog_uri:
        return None
    return RestCatalogConfig(
        uri=settings.rest_catalog_uri,
        warehouse=settings.rest_catalog_warehouse,
        prefix=settings.rest_catalog_prefix,
        credential=settings.rest_catalog_credential,
        token=settings.rest_catalog_token,
        oauth2_server_uri=settings.rest_catalog_oauth2_server_uri,
        scope=settings.rest_catalog_scope,
        timeout_seconds=settings.rest_catalog_timeout_seconds,
        delegation_seconds=settings.rest_catalog_delegation_seconds,
    )


def _index_store(settings: Settings) -> IndexStore | None:
    """The object store the index's disk tier is shared through, read and written within its prefix alone."""
    if not settings.index_store:
        return None
    return IndexStore(file_io(settings, Roots([settings.index_store])), settings.index_store)


def file_io(settings: Settings, roots: Roots) -> FileIO:
    """Storage as the settings describe it (S3 endpoint and credentials), read within `roots`."""
    return FileIO(storage_config(settings), roots, settings.max_file_bytes, settings.max_inflated_bytes)


def storage_config(settings: Settings) -> StorageConfig:
    """The stores' settings (s3_*, gcs_*, adls_*) as iceberg_io's configuration."""
    s3 = S3Config(
        endpoint=settings.s3_endpoint,
        region=settings.s3_region,
        access_key_id=settings.s3_access_key_id,
        secret_access_key=settings.s3_secret_access_key,
        session_token=settings.s3_session_token,
        path_style=settings.s3_path_style,
        connect_timeout=settings.s3_connect_timeout_seconds,
        request_timeout=settings.s3_request_timeout_seconds,
    )
    gcs = GcsConfig(
        endpoint=settings.gcs_endpoint,
        project_id=settings.gcs_project_id,
        oauth2_token=settings.gcs_oauth2_token,
        anonymous=settings.gcs_anonymous,
    )
    azure = AzureConfig(
        account_name=settings.adls_account_name,
        account_key=settings.adls_account_key,
        sas_token=settings.adls_sas_token,
        blob_storage_authority=settings.adls_blob_storage_authority,
        dfs_storage_authority=settings.adls_dfs_storage_authority or settings.adls_blob_storage_authority,
        blob_storage_scheme=settings.adls_storage_scheme,
        dfs_storage_scheme=settings.adls_storage_scheme,
    )
    return StorageConfig(s3, gcs, azure)


def _demo_catalog(io: FileIO, settings: Settings) -> SqlCatalog:
    from planner_service.demo import DEMO_CATALOG_NAME, demo_catalog_uri, ensure_demo_warehouse

    directory = ensure_demo_warehouse(Path(settings.demo_dir) if settings.demo_dir else None)
    log.info("serving the demo warehouse", extra={"directory": str(directory)})
    return SqlCatalog(io, demo_catalog_uri(directory), DEMO_CATALOG_NAME)

"""Service settings: environment variables (SCAN_PLANNER_*), a TOML or JSON config file, CLI flags.

Precedence: CLI flags > environment > config file > defaults. With no catalog configured at all, the
service serves the embedded demo warehouse (created on first start).

    SCAN_PLANNER_WAREHOUSE=/data/warehouse          Hadoop-style tables at WAREHOUSE/ns/name
    SCAN_PLANNER_CATALOG_URI=sqlite:////data/cat.db  a SQL catalog (iceberg_tables); or postgresql+psycopg://...
    SCAN_PLANNER_TABLES='{"db.events": "s3://b/t/metadata/v3.metadata.json"}'   explicit locations
    SCAN_PLANNER_REST_CATALOG_URI=https://catalog.example.com/api/catalog   an upstream Iceberg REST catalog
        (and _REST_CATALOG_WAREHOUSE, _REST_CATALOG_CREDENTIAL=client_id:secret or _REST_CATALOG_TOKEN)
    SCAN_PLANNER_ALLOWED_ROOTS='["/data", "s3://lake"]'   locations outside are refused (403)
    SCAN_PLANNER_S3_ENDPOINT=http://127.0.0.1:9000 (and _S3_REGION, _S3_ACCESS_KEY_ID, _S3_SECRET_ACCESS_KEY)
"""

from __future__ import annotations

import json
import os
import tempfile
import tomllib
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from planner_service.errors import BadRequestError
from planner_service.io.fileio import MAX_FILE_BYTES, MAX_INFLATED_BYTES
from planner_service.io.roots import absolute

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def default_manifest_threads() -> int:
    """Threads reading and decoding manifests: one per core this process may run on, at most 4."""
    return min(4, len(os.sched_getaffinity(0)))


class Settings(BaseSettings):
    # hide_input_in_errors: a setting of the wrong shape is named, never echoed (it may be a key or a token)
    model_config = SettingsConfigDict(env_prefix="SCAN_PLANNER_", extra="forbid", hide_input_in_errors=True)

    # where tables come from (any combination; explicit tables first, then the SQL catalog, then the warehouse)
    warehouse: str | None = None
    catalog_uri: str | None = None
    catalog_name: str = "default"
    tables: dict[str, str] = Field(default_factory=dict)
    # an upstream Iceberg REST catalog (catalog/rest.py): its base URI (without /v1), warehouse, prefix, and
    # either OAuth2 client credentials ("client_id:client_secret") or a bearer token
    rest_catalog_uri: str | None = None
    rest_catalog_warehouse: str | None = None
    rest_catalog_prefix: str | None = None
    rest_catalog_credential: str | None = Field(default=None, repr=False)
    rest_catalog_token: str | None = Field(default=None, repr=False)
    rest_catalog_oauth2_server_uri: str | None = None  # default {rest_catalog_uri}/v1/oauth/tokens
    rest_catalog_scope: str = "catalog"
    rest_catalog_timeout_seconds: float = Field(default=30.0, gt=0)
    rest_catalog_report_metrics: bool = False  # POST each plan's ScanReport to the catalog's metrics endpoint
    demo: bool | None = None  # None: serve the demo warehouse when no catalog is configured
    demo_dir: str | None = None

    # storage
    allowed_roots: list[str] = Field(default_factory=list)
    max_file_bytes: int = MAX_FILE_BYTES  # the most one read of a metadata file, manifest list or manifest takes
    max_inflated_bytes: int = Field(default=MAX_INFLATED_BYTES, gt=0)  # ... and the most its Avro blocks inflate to
    s3_endpoint: str | None = None
    s3_region: str | None = None
    s3_access_key_id: str | None = None
    s3_secret_access_key: str | None = Field(default=None, repr=False)
    s3_session_token: str | None = Field(default=None, repr=False)
    s3_path_style: bool = True
    # Google Cloud Storage (gs://) and Azure (abfs[s]://, wasb[s]://), in the style of S3's settings; an
    # emulator is gcs_endpoint = "http://127.0.0.1:4443" or adls_blob_storage_authority = "127.0.0.1:10000"
    gcs_endpoint: str | None = None
    gcs_project_id: str | None = None
    gcs_oauth2_token: str | None = Field(default=None, repr=False)
    gcs_anonymous: bool = False
    adls_account_name: str | None = None  # for locations that name no account (abfs://container/path)
    adls_account_key: str | None = Field(default=None, repr=False)
    adls_sas_token: str | None = Field(default=None, repr=False)
    adls_blob_storage_authority: str | None = None
    adls_dfs_storage_authority: str | None = None
    adls_storage_scheme: str | None = None  # http for an emulator
    # vended credentials (io/vending.py): "static" hands out vended_storage_properties, "sts" short-lived
    # keys from STS AssumeRole of sts_role_arn scoped to the table's location; with tables and plans
    vend_credentials: Literal["off", "static", "sts"] = "off"
    vended_storage_properties: dict[str, str] = Field(default_factory=dict, repr=False)
    sts_role_arn: str | None = None
    sts_endpoint: str | None = None  # default: AWS's
    sts_region: str | None = None  # default: s3_region
    sts_duration_seconds: int = Field(default=3600, ge=900, le=43200)
    s3_connect_timeout_seconds: float = Field(default=5.0, gt=0)  # a store that does not answer: 503 after these
    s3_request_timeout_seconds: float = Field(default=30.0, gt=0)

    # serving
    host: str = "127.0.0.1"
    port: int = 8181
    workers: int = 1
    log_level: str = "info"
    # FastAPI's native OpenTelemetry (spans, metrics, logs to the globally configured providers); off, its
    # per-request check (environment lookups) is skipped as well
    opentelemetry: bool = False
    max_body_bytes: int = 1024 * 1024
    cors_allowed_origins: list[str] = Field(default_factory=list)  # web pages allowed to call (CORS); none
    body_timeout_seconds: float = 30.0  # a request body that stops arriving for this long is answered 408
    # how long an idle keep-alive connection stays open: longer than clients keep theirs in their pools
    # (a server closing one first races with its reuse: Java's HTTP client then fails "failed to respond")
    keep_alive_seconds: int = Field(default=75, gt=0)
    cache_bytes: int = 512 * 1024 * 1024

    # authentication (on when any token or client is configured): bearer tokens on every route but /health
    auth_tokens: list[str] = Field(default_factory=list, repr=False)  # static bearer tokens
    oauth_clients: dict[str, str] = Field(
        default_factory=dict, repr=False
    )  # client id -> secret (POST /v1/oauth/tokens)
    token_signing_key: str | None = Field(default=None, repr=False)  # signs issued tokens (default: random per start)
    token_ttl_seconds: int = Field(default=3600, gt=0)
    allow_anonymous: bool = False  # serve without authentication on a non-loopback host
    plan_cache_bytes: int = 512 * 1024 * 1024  # finished plans and encoded /plan bodies, by canonical request
    # finished plans too big for the plan cache, kept on local disk (memory-mapped) so that fetching their tasks
    # by id does not plan them again; "" turns it off. Each process uses its own subdirectory, removed at exit
    plan_spill_directory: str = Field(default_factory=lambda: str(Path(tempfile.gettempdir()) / "scan-planner-plans"))
    plan_spill_bytes: int = Field(default=16 * 1024**3, ge=0)  # the most the spilled plans take on disk
    inline_task_limit: int = 10_000  # /plan answers larger plans with their id (tasks: GET /plans/{id}/tasks)
    max_concurrent_plans: int = 2  # plans made at once (each holds its plan's columns); others queue
    plan_queue_seconds: float = 30.0  # a plan that waits longer for its turn is answered 503 + Retry-After
    # a plan still being made after this long (storage slow or failing) stops: 503 + Retry-After; None: no limit
    plan_timeout_seconds: float | None = Field(default=300.0, gt=0)
    # on SIGTERM: /health answers 503 "draining" while the service still serves, this long (longer than the
    # balancer takes to notice), then it stops taking connections and finishes what it has (service/lifecycle.py)
    shutdown_drain_seconds: float = Field(default=5.0, ge=0)
    shutdown_grace_seconds: float = Field(default=60.0, gt=0)  # requests still running then are cut off
    plan_memory_bytes: int = 1024 * 1024 * 1024  # estimated memory of the plans made at once (a bigger one: alone)
    max_waiting_plans: int = 2  # plans waiting for their turn; more are answered 503 + Retry-After at once
    # threads reading and decoding manifests: one per core this process may run on, at most 4 (more threads
    # than cores only contend for the GIL: bench/cold_stages.py, docs/benchmarks.md)
    manifest_threads: int = Field(default_factory=default_manifest_threads, gt=0)
    # threads for blocking work (planning, storage, plans waiting their turn); /health and /metrics need none
    worker_threads: int = Field(default=8, gt=0)
    # how long a thread holds the GIL before another may take it (None: Python's 5 ms). 1 ms lets the event
    # loop (/health) in sooner under load; cold full plans take no longer since manifest framing moved to C
    # (bench/sturdy_bench.py, scale_bench.py; README "Under load")
    gil_switch_seconds: float | None = Field(default=0.001, gt=0)

    # REST scan planning: plans with more file scan tasks than this are paged through plan-tasks
    plan_task_page_size: int = 1000
    # plan-task tokens a page's answer lists: 0 lists every further page on the first answer (fetched in
    # parallel); N > 0 nests them, each answer listing at most N more (the spec's nested plan tasks)
    plan_task_fanout: int = Field(default=0, ge=0)
    # a REST plan not made within `rest_plan_wait_seconds` is answered `submitted` (planning goes on; clients
    # poll); one of a snapshot with more data files than `async_plan_min_files` (None: no such size) at once
    rest_plan_wait_seconds: float = Field(default=10.0, gt=0)
    async_plan_min_files: int | None = Field(default=None, ge=0)
    plan_ttl_seconds: int = 600
    # which REST clients /v1/config tells to plan here (its defaults carry scan-planning-mode=server): "auto",
    # the clients known to plan every table correctly through the service (Iceberg Java 1.11+, by the
    # X-Client-Version it sends); "all", every client; "off", none. A client's own setting wins either way.
    advertise_server_planning: Literal["auto", "all", "off"] = "auto"

    @field_validator("advertise_server_planning", mode="before")
    @classmethod
    def _advertising(cls, value: object) -> object:
        """The boolean of earlier releases: true was every client, false none."""
        if isinstance(value, bool) or (isinstance(value, str) and value.lower() in ("true", "false")):
            return "all" if str(value).lower() == "true" else "off"
        return value

    @field_validator("warehouse", "demo_dir", mode="after")
    @classmethod
    def _absolute(cls, location: str | None) -> str | None:
        """A relative local path is taken from the working directory at start (the roots compare full paths)."""
        return absolute(location) if location else location

    @field_validator("allowed_roots", mode="after")
    @classmethod
    def _absolute_roots(cls, roots: list[str]) -> list[str]:
        return [absolute(r) for r in roots]

    @field_validator("tables", mode="after")
    @classmethod
    def _absolute_tables(cls, tables: dict[str, str]) -> dict[str, str]:
        return {name: absolute(location) for name, location in tables.items()}

    @model_validator(mode="after")
    def _threads_for_waiting_plans(self) -> Settings:
        """A plan waiting for its turn holds a worker thread: the waiting ones must leave some for the rest."""
        needed = self.max_concurrent_plans + self.max_waiting_plans + 4
        if self.worker_threads < needed:
            raise ValueError(
                f"worker_threads ({self.worker_threads}) must be at least max_concurrent_plans + max_waiting_plans"
                f" + 4 = {needed}"
            )
        return self

    @model_validator(mode="after")
    def _vending(self) -> Settings:
        if self.vend_credentials == "static" and not self.vended_storage_properties:
            raise ValueError("vend_credentials = static needs vended_storage_properties (e.g. s3.access-key-id)")
        if self.vend_credentials == "sts":
            if not self.sts_role_arn:
                raise ValueError("vend_credentials = sts needs sts_role_arn, the role the credentials assume")
            if self.sts_duration_seconds <= self.plan_ttl_seconds:
                raise ValueError("sts_duration_seconds must exceed plan_ttl_seconds: a kept plan's keys must last")
        return self

    @property
    def auth_enabled(self) -> bool:
        return bool(self.auth_tokens or self.oauth_clients)

    def check_exposure(self) -> None:
        """Refuse to serve other hosts without authentication, unless allow_anonymous says so (the embedded
        demo, which holds nothing of anyone's, is served without)."""
        if self.auth_enabled or self.allow_anonymous or self.host in LOOPBACK_HOSTS or self.serves_demo:
            return
        raise BadRequestError(
            f"Refusing to serve {self.host} without authentication: set auth_tokens or oauth_clients "
            "(SCAN_PLANNER_AUTH_TOKENS, SCAN_PLANNER_OAUTH_CLIENTS), or allow_anonymous = true"
        )

    @property
    def serves_demo(self) -> bool:
        if self.demo is not None:
            return self.demo
        return not (self.warehouse or self.catalog_uri or self.tables or self.rest_catalog_uri)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, _ConfigFileSource(settings_cls)


_config_file: ContextVar[str | None] = ContextVar("scan_planner_config_file", default=None)


class _ConfigFileSource(PydanticBaseSettingsSource):
    """The config file named by load_settings(), below the environment."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = _config_file.get()
        return read_config_file(path) if path else {}


def read_config_file(path: str) -> dict[str, Any]:
    """A TOML or JSON file of settings (keys as the field names, e.g. `warehouse = "/data"`)."""
    file = Path(path)
    try:
        text = file.read_bytes()
    except OSError as exc:
        raise BadRequestError(f"Cannot read config file {path}: {exc.strerror}") from None
    try:
        data = json.loads(text) if file.suffix == ".json" else tomllib.loads(text.decode())
    except ValueError as exc:  # tomllib.TOMLDecodeError is a ValueError
        raise BadRequestError(f"Invalid config file {path}: {exc}") from None
    if not isinstance(data, dict):
        raise BadRequestError(f"Invalid config file {path}: expected a table of settings")
    return {str(k).replace("-", "_"): v for k, v in data.items()}


def load_settings(config_file: str | None = None, **overrides: Any) -> Settings:
    """Defaults < config file < environment < overrides (CLI flags; None values are ignored)."""
    token = _config_file.set(config_file)
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        raise BadRequestError(f"Invalid settings: {exc}") from None
    finally:
        _config_file.reset(token)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings (tests override the dependency instead)."""
    return load_settings()

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

import hashlib
import json
import os
import shutil
import tempfile
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from planner_service.access_rules import AccessRule
from planner_service.errors import BadRequestError
from planner_service.io.fileio import MAX_FILE_BYTES, MAX_INFLATED_BYTES
from planner_service.io.roots import absolute

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def default_manifest_threads() -> int:
    """Threads reading and decoding manifests: one per core this process may run on, at most 4."""
    return min(4, len(os.sched_getaffinity(0)))


class Settings(BaseSettings):
    """Every setting of the service. Each field's docstring is its meaning in the generated reference
    (docs/reference/settings.md); a field without one fails tests/docs/test_reference.py."""

    # hide_input_in_errors: a setting of the wrong shape is named, never echoed (it may be a key or a token)
    model_config = SettingsConfigDict(
        env_prefix="SCAN_PLANNER_", extra="forbid", hide_input_in_errors=True, use_attribute_docstrings=True
    )

    # where tables come from (any combination; explicit tables first, then the SQL catalog, then the warehouse)
    warehouse: str | None = None
    """A directory (or object-store prefix) of Hadoop-style tables: table `ns.name` is `WAREHOUSE/ns/name`."""
    catalog_uri: str | None = None
    """A SQL catalog (Iceberg's JDBC/SQL catalog layout, table `iceberg_tables`): a SQLite path, or a
    SQLAlchemy URL such as `postgresql+psycopg://user@host/db`."""
    catalog_name: str = "default"
    """The `catalog_name` column the SQL catalog's rows are read under."""
    tables: dict[str, str] = Field(default_factory=dict)
    """Explicit tables: name to metadata.json location, e.g. `{"db.events": "s3://b/t/metadata/v3.metadata.json"}`;
    looked up before any catalog."""
    rest_catalog_uri: str | None = None
    """An upstream Iceberg REST catalog (Polaris, Gravitino, Lakekeeper, Nessie, Unity, Glue): its base URI,
    without `/v1`. Tables are loaded from it and planned here."""
    rest_catalog_warehouse: str | None = None
    """The `warehouse` sent to the upstream REST catalog's `/v1/config`."""
    rest_catalog_prefix: str | None = None
    """The upstream REST catalog's path prefix; beats the prefix in `/v1/config`'s defaults, not in its
    overrides."""
    rest_catalog_credential: str | None = Field(default=None, repr=False)
    """OAuth2 client credentials for the upstream REST catalog, as `client_id:client_secret`."""
    rest_catalog_token: str | None = Field(default=None, repr=False)
    """A bearer token for the upstream REST catalog (instead of `rest_catalog_credential`)."""
    rest_catalog_oauth2_server_uri: str | None = None
    """Where client credentials are exchanged for a token (default `{rest_catalog_uri}/v1/oauth/tokens`)."""
    rest_catalog_scope: str = "catalog"
    """The OAuth2 scope asked for with the client credentials."""
    rest_catalog_timeout_seconds: float = Field(default=30.0, gt=0)
    """How long one request to the upstream REST catalog may take before it fails (503)."""
    rest_catalog_delegation: bool = False
    """Ask the upstream REST catalog as the caller: the caller's bearer token (and X-Iceberg-Access-Delegation)
    goes to it for listings and LoadTable, so the upstream's grants decide per caller and its vended
    credentials pass through; the service's own credentials are not used for the caller's requests."""
    rest_catalog_delegation_seconds: float = Field(default=5.0, ge=0)
    """How long the upstream's answers to a caller (LoadTable, listings) are kept per caller and table: a plan
    a second costs no LoadTable each, and a revoked grant takes effect within this."""
    rest_catalog_report_metrics: bool = False
    """POST each plan's ScanReport to the upstream catalog's metrics endpoint."""
    demo: bool | None = None
    """Serve the embedded demo warehouse (table `demo.events`); unset: only when no catalog is configured."""
    demo_dir: str | None = None
    """Where the demo warehouse is created (default `$SCAN_PLANNER_HOME/demo-warehouse`, the home being
    `~/.local/share/scan-planner`)."""

    # storage
    allowed_roots: list[str] = Field(default_factory=list)
    """The only locations read (directories, `s3://bucket/prefix`, ...); a table or file outside is refused
    with 403. Unset: what the service was configured to serve (the warehouse, each explicit table's
    directory, the demo warehouse, every table its catalogs name)."""
    max_file_bytes: int = MAX_FILE_BYTES
    """The most one read of a metadata file, manifest list or manifest may take (bytes); a bigger file is 422."""
    max_inflated_bytes: int = Field(default=MAX_INFLATED_BYTES, gt=0)
    """The most one file's Avro blocks may inflate to (bytes): a decompression bomb is 422."""
    s3_endpoint: str | None = None
    """An S3-compatible endpoint (MinIO, moto, Ceph), e.g. `http://127.0.0.1:9000`; unset: AWS."""
    s3_region: str | None = None
    """The S3 region."""
    s3_access_key_id: str | None = None
    """The S3 access key id; unset: the AWS SDK's default chain (environment, profile, instance role)."""
    s3_secret_access_key: str | None = Field(default=None, repr=False)
    """The S3 secret access key."""
    s3_session_token: str | None = Field(default=None, repr=False)
    """An S3 session token, with temporary keys."""
    s3_path_style: bool = True
    """Address buckets by path (`endpoint/bucket/key`) rather than by virtual host."""
    gcs_endpoint: str | None = None
    """A Google Cloud Storage endpoint (`gs://`), e.g. an emulator at `http://127.0.0.1:4443`."""
    gcs_project_id: str | None = None
    """The Google Cloud project."""
    gcs_oauth2_token: str | None = Field(default=None, repr=False)
    """An OAuth2 access token for Google Cloud Storage; unset: the default credentials."""
    gcs_anonymous: bool = False
    """Read Google Cloud Storage without credentials (public buckets, emulators)."""
    adls_account_name: str | None = None
    """The Azure storage account, for locations that name none (`abfs://container/path`)."""
    adls_account_key: str | None = Field(default=None, repr=False)
    """The Azure storage account key."""
    adls_sas_token: str | None = Field(default=None, repr=False)
    """An Azure SAS token (instead of the account key)."""
    adls_blob_storage_authority: str | None = None
    """The Azure blob endpoint's host and port, e.g. `127.0.0.1:10000` for Azurite."""
    adls_dfs_storage_authority: str | None = None
    """The Azure Data Lake (dfs) endpoint's host and port."""
    adls_storage_scheme: str | None = None
    """`http` for an emulator; unset: `https`."""
    vend_credentials: Literal["off", "static", "sts"] = "off"
    """Hand storage credentials to clients with tables and plans (Iceberg's vended credentials): `static`
    hands out `vended_storage_properties`; `sts` short-lived keys from STS AssumeRole of `sts_role_arn`,
    scoped to the table's location."""
    vended_storage_properties: dict[str, str] = Field(default_factory=dict, repr=False)
    """The storage properties `static` vending hands out, e.g. `{"s3.access-key-id": "...", ...}`."""
    sts_role_arn: str | None = None
    """The role STS vending assumes."""
    sts_endpoint: str | None = None
    """The STS endpoint; unset: AWS's."""
    sts_region: str | None = None
    """The STS region; unset: `s3_region`."""
    sts_duration_seconds: int = Field(default=3600, ge=900, le=43200)
    """How long vended STS keys last; more than `plan_ttl_seconds`, so that a kept plan's keys last."""
    s3_connect_timeout_seconds: float = Field(default=5.0, gt=0)
    """A store that does not accept a connection within this is answered 503."""
    s3_request_timeout_seconds: float = Field(default=30.0, gt=0)
    """A store request that does not finish within this is answered 503."""
    presigned_url_ttl_seconds: int = Field(default=900, gt=0, le=604_800)
    """How long the presigned GET URLs last that the answers of a plan made under read restrictions carry,
    one for each of the answer's files on S3 or Azure (`file-urls`: the restricted principal reads exactly those
    files, and gets no credentials). Made for each answer (each task fetched by id gets its own), never
    kept; a read after they expire fails, saying to plan again. At most 7 days (SigV4's limit)."""

    # serving
    host: str = "127.0.0.1"
    """The address to bind. Another host than loopback needs authentication (or `allow_anonymous`)."""
    port: int = 8181
    """The port to bind."""
    workers: int = 1
    """Worker processes (uvicorn's); each has its own caches."""
    log_level: str = "info"
    """`debug`, `info`, `warning` or `error`; logs are JSON lines on standard error."""
    opentelemetry: bool = False
    """FastAPI's native OpenTelemetry (spans, metrics, logs to the globally configured providers); off, its
    per-request check is skipped as well."""
    max_body_bytes: int = 1024 * 1024
    """The largest request body taken (bytes); a bigger one is 413."""
    cors_allowed_origins: list[str] = Field(default_factory=list)
    """Web pages allowed to call the service from a browser (CORS); none by default."""
    body_timeout_seconds: float = Field(default=30.0, gt=0)
    """A request body not all received this long after its headers is answered 408 (however it trickles)."""
    header_timeout_seconds: float = Field(default=10.0, gt=0)
    """A request whose headers are not all received this long after its first byte (or after its connection
    opened) is answered 408 and its connection closed."""
    send_timeout_seconds: float = Field(default=60.0, gt=0)
    """A client that takes none of its answer's pending output for this long (its connection's send buffer
    stays full) is dropped, and the memory its answer held is released; a slow reader that keeps reading is
    not."""
    max_connections: int = Field(default=1000, gt=0)
    """Connections and requests in progress at once (uvicorn's limit_concurrency); past it, 503."""
    keep_alive_seconds: int = Field(default=75, gt=0)
    """How long an idle keep-alive connection stays open: longer than clients keep theirs in their pools (a
    server closing one first races with its reuse)."""
    cache_bytes: int = 512 * 1024 * 1024
    """Manifests and manifest lists, decoded, kept across requests (bytes)."""

    # authentication (on when any token, client or OpenID provider is configured): bearer tokens on every
    # route but /health
    auth_tokens: list[str] | dict[str, str] = Field(default_factory=list, repr=False)
    """Static bearer tokens; any one set turns authentication on (every route but `/health`). As a table of
    name to token (`{spark-etl = "..."}`) each token is the principal of that name; as a list each is the
    principal `token-<the first 12 hex digits of the token's SHA-256>`."""
    oauth_clients: dict[str, str] = Field(default_factory=dict, repr=False)
    """OAuth2 clients, client id to secret, exchanged for tokens at `POST /v1/oauth/tokens`; any one set turns
    authentication on. The client id is the principal."""
    principal_groups: dict[str, list[str]] = Field(default_factory=dict)
    """The groups of static-token and OAuth-client principals, by principal name (an OpenID provider's tokens
    carry their own, `oidc_groups_claim`); access rules match them with `groups`."""
    oidc_issuer: str | None = None
    """An external OpenID Connect provider whose JWT access tokens are accepted: its issuer, exactly as the
    tokens' `iss` says (discovery at `{issuer}/.well-known/openid-configuration`). Turns authentication on."""
    oidc_audience: str | None = None
    """The audience (`aud`) the provider's tokens must be for; required with `oidc_issuer`."""
    oidc_jwks_uri: str | None = None
    """The provider's JWKS; unset: the discovery document's `jwks_uri`."""
    oidc_principal_claim: str = "sub"
    """The claim that names the principal (`sub`, `client_id`, `preferred_username`, ...)."""
    oidc_groups_claim: str = "groups"
    """The claim that lists the principal's groups (a list, or a space-separated string)."""
    oidc_jwks_refresh_seconds: float = Field(default=300.0, gt=0)
    """How long the provider's keys are kept before they are fetched again (a token signed with a key not
    kept fetches them at once: key rotation)."""
    token_signing_key: str | None = Field(default=None, repr=False)
    """The key that signs issued tokens and plan ids. Unset: a random key kept in `$SCAN_PLANNER_HOME/signing-key`
    (replicas on one host share it); set it to share tokens and plan ids between replicas on several hosts."""
    token_ttl_seconds: int = Field(default=3600, gt=0)
    """How long an issued token is valid; a token exchange issues one that ends when the token exchanged does."""
    access_rules: list[AccessRule] | None = None
    """The grants policy (`[[access_rules]]` tables; docs/guides/access-control.md): who may list, load,
    plan and get credentials for which tables. Unset: every authenticated caller may do everything; set,
    what no rule gives is denied. Reloaded from the settings file without a restart."""
    access_reload_seconds: float = Field(default=5.0, ge=0)
    """How often the settings file is checked for a changed policy, tokens or clients (reloaded when its
    contents change; a bad one is logged and the policy in force kept); 0: only on SIGHUP."""
    config_file: str | None = None
    """The settings file the service was started with (`--config`); the policy is reloaded from it."""
    audit_log: str | None = None
    """A file to append the audit log to (one JSON line per plan, credential vended and denial); unset: the
    service's log, logger `planner_service.audit`."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """Host names (`Host` header, without port) the service answers besides the loopback names, e.g. the
    balancer's name; `*` for any. Checked when authentication is off or this is set (DNS rebinding)."""
    allow_anonymous: bool = False
    """Serve without authentication on a host other than loopback."""
    plan_cache_bytes: int = 512 * 1024 * 1024
    """Finished plans and encoded `/plan` bodies, by canonical request (bytes)."""
    plan_spill_directory: str = Field(default_factory=lambda: str(default_spill_directory()))
    """Where finished plans too big for the plan cache are kept (memory-mapped), so that fetching their tasks
    by id does not plan them again; `""` turns it off. Each process uses its own subdirectory, removed at exit.
    The directory must belong to the service's user and be writable by nobody else (it is made so when
    absent). Default: `scan-planner-plans-<uid>` in the system's temporary directory, one per user, so that
    the users of one machine never share it."""
    plan_spill_bytes: int = Field(default=16 * 1024**3, ge=0)
    """The most the spilled plans take on disk (bytes); the oldest go first."""
    index_directory: str = Field(default_factory=lambda: str(default_index_directory()))
    """Where decoded manifests are kept on disk (the index's disk tier), read back memory-mapped by every
    worker and replica of the host that shares the directory: a restart, a new replica or another worker plans
    from them instead of decoding the manifests again. `""` turns it off. Each file is checked against the
    signing key (`token_signing_key`) when read: workers and replicas that share the directory must share the
    key. The directory must belong to the service's user and be writable by nobody else (it is made so when
    absent). Default: `scan-planner-index-<uid>` in the system's temporary directory."""
    index_bytes: int = Field(default=32 * 1024**3, ge=0)
    """The most the index's disk tier takes (bytes); the least recently used manifests go first."""
    index_store: str = ""
    """An object-store prefix (`s3://bucket/scan-planner-index`, `gs://...`, `abfss://...`) the index's disk tier
    is shared through with replicas on other hosts: a snapshot any replica planned, another plans from there
    instead of decoding its manifests. Reached with the stores' settings (s3_*, gcs_*, adls_*); the service must
    be allowed to read and write the prefix, and the replicas must share the signing key. `""`: not shared."""
    inline_task_limit: int = 10_000
    """`/plan` answers a plan with more tasks than this with its id; its tasks are fetched from
    `GET /plans/{id}/tasks`."""
    max_concurrent_plans: int = 2
    """Plans made at once (each holds its plan's columns); the others queue."""
    plan_queue_seconds: float = 30.0
    """A plan that waits longer for its turn is answered 503 with Retry-After."""
    plan_timeout_seconds: float | None = Field(default=300.0, gt=0)
    """A plan still being made after this long (storage slow or failing) stops: 503 with Retry-After; unset:
    no limit."""
    shutdown_drain_seconds: float = Field(default=5.0, ge=0)
    """On SIGTERM, `/health` answers 503 "draining" this long while the service still serves (longer than
    the balancer takes to notice); then it stops taking connections and finishes what it has."""
    shutdown_grace_seconds: float = Field(default=60.0, gt=0)
    """After draining, requests still running this long are cut off."""
    plan_memory_bytes: int = 1024 * 1024 * 1024
    """Estimated memory of the plans made at once and of the answers being sent (what a slow client has not read
    yet); a bigger plan runs alone, when nothing else is held."""
    max_waiting_plans: int = 2
    """Plans waiting for their turn; more are answered 503 with Retry-After at once."""
    manifest_threads: int = Field(default_factory=default_manifest_threads, gt=0)
    """Threads reading and decoding manifests. Default: one per core this process may run on, at most 4 (more
    threads than cores only contend for the GIL)."""
    worker_threads: int = Field(default=8, gt=0)
    """Threads for blocking work (planning, storage, plans waiting their turn); at least
    `max_concurrent_plans + max_waiting_plans + 4`. `/health` and `/metrics` need none."""
    gil_switch_seconds: float | None = Field(default=0.001, gt=0)
    """How long a thread holds the GIL before another may take it (unset: Python's 5 ms); 1 ms lets `/health`
    in sooner under load."""

    # REST scan planning
    plan_task_page_size: int = 1000
    """REST scan planning: a plan with more file scan tasks than this is paged through plan-task tokens."""
    plan_task_fanout: int = Field(default=0, ge=0)
    """Plan-task tokens a page's answer lists: 0 lists every further page on the first answer (fetched in
    parallel); N > 0 nests them, each answer listing at most N more (the spec's nested plan tasks)."""
    rest_plan_wait_seconds: float = Field(default=10.0, gt=0)
    """A REST plan not made within this is answered `submitted` (planning goes on; clients poll)."""
    async_plan_min_files: int | None = Field(default=None, ge=0)
    """A REST plan of a snapshot with more data files than this is answered `submitted` at once; unset: no
    such size."""
    plan_ttl_seconds: int = Field(default=600, gt=0)
    """How long a REST scan plan's id and plan-task tokens open after the plan was made (then: 404, plan
    again)."""
    plan_id_ttl_seconds: int = Field(default=86_400, gt=0)
    """How long a plan id of POST /plan opens after it was issued: Spark executors fetch their tasks by it
    while the job runs, so make it longer than the longest job. Ids are signed with their expiry."""
    advertise_server_planning: Literal["auto", "all", "off"] = "auto"
    """Which REST clients `/v1/config` tells to plan here (`scan-planning-mode=server` in its defaults):
    `auto`, the clients known to plan every table correctly through the service (Iceberg Java 1.11+, by the
    `X-Client-Version` it sends); `all`, every client; `off`, none. A client's own setting wins either way."""

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

    @model_validator(mode="after")
    def _oidc(self) -> Settings:
        if self.oidc_issuer and not self.oidc_audience:
            raise ValueError("oidc_issuer needs oidc_audience, the `aud` this service's tokens are issued for")
        return self

    @model_validator(mode="after")
    def _one_principal_per_name(self) -> Settings:
        """A static token and an OAuth client of one name would be one principal to the policy, with two
        credentials: refused (an OpenID subject so named is refused when it authenticates)."""
        both = sorted(set(static_token_names(self.auth_tokens)) & set(self.oauth_clients))
        if both:
            raise ValueError(
                f"auth_tokens and oauth_clients both name {', '.join(map(repr, both))}: give each principal one name"
            )
        return self

    @property
    def auth_enabled(self) -> bool:
        return bool(self.auth_tokens or self.oauth_clients or self.oidc_issuer or self.rest_catalog_delegation)

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
    given = {k: v for k, v in overrides.items() if v is not None}
    if config_file is not None:
        given.setdefault("config_file", absolute(config_file))
    try:
        return Settings(**given)
    except ValidationError as exc:
        raise BadRequestError(f"Invalid settings: {exc}") from None
    finally:
        _config_file.reset(token)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings (tests override the dependency instead)."""
    return load_settings()


# the settings a settings file decides while the service runs (access/control.AccessHolder reloads them)
RELOADED_FIELDS = (
    "auth_tokens",
    "oauth_clients",
    "principal_groups",
    "oidc_issuer",
    "oidc_audience",
    "oidc_jwks_uri",
    "oidc_principal_claim",
    "oidc_groups_claim",
    "oidc_jwks_refresh_seconds",
    "token_ttl_seconds",
    "access_rules",
)


def default_index_directory() -> Path:
    """`scan-planner-index-<uid>` in the system's temporary directory: shared by a user's workers and replicas."""
    return Path(tempfile.gettempdir()) / f"scan-planner-index-{os.getuid()}"


def default_spill_directory() -> Path:
    """`scan-planner-plans-<uid>` in the system's temporary directory: each user of a machine its own."""
    return Path(tempfile.gettempdir()) / f"scan-planner-plans-{os.getuid()}"


def static_token_names(tokens: Sequence[str] | Mapping[str, str]) -> dict[str, str]:
    """Name -> token of `auth_tokens`: the names given, or `token-<12 hex digits of its SHA-256>` for a list."""
    if isinstance(tokens, Mapping):
        return dict(tokens)
    return {f"token-{hashlib.sha256(t.encode()).hexdigest()[:12]}": t for t in tokens}


WORKER_SETTINGS = "SCAN_PLANNER_WORKER_SETTINGS"  # the file `serve --workers N` hands its workers


@contextmanager
def worker_settings_file(settings: Settings) -> Iterator[Path]:
    """The settings that differ from the defaults, in a file only this user may read (a new 0700 directory),
    for worker processes to start from (worker_settings) while the block runs; removed after. Those the
    settings file decides and reloads are left to it, so that each worker reads them from there."""
    given = settings.model_dump(mode="json", exclude_defaults=True)
    if settings.config_file:
        given = {
            k: v for k, v in given.items() if k not in RELOADED_FIELDS or f"SCAN_PLANNER_{k.upper()}" in os.environ
        }
    directory = Path(tempfile.mkdtemp(prefix="scan-planner-workers-"))
    try:
        path = directory / "settings.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(given, out)
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def worker_settings(path: str) -> Settings:
    """A worker's settings: the file its `serve` handed it (worker_settings_file), over the settings file."""
    given = json.loads(Path(path).read_text())
    return load_settings(given.pop("config_file", None), **given)

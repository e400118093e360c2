"""Tables from an upstream Iceberg REST catalog (Polaris, Gravitino, Lakekeeper, Nessie, Unity, Glue's REST
endpoint, or another scan-planner's /v1): the service is the catalog's client, as PyIceberg's and Java's
RESTCatalog are.

On first use it asks `GET /v1/config` (with `warehouse`, when set) for the catalog's `prefix` (its
`defaults`, then the `prefix` setting, then its `overrides`, as the spec merges them); LoadTable
(`GET /v1/{prefix}/namespaces/{ns}/tables/{name}`, asking for vended credentials) gives the metadata
location and metadata, and the storage properties the catalog hands out (its `config`, and its
`storage-credentials` by prefix), which the service then reads that table's manifests with. Namespaces and
tables are listed page by page.

Authentication: a bearer token from the settings, or OAuth2 client credentials (`credential` =
"client_id:client_secret") exchanged at the token endpoint (default `{uri}/v1/oauth/tokens`, as the REST
clients do) for a token that is renewed before it expires, and once more when the catalog answers 401.

Errors name the catalog: its 404s are the service's (no such table or namespace); a 401 means the service's
own credentials are refused, a 403 that its principal lacks the privilege (502 both, with the settings to
check); an unreachable catalog, a timeout or a 5xx is a 503 worth a retry.

Asked as the caller (`as_caller`, rest_catalog_delegation): the caller's bearer token goes to the catalog
instead of the service's, so the catalog's grants decide per caller; its 401 and 403 are the caller's (401,
403), and its answers are kept per caller for `delegation_seconds` (a revoked grant takes effect within that).
The credentials the catalog vends with LoadTable pass through to the caller (LoadedTable.vended).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import quote

from planner_service.catalog.base import LoadedTable, TableIdentifier
from planner_service.errors import (
    CatalogUnavailableError,
    ForbiddenError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NotAuthenticatedError,
    UpstreamCatalogError,
)
from planner_service.io.fileio import FileIO
from planner_service.io.locations import Location
from planner_service.io.roots import table_directory
from planner_service.json_text import parse_json
from planner_service.metadata.table_metadata import table_metadata_from_json

if TYPE_CHECKING:  # imported when a REST catalog is made: httpx loads click, rich and pygments too
    import httpx

log = logging.getLogger(__name__)

NAMESPACE_SEPARATOR = "\x1f"
RENEW_BEFORE_SECONDS = 60  # a token is renewed this long before it expires
MAX_PAGES = 10_000  # listing stops here, whatever the catalog's page tokens say
DELEGATION = {"X-Iceberg-Access-Delegation": "vended-credentials"}
MAX_KEPT_ANSWERS = 10_000  # callers' answers kept (the oldest go first)
T = TypeVar("T")


@dataclass(frozen=True)
class RestCatalogConfig:
    uri: str  # the catalog's base URI, without /v1
    warehouse: str | None = None  # sent to GET /v1/config
    prefix: str | None = None  # beats the `defaults` prefix of the catalog's config, not its `overrides`
    credential: str | None = None  # "client_id:client_secret" for OAuth2 client credentials
    token: str | None = None  # a bearer token
    oauth2_server_uri: str | None = None  # the token endpoint (default {uri}/v1/oauth/tokens)
    scope: str = "catalog"
    timeout_seconds: float = 30.0
    delegation_seconds: float = 5.0  # how long a caller's answers are kept (as_caller)


class RestCatalog:
    def __init__(self, io: FileIO, config: RestCatalogConfig) -> None:
        self.io = io
        self.config = config
        self.uri = config.uri.rstrip("/")
        import httpx

        self._http = httpx.Client(timeout=config.timeout_seconds, headers={"User-Agent": "scan-planner"})
        self._config_lock = threading.Lock()  # (never held while the token lock is wanted elsewhere first)
        self._token_lock = threading.Lock()
        self._prefix: str | None = None
        self.loaded: set[TableIdentifier] = set()  # tables this catalog served (their scan reports go back to it)
        self._directories: dict[Location, set[TableIdentifier]] = {}  # the tables it served, by directory
        self._token: str | None = config.token
        self._token_expires = float("inf")
        self._kept_lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, str, str], tuple[float, Any]] = OrderedDict()  # callers' answers

    def close(self) -> None:
        self._http.close()

    def as_caller(self, token: str) -> CallerCatalog:
        """The catalog as the caller with this bearer token sees it (rest_catalog_delegation)."""
        return CallerCatalog(self, token)

    # --- the Catalog protocol ----------------------------------------------------------------------------

    def load_table(self, identifier: TableIdentifier, caller: str | None = None) -> LoadedTable:
        path = self._path("namespaces", _namespace(identifier.namespace), "tables", identifier.name, caller=caller)
        missing = NoSuchTableError(f"Table does not exist: {identifier}")
        body = self._get(path, headers=DELEGATION, missing=missing, caller=caller)
        location = body.get("metadata-location")
        metadata = body.get("metadata")
        if not isinstance(location, str) or not isinstance(metadata, dict):
            raise UpstreamCatalogError(
                f"The REST catalog at {self.uri} answered LoadTable for {identifier} without a metadata location "
                "and metadata (a staged table?)"
            )
        parsed = table_metadata_from_json(metadata, location)
        if len(self.loaded) < 100_000:
            self.loaded.add(identifier)
            self._directories.setdefault(table_directory(location), set()).add(identifier)
        self._use_storage(body)
        self.io.roots.trust(location)  # the catalog vouches for the table: its directory may be read
        vended = _vended(body, parsed.location) if caller is not None else None
        return LoadedTable(str(identifier), location, parsed, vouched=True, vended=vended)

    def tables_at(self, directory: Location) -> list[TableIdentifier]:
        """The names of the tables in `directory` this catalog served (it is not listed for the others)."""
        return sorted(self._directories.get(directory, ()))

    def list_namespaces(self, caller: str | None = None) -> list[tuple[str, ...]]:
        """Every namespace, nested ones too (the REST API lists one level under a parent)."""
        found: list[tuple[str, ...]] = []
        pending: list[tuple[str, ...]] = [()]
        while pending:
            parent = pending.pop()
            params = {"parent": NAMESPACE_SEPARATOR.join(parent)} if parent else {}
            missing = NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(parent)}")
            for page in self._pages(self._path("namespaces", caller=caller), "namespaces", params, missing, caller):
                for namespace in page:
                    levels = tuple(str(level) for level in namespace)
                    if levels and levels not in found and levels[: len(parent)] == parent and levels != parent:
                        found.append(levels)
                        pending.append(levels)
        return sorted(found)

    def list_tables(self, namespace: tuple[str, ...], caller: str | None = None) -> list[TableIdentifier]:
        missing = NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(namespace)}")
        path = self._path("namespaces", _namespace(namespace), "tables", caller=caller)
        pages = self._pages(path, "identifiers", {}, missing, caller)
        return sorted(TableIdentifier(tuple(i["namespace"]), i["name"]) for page in pages for i in page)

    def report_metrics(self, identifier: TableIdentifier, report: Mapping[str, Any]) -> None:
        """POST a metrics report (a ScanReport with its report-type) to the catalog's metrics endpoint."""
        path = self._path("namespaces", _namespace(identifier.namespace), "tables", identifier.name, "metrics")
        missing = NoSuchTableError(f"Table does not exist: {identifier}")
        self._request("POST", path, json_body=dict(report), missing=missing)

    # --- storage ---------------------------------------------------------------------------------------------

    def _use_storage(self, body: Mapping[str, Any]) -> None:
        """The table's storage properties (LoadTable's `config`) for reads under its location, and each of
        `storage-credentials` for reads under its prefix (the longest prefix wins)."""
        config = body.get("config") or {}
        metadata = body.get("metadata") or {}
        table_location = metadata.get("location") if isinstance(metadata, dict) else None
        if isinstance(config, dict) and isinstance(table_location, str):
            self.io.use_storage_properties(table_location, {str(k): str(v) for k, v in config.items()})
        for credential in body.get("storage-credentials") or []:
            if isinstance(credential, dict) and isinstance(credential.get("prefix"), str):
                properties = {str(k): str(v) for k, v in (credential.get("config") or {}).items()}
                self.io.use_storage_properties(credential["prefix"], {**config, **properties})

    # --- HTTP --------------------------------------------------------------------------------------------------

    def kept(self, caller: str, kind: str, name: str, load: Callable[[], T]) -> T:
        """A caller's answer, kept for delegation_seconds (errors are not kept)."""
        key = (hashlib.sha256(caller.encode()).hexdigest(), kind, name)
        now = time.monotonic()
        with self._kept_lock:
            found = self._kept.get(key)
            if found is not None and found[0] > now:
                self._kept.move_to_end(key)
                return cast(T, found[1])
        value = load()
        if self.config.delegation_seconds > 0:
            with self._kept_lock:
                self._kept[key] = (now + self.config.delegation_seconds, value)
                while len(self._kept) > MAX_KEPT_ANSWERS:
                    self._kept.popitem(last=False)
        return value

    def _path(self, *parts: str, caller: str | None = None) -> str:
        prefix = self._catalog_prefix(caller)
        segments = ["v1", *([prefix] if prefix else []), *parts]
        return "/".join(quote(s, safe="") if i > (1 if prefix else 0) else s for i, s in enumerate(segments))

    def _catalog_prefix(self, caller: str | None = None) -> str | None:
        with self._config_lock:
            if self._prefix is None:
                params = {"warehouse": self.config.warehouse} if self.config.warehouse else {}
                own = self.config.credential or self.config.token
                body = self._request("GET", "v1/config", params=params, missing=None, caller=None if own else caller)
                self._prefix = configured_prefix(body, self.config.prefix)
            return self._prefix or None

    def _pages(
        self, path: str, key: str, params: dict[str, str], missing: Exception, caller: str | None = None
    ) -> list[list[Any]]:
        pages: list[list[Any]] = []
        token: str | None = None
        for _ in range(MAX_PAGES):
            query = {**params, **({"pageToken": token} if token else {})}
            body = self._get(path, params=query, missing=missing, caller=caller)
            pages.append(list(body.get(key) or []))
            token = body.get("next-page-token")
            if not token:
                break
        return pages

    def _get(
        self,
        path: str,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        missing: Exception | None = None,
        caller: str | None = None,
    ) -> dict[str, Any]:
        return self._request("GET", path, params=params, headers=headers, missing=missing, caller=caller)

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        missing: Exception | None,
        json_body: dict[str, Any] | None = None,
        caller: str | None = None,
    ) -> dict[str, Any]:
        url = f"{self.uri}/{path}"
        if caller is not None:  # the caller's own token, as it is: its 401 and 403 are the caller's
            response = self._send(method, url, params, {**(headers or {}), "Authorization": f"Bearer {caller}"})
            return self._caller_answer(method, path, response, missing)
        for attempt in range(2):
            auth = self._authorization(renew=attempt > 0)
            response = self._send(method, url, params, {**(headers or {}), **auth}, json_body)
            if response.status_code == 401 and attempt == 0 and self.config.credential:
                continue  # the token may have been revoked or expired early: a new one, once
            return self._answer(method, path, response, missing)
        raise AssertionError("unreachable")

    def _send(
        self,
        method: str,
        url: str,
        params: dict[str, str] | None,
        headers: dict[str, str],
        json_body: dict[str, Any] | None = None,
    ) -> httpx.Response:
        import httpx

        try:
            return self._http.request(method, url, params=params, headers=headers, json=json_body)
        except httpx.TimeoutException:
            raise CatalogUnavailableError(
                f"The REST catalog at {self.uri} did not answer within {self.config.timeout_seconds:g} s "
                "(rest_catalog_timeout_seconds)"
            ) from None
        except httpx.HTTPError as exc:
            raise CatalogUnavailableError(f"Cannot reach the REST catalog at {self.uri}: {exc}") from None

    def _caller_answer(
        self, method: str, path: str, response: httpx.Response, missing: Exception | None
    ) -> dict[str, Any]:
        """An answer to a caller's request: 404 is the service's missing table or namespace (in its own words:
        nothing of the upstream's), 401 and 403 the caller's, the rest as for the service's own requests."""
        if response.status_code == 404 and missing is not None:
            raise missing
        if response.status_code == 401:
            raise NotAuthenticatedError(
                f"The REST catalog at {self.uri} refused the caller's token ({_upstream_message(response)})"
            )
        if response.status_code == 403:
            raise ForbiddenError(f"The REST catalog at {self.uri} forbade it: {_upstream_message(response)}")
        return self._answer(method, path, response, missing)

    def _answer(self, method: str, path: str, response: httpx.Response, missing: Exception | None) -> dict[str, Any]:
        status = response.status_code
        if status == 204:
            return {}
        if status == 200:
            try:
                body = parse_json(response.content)
            except ValueError as exc:
                raise UpstreamCatalogError(
                    f"The REST catalog at {self.uri} answered {method} /{path} with no JSON object: {exc}"
                ) from None
            if not isinstance(body, dict):
                raise UpstreamCatalogError(f"The REST catalog at {self.uri} answered {method} /{path} with no object")
            return body
        message = _upstream_message(response)
        if status == 404 and missing is not None:
            raise type(missing)(f"{missing} (REST catalog at {self.uri}: {message})")
        if status == 401:
            raise UpstreamCatalogError(
                f"The REST catalog at {self.uri} refused the service's credentials for {method} /{path}: "
                f"401 Unauthorized ({message}); check rest_catalog_credential or rest_catalog_token"
            )
        if status == 403:
            raise UpstreamCatalogError(
                f"The REST catalog at {self.uri} forbade {method} /{path} to the service: 403 Forbidden "
                f"({message}); grant the service's principal that privilege in the catalog, or check "
                "rest_catalog_credential, rest_catalog_token and rest_catalog_scope"
            )
        if status >= 500 or status == 429:
            raise CatalogUnavailableError(f"The REST catalog at {self.uri} failed {method} /{path}: {status} {message}")
        raise UpstreamCatalogError(f"The REST catalog at {self.uri} answered {method} /{path} with {status} {message}")

    # --- authentication ------------------------------------------------------------------------------------

    def _authorization(self, renew: bool = False) -> dict[str, str]:
        if self.config.credential:
            with self._token_lock:
                if renew or self._token is None or time.monotonic() > self._token_expires - RENEW_BEFORE_SECONDS:
                    self._token, self._token_expires = self._fetch_token()
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def _fetch_token(self) -> tuple[str, float]:
        """OAuth2 client credentials at the token endpoint: (the token, when it expires, monotonic)."""
        assert self.config.credential is not None
        client_id, sep, secret = self.config.credential.partition(":")
        if not sep:
            client_id, secret = "", self.config.credential  # a secret alone, as PyIceberg takes it
        endpoint = self.config.oauth2_server_uri or f"{self.uri}/v1/oauth/tokens"
        form = {
            "grant_type": "client_credentials",
            "client_id": client_id,
            "client_secret": secret,
            "scope": self.config.scope,
        }
        import httpx

        try:
            response = self._http.post(endpoint, data=form)
        except httpx.HTTPError as exc:
            raise CatalogUnavailableError(f"Cannot reach the REST catalog's token endpoint {endpoint}: {exc}") from None
        if response.status_code != 200:
            if response.status_code >= 500:
                raise CatalogUnavailableError(f"The token endpoint {endpoint} failed: {response.status_code}")
            raise UpstreamCatalogError(
                f"The token endpoint {endpoint} refused the service's client credentials: {response.status_code} "
                f"{_upstream_message(response)}; check rest_catalog_credential"
            )
        try:
            body = parse_json(response.content)
            token = str(body["access_token"])
            expires_in = float(body.get("expires_in") or 3600)
        except (ValueError, KeyError, TypeError):
            raise UpstreamCatalogError(f"The token endpoint {endpoint} answered without an access_token") from None
        log.info("rest catalog token issued", extra={"catalog": self.uri, "expires-in-seconds": expires_in})
        return token, time.monotonic() + expires_in


class CallerCatalog:
    """An upstream REST catalog as one caller sees it: every request with the caller's token, every answer
    kept for the caller alone, briefly (RestCatalog.kept)."""

    def __init__(self, upstream: RestCatalog, token: str) -> None:
        self.upstream, self.token = upstream, token

    def load_table(self, identifier: TableIdentifier) -> LoadedTable:
        return self.upstream.kept(
            self.token, "table", str(identifier), lambda: self.upstream.load_table(identifier, self.token)
        )

    def list_namespaces(self) -> list[tuple[str, ...]]:
        return self.upstream.kept(self.token, "namespaces", "", lambda: self.upstream.list_namespaces(self.token))

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]:
        name = _namespace(namespace)
        return self.upstream.kept(self.token, "tables", name, lambda: self.upstream.list_tables(namespace, self.token))

    def tables_at(self, directory: Location) -> list[TableIdentifier]:
        return self.upstream.tables_at(directory)


def _vended(body: Mapping[str, Any], table_location: str) -> list[dict[str, Any]]:
    """The storage credentials a LoadTable answer vends, in the spec's form: its `storage-credentials`, else
    its `config` for the table's location when it holds any (older catalogs put keys there)."""
    found = [
        {"prefix": c["prefix"], "config": {str(k): str(v) for k, v in (c.get("config") or {}).items()}}
        for c in body.get("storage-credentials") or []
        if isinstance(c, dict) and isinstance(c.get("prefix"), str)
    ]
    config = body.get("config")
    if not found and isinstance(config, dict) and config:
        found = [{"prefix": table_location, "config": {str(k): str(v) for k, v in config.items()}}]
    return found


def configured_prefix(config: Mapping[str, Any], own: str | None) -> str:
    """The prefix of a catalog's paths ("": none) from its GET /v1/config answer and the client's own setting.
    REST spec (getConfig): "Catalog configuration is constructed by setting the defaults, then client-provided
    configuration, and finally overrides" (as Java's RESTSessionCatalog and PyIceberg merge them), so the
    setting beats the catalog's `defaults` and the catalog's `overrides` beat the setting."""
    merged: dict[str, Any] = {}
    for layer in (config.get("defaults"), {"prefix": own} if own is not None else None, config.get("overrides")):
        if isinstance(layer, Mapping):
            merged.update(layer)
    return str(merged.get("prefix") or "").strip("/")


def _namespace(levels: tuple[str, ...]) -> str:
    return NAMESPACE_SEPARATOR.join(levels)


def _upstream_message(response: httpx.Response) -> str:
    """What the catalog said: the REST ErrorModel's message, an OAuth error's description, or the reason."""
    try:
        body = parse_json(response.content)
    except ValueError:
        return response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
        if body.get("error_description"):
            return str(body["error_description"])[:500]
        if isinstance(error, str):
            return error[:500]
    return response.reason_phrase

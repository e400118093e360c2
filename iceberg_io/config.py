"""The storage configuration: one frozen dataclass per store, read from Iceberg's storage property names,
the keys catalogs vend and PyIceberg and Java's FileIOs take:

    s3.endpoint, s3.region (or client.region), s3.access-key-id, s3.secret-access-key, s3.session-token,
    s3.path-style-access, s3.connect-timeout, s3.request-timeout (seconds)
    gcs.service.host, gcs.project-id, gcs.oauth2.token, gcs.oauth2.token-expires-at (epoch ms), gcs.anonymous
    adls.account-name, adls.account-key, adls.sas-token, adls.tenant-id, adls.client-id, adls.client-secret,
    adls.blob-storage-authority, adls.dfs-storage-authority, adls.blob-storage-scheme, adls.dfs-storage-scheme

S3's keys may also be given without the `s3.` prefix (`endpoint`, `access-key-id`, ...), and underscores
work as well as dashes (`access_key_id`). Secrets never appear in a repr."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")


@dataclass(frozen=True)
class S3Config:
    endpoint: str | None = None  # e.g. http://127.0.0.1:9000: its scheme picks http or https (default https)
    region: str | None = None  # default us-east-1
    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    path_style: bool = True  # False addresses buckets as virtual hosts; MinIO and moto want True
    connect_timeout: float | None = None  # seconds; None: the AWS SDK's default
    request_timeout: float | None = None


@dataclass(frozen=True)
class GcsConfig:
    endpoint: str | None = None  # an emulator's http://host:port
    project_id: str | None = None
    oauth2_token: str | None = field(default=None, repr=False)
    oauth2_token_expires_at_ms: int | None = None  # default: an hour after the filesystem is made
    anonymous: bool = False


@dataclass(frozen=True)
class AzureConfig:
    account_name: str | None = None  # for locations that name no account (abfs://container/path)
    account_key: str | None = field(default=None, repr=False)
    sas_token: str | None = field(default=None, repr=False)
    tenant_id: str | None = None
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    blob_storage_authority: str | None = None  # an emulator such as Azurite: host:port
    dfs_storage_authority: str | None = None
    blob_storage_scheme: str | None = None  # http for an emulator
    dfs_storage_scheme: str | None = None


@dataclass(frozen=True)
class StorageConfig:
    """How to reach every store; local files need nothing."""

    s3: S3Config = S3Config()
    gcs: GcsConfig = GcsConfig()
    azure: AzureConfig = AzureConfig()

    @classmethod
    def of(cls, value: StorageConfig | Mapping[str, Any] | None) -> StorageConfig:
        """A configuration as given, or read from storage properties (None: the defaults)."""
        if isinstance(value, StorageConfig):
            return value
        return cls().with_properties(value or {})

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> StorageConfig:
        return cls().with_properties(properties)

    def with_properties(self, properties: Mapping[str, Any]) -> StorageConfig:
        """This configuration with what `properties` set over it (a vended credential over the service's or
        the user's own). Keys travel as a whole: a key id without its secret changes nothing, and a new
        pair drops the old session token, so a vended key never pairs with another secret."""
        given = {str(k).replace("_", "-").lower(): str(v) for k, v in properties.items() if v is not None}
        if not given:
            return self
        return StorageConfig(_s3(self.s3, given), _gcs(self.gcs, given), _azure(self.azure, given))


def _s3(base: S3Config, given: Mapping[str, str]) -> S3Config:
    def value(name: str) -> str | None:
        return given.get(f"s3.{name}") or given.get(name) or None

    config = base
    key_id, secret = value("access-key-id"), value("secret-access-key")
    if key_id and secret:
        config = replace(config, access_key_id=key_id, secret_access_key=secret, session_token=value("session-token"))
    region = value("region") or given.get("client.region") or None
    path_style = value("path-style-access")
    changes: dict[str, Any] = {
        "endpoint": value("endpoint"),
        "region": region,
        "path_style": _bool(path_style, "s3.path-style-access") if path_style is not None else None,
        "connect_timeout": _seconds(value("connect-timeout"), "s3.connect-timeout"),
        "request_timeout": _seconds(value("request-timeout"), "s3.request-timeout"),
    }
    return replace(config, **{name: v for name, v in changes.items() if v is not None})


def _gcs(base: GcsConfig, given: Mapping[str, str]) -> GcsConfig:
    expires = given.get("gcs.oauth2.token-expires-at")
    anonymous = given.get("gcs.anonymous")
    changes: dict[str, Any] = {
        "endpoint": given.get("gcs.service.host"),
        "project_id": given.get("gcs.project-id"),
        "oauth2_token": given.get("gcs.oauth2.token"),
        "oauth2_token_expires_at_ms": _int(expires, "gcs.oauth2.token-expires-at") if expires else None,
        "anonymous": _bool(anonymous, "gcs.anonymous") if anonymous is not None else None,
    }
    return replace(base, **{name: v for name, v in changes.items() if v not in (None, "")})


def _azure(base: AzureConfig, given: Mapping[str, str]) -> AzureConfig:
    changes = {f.name: given.get("adls." + f.name.replace("_", "-")) for f in fields(AzureConfig)}
    return replace(base, **{name: v for name, v in changes.items() if v not in (None, "")})


def _bool(text: str, key: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE or lowered in _FALSE:
        return lowered in _TRUE
    raise ValueError(f"Storage property {key} is true or false, not {text!r}")


def _int(text: str, key: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"Storage property {key} is an integer, not {text!r}") from None


def _seconds(text: str | None, key: str) -> float | None:
    if text is None:
        return None
    try:
        seconds = float(text.strip())
    except ValueError:
        raise ValueError(f"Storage property {key} is a number of seconds, not {text!r}") from None
    if seconds <= 0:
        raise ValueError(f"Storage property {key} must be positive, not {text!r}")
    return seconds

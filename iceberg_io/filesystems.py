"""pyarrow filesystems for locations: the one place that makes them, for the service, the executors' reader
and the scripts. Filesystems are kept per process and configuration (bounded), so the many reads of a plan
or of an executor's tasks share one client per store."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Mapping
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from iceberg_io.config import AzureConfig, GcsConfig, S3Config, StorageConfig
from iceberg_io.locations import Location, parse_location

MAX_KEPT = 1024  # filesystems kept (all forgotten at once beyond: each is made again on its next use)

_LOCAL = pafs.LocalFileSystem()
_KEPT: dict[Hashable, pafs.FileSystem] = {}
_LOCK = threading.Lock()


_LAST_MS = 253_402_300_799_000  # 9999-12-31T23:59:59Z, the last second a datetime holds


def resolve(location: str, config: StorageConfig | Mapping[str, Any] | None = None) -> tuple[pafs.FileSystem, str]:
    """The filesystem holding `location` and the path within it (InvalidLocation for a malformed one)."""
    return filesystem(parse_location(location), StorageConfig.of(config))


def filesystem(location: Location, config: StorageConfig) -> tuple[pafs.FileSystem, str]:
    """The filesystem a parsed location is read from, and the path within it."""
    if location.scheme == "file":
        return _LOCAL, location.path
    if location.scheme == "s3":
        return _kept(("s3", config.s3), lambda: new_s3_filesystem(config.s3)), location.path
    if location.scheme == "gs":
        return _kept(("gs", config.gcs), lambda: _gcs_filesystem(config.gcs)), location.path
    if location.scheme == "azure":
        account, _, path = location.path.partition("/")
        account = account or config.azure.account_name or ""
        if not account:
            raise ValueError("An Azure location without an account (abfs://container/path) needs adls.account-name")
        return _kept(("azure", account, config.azure), lambda: _azure_filesystem(account, config.azure)), path
    netloc, _, path = location.path.partition("/")
    return _kept(("hdfs", netloc), lambda: _hdfs_filesystem(netloc)), "/" + path


def open_input_file(
    location: str, config: StorageConfig | Mapping[str, Any] | None = None, urls: Mapping[str, str] | None = None
) -> pa.NativeFile:
    """`location` opened for random access: through its presigned URL when `urls` (a plan's `file-urls`,
    iceberg_io/presigned.py) has one, else from its store."""
    url = urls.get(location) if urls else None
    if url is not None:
        from iceberg_io.presigned import open_presigned  # (only a reader of presigned files needs httpx)

        return open_presigned(location, url)
    fs, path = resolve(location, config)
    return fs.open_input_file(path)


def read_range(
    location: str,
    offset: int,
    length: int,
    config: StorageConfig | Mapping[str, Any] | None = None,
    urls: Mapping[str, str] | None = None,
) -> bytes:
    """`length` bytes of a file from `offset` (a deletion vector inside a Puffin file); `urls` as
    open_input_file's."""
    with open_input_file(location, config, urls) as f:
        data = f.read_at(length, offset)
    if len(data) != length:
        raise OSError(f"Short read of {location}: {len(data)} of {length} bytes at offset {offset}")
    return bytes(data)


def new_s3_filesystem(config: S3Config, *, allow_bucket_creation: bool = False) -> pafs.S3FileSystem:
    """A new S3 client (not kept: `filesystem` keeps the ones it makes)."""
    scheme, endpoint = "https", config.endpoint
    if endpoint and "://" in endpoint:
        scheme, endpoint = endpoint.split("://", 1)
    return pafs.S3FileSystem(
        access_key=config.access_key_id,
        secret_key=config.secret_access_key,
        session_token=config.session_token,
        region=config.region or "us-east-1",
        endpoint_override=endpoint or None,
        scheme=scheme,
        force_virtual_addressing=not config.path_style,
        connect_timeout=config.connect_timeout,
        request_timeout=config.request_timeout,
        allow_bucket_creation=allow_bucket_creation,
    )


def _kept(key: Hashable, make: Callable[[], pafs.FileSystem]) -> pafs.FileSystem:
    with _LOCK:
        fs = _KEPT.get(key)
        if fs is None:
            if len(_KEPT) >= MAX_KEPT:
                _KEPT.clear()
            fs = _KEPT[key] = make()
        return fs


def _gcs_filesystem(config: GcsConfig) -> pafs.FileSystem:
    kwargs: dict[str, Any] = {}
    if config.endpoint:
        scheme, _, netloc = config.endpoint.partition("://")
        kwargs |= {"scheme": scheme, "endpoint_override": netloc} if netloc else {"endpoint_override": config.endpoint}
    if config.project_id:
        kwargs["project_id"] = config.project_id
    if config.oauth2_token:
        expires = config.oauth2_token_expires_at_ms or int((time.time() + 3600) * 1000)
        kwargs |= {
            "access_token": config.oauth2_token,
            # (a vended expiry past year 9999, or before 1970: as far as a datetime goes either way)
            "credential_token_expiration": datetime.fromtimestamp(min(max(expires, 0), _LAST_MS) / 1000, UTC),
        }
    elif config.anonymous:
        kwargs["anonymous"] = True
    return pafs.GcsFileSystem(**kwargs)


def _azure_filesystem(account: str, config: AzureConfig) -> pafs.FileSystem:
    """Azure Blob Storage / ADLS Gen2: a key or SAS token, else Azure's default credential (or a service
    principal: tenant, client id and secret)."""
    settings = {
        "account_key": config.account_key,
        "sas_token": config.sas_token,
        "tenant_id": config.tenant_id,
        "client_id": config.client_id,
        "client_secret": config.client_secret,
        "blob_storage_authority": config.blob_storage_authority,
        "dfs_storage_authority": config.dfs_storage_authority,
        "blob_storage_scheme": config.blob_storage_scheme,
        "dfs_storage_scheme": config.dfs_storage_scheme,
    }
    return pafs.AzureFileSystem(account_name=account, **{k: v for k, v in settings.items() if v})


def _hdfs_filesystem(netloc: str) -> pafs.FileSystem:
    """HDFS through pyarrow's HadoopFileSystem, which needs libhdfs and Hadoop's jars (HADOOP_HOME, CLASSPATH)."""
    host, _, port = netloc.partition(":")
    try:
        return pafs.HadoopFileSystem(host or "default", int(port) if port else 8020)
    except (OSError, ImportError) as exc:
        raise OSError(
            f"HDFS is not available here ({exc}): pyarrow's HadoopFileSystem needs libhdfs and Hadoop's jars "
            "(set HADOOP_HOME, ARROW_LIBHDFS_DIR and CLASSPATH=$(hadoop classpath --glob))"
        ) from None

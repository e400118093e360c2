"""Where the files of a plan live: local paths, file: URIs, s3:// (s3a://, s3n://), gs://, Azure's
abfs[s]:// and wasb[s]://, and hdfs:// (where pyarrow's HadoopFileSystem can load) through pyarrow.fs.

`storage` is a dict of S3 settings, by Iceberg's S3FileIO property names or short ones:
    s3.endpoint | endpoint            e.g. "http://127.0.0.1:9000" (the scheme picks http or https)
    s3.region | region                default us-east-1
    s3.access-key-id | access-key-id, s3.secret-access-key | secret-access-key, s3.session-token | session-token
    s3.path-style-access | path-style-access    default true (what MinIO and moto need)
(underscores work as well as dashes). Google Cloud Storage and Azure take PyIceberg's property names
(gcs.*, adls.*: see gcs_filesystem and azure_filesystem). Filesystems are cached per process and settings,
so the many tasks an executor runs share one client. A plan's vended `storage-credentials` go over
`storage` (vended_storage).
"""

from __future__ import annotations

import posixpath
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import pyarrow.fs as pafs

_S3_SCHEMES = ("s3", "s3a", "s3n")
_GCS_SCHEMES = ("gs", "gcs")
_AZURE_SCHEMES = ("abfs", "abfss", "wasb", "wasbs")
_HDFS_SCHEMES = ("hdfs", "viewfs")
_LOCAL = pafs.LocalFileSystem()
_CACHE: dict[tuple[Any, ...], pafs.FileSystem] = {}
_LOCK = threading.Lock()


def resolve(location: str, storage: dict[str, Any] | None = None) -> tuple[pafs.FileSystem, str]:
    """The filesystem holding `location` and the path within it."""
    scheme, sep, rest = location.partition(":")
    if not sep or "/" in scheme or len(scheme) == 1:  # a plain path (or a Windows drive letter)
        return _LOCAL, location
    scheme = scheme.lower()
    if scheme == "file":
        path = rest
        if path.startswith("//"):
            host, _, tail = path[2:].partition("/")
            if host not in ("", "localhost"):
                raise ValueError(f"Unsupported file location with a host: {location}")
            path = "/" + tail
        return _LOCAL, posixpath.normpath(unquote(path))
    if scheme in _S3_SCHEMES:
        if not rest.startswith("//") or len(rest) <= 2:
            raise ValueError(f"Invalid S3 location (expected s3://bucket/key): {location}")
        return s3_filesystem(storage), rest[2:]
    if scheme in _GCS_SCHEMES:
        return gcs_filesystem(storage), rest[2:]
    if scheme in _AZURE_SCHEMES:
        account, container, key = azure_parts(location)
        return azure_filesystem(account, storage), f"{container}/{key}"
    if scheme in _HDFS_SCHEMES:
        return hdfs_filesystem(location), "/" + rest[2:].partition("/")[2]
    raise ValueError(
        f"Unsupported location scheme '{scheme}' in {location}: use a local path, file:, s3:, gs:, abfs[s]:, "
        "wasb[s]: or hdfs:"
    )


def vended_storage(plan: Mapping[str, Any], storage: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The executors' storage settings for a plan: `storage` with the credentials the service vended for the
    table over it (the plan's `storage-credentials` entry with the longest prefix holding the table's
    metadata), so executors need no keys of their own."""
    location = _normalized(str(plan.get("metadata-location") or ""))
    best: Mapping[str, Any] | None = None
    for credential in plan.get("storage-credentials") or []:
        prefix = _normalized(str(credential.get("prefix", ""))).rstrip("/")
        if prefix and location.startswith(prefix + "/") and (best is None or len(prefix) > len(best["prefix"])):
            best = {"prefix": prefix, "config": credential.get("config") or {}}
    if best is None:
        return dict(storage) if storage is not None else None
    return {**(storage or {}), **best["config"]}


def _normalized(location: str) -> str:
    scheme, sep, rest = location.partition("://")
    return f"s3://{rest}" if sep and scheme.lower() in _S3_SCHEMES else location


def _setting(settings: dict[str, str], name: str) -> str | None:
    return settings.get(f"s3.{name}") or settings.get(name)


def _settings(storage: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(k).replace("_", "-").lower(): str(v) for k, v in (storage or {}).items() if v is not None}


def _cached(key: tuple[Any, ...], make: Callable[[], pafs.FileSystem]) -> pafs.FileSystem:
    """One filesystem per kind and settings in this process (its tasks share one client)."""
    with _LOCK:
        fs = _CACHE.get(key)
        if fs is None:
            fs = _CACHE[key] = make()
        return fs


def s3_filesystem(storage: Mapping[str, Any] | None) -> pafs.FileSystem:
    """S3 by the `storage` settings of this module's docstring, cached per settings."""
    settings = _settings(storage)

    def make() -> pafs.FileSystem:
        return new_s3_filesystem(
            endpoint=_setting(settings, "endpoint"),
            region=_setting(settings, "region"),
            access_key_id=_setting(settings, "access-key-id"),
            secret_access_key=_setting(settings, "secret-access-key"),
            session_token=_setting(settings, "session-token"),
            path_style=(_setting(settings, "path-style-access") or "true").lower() != "false",
        )

    return _cached(("s3", *sorted(settings.items())), make)


def new_s3_filesystem(
    *,
    endpoint: str | None,
    region: str | None,
    access_key_id: str | None,
    secret_access_key: str | None,
    session_token: str | None,
    path_style: bool,
    connect_timeout: float | None = None,
    request_timeout: float | None = None,
    allow_bucket_creation: bool = False,
) -> pafs.S3FileSystem:
    """A new S3 client: the one place that makes them, for the reader, the service (io/fileio.py passes its
    S3Config's fields, named as these arguments, with its timeouts) and scripts/seed_s3_demo.py. The endpoint's
    scheme (http://host:port) picks http or https (default https); the region defaults to us-east-1;
    path_style=False addresses buckets as virtual hosts."""
    scheme = "https"
    if endpoint and "://" in endpoint:
        scheme, endpoint = endpoint.split("://", 1)
    return pafs.S3FileSystem(
        access_key=access_key_id,
        secret_key=secret_access_key,
        session_token=session_token,
        region=region or "us-east-1",
        endpoint_override=endpoint or None,
        scheme=scheme,
        force_virtual_addressing=not path_style,
        connect_timeout=connect_timeout,
        request_timeout=request_timeout,
        allow_bucket_creation=allow_bucket_creation,
    )


def azure_parts(location: str) -> tuple[str, str, str]:
    """(account, container, key) of `abfs[s]://container@account.dfs.core.windows.net/key` (or `wasb[s]://` with
    `.blob.`); `abfs://container/key` has no account in it ("": the storage settings' adls.account-name)."""
    rest = location.partition("://")[2]
    authority, _, key = rest.partition("/")
    container, at, host = authority.partition("@")
    account = host.split(".", 1)[0] if at else ""
    if not container or (at and not account):
        raise ValueError(
            f"Invalid Azure location (expected abfss://container@account.dfs.core.windows.net/path): {location}"
        )
    return account, container, key.strip("/")


def gcs_filesystem(storage: Mapping[str, Any] | None) -> pafs.FileSystem:
    """Google Cloud Storage by PyIceberg's property names: gcs.service.host (an emulator's http://host:port),
    gcs.project-id, gcs.oauth2.token (with gcs.oauth2.token-expires-at, epoch ms), gcs.anonymous."""
    settings = _settings(storage)

    def make() -> pafs.FileSystem:
        kwargs: dict[str, Any] = {}
        endpoint = settings.get("gcs.service.host")
        if endpoint:
            scheme, _, netloc = endpoint.partition("://")
            kwargs |= {"scheme": scheme, "endpoint_override": netloc} if netloc else {"endpoint_override": endpoint}
        if settings.get("gcs.project-id"):
            kwargs["project_id"] = settings["gcs.project-id"]
        if settings.get("gcs.oauth2.token"):
            expires = int(settings.get("gcs.oauth2.token-expires-at") or (time.time() + 3600) * 1000)
            kwargs |= {
                "access_token": settings["gcs.oauth2.token"],
                "credential_token_expiration": datetime.fromtimestamp(expires / 1000, UTC),
            }
        elif (settings.get("gcs.anonymous") or "").lower() == "true":
            kwargs["anonymous"] = True
        return pafs.GcsFileSystem(**kwargs)

    return _cached(("gcs", *sorted(settings.items())), make)


def azure_filesystem(account: str, storage: Mapping[str, Any] | None) -> pafs.FileSystem:
    """Azure Blob Storage / ADLS Gen2 by PyIceberg's property names: adls.account-name (when the location
    names no account), adls.account-key or adls.sas-token (else Azure's default credential, or adls.tenant-id,
    adls.client-id, adls.client-secret), adls.blob-storage-authority / adls.dfs-storage-authority and
    adls.blob-storage-scheme / adls.dfs-storage-scheme (an emulator such as Azurite: host:port, http)."""
    settings = _settings(storage)
    account = account or settings.get("adls.account-name", "")
    if not account:
        raise ValueError("An Azure location without an account (abfs://container/path) needs adls.account-name")

    def make() -> pafs.FileSystem:
        names = {
            "account-key": "account_key",
            "sas-token": "sas_token",
            "tenant-id": "tenant_id",
            "client-id": "client_id",
            "client-secret": "client_secret",
            "blob-storage-authority": "blob_storage_authority",
            "dfs-storage-authority": "dfs_storage_authority",
            "blob-storage-scheme": "blob_storage_scheme",
            "dfs-storage-scheme": "dfs_storage_scheme",
        }
        kwargs = {arg: settings[f"adls.{key}"] for key, arg in names.items() if settings.get(f"adls.{key}")}
        return pafs.AzureFileSystem(account_name=account, **kwargs)

    return _cached(("azure", account, *sorted(settings.items())), make)


def hdfs_filesystem(location: str) -> pafs.FileSystem:
    """HDFS through pyarrow's HadoopFileSystem, which needs libhdfs and Hadoop's jars (HADOOP_HOME, CLASSPATH)."""
    netloc = location.partition("://")[2].partition("/")[0]
    host, _, port = netloc.partition(":")

    def make() -> pafs.FileSystem:
        try:
            return pafs.HadoopFileSystem(host or "default", int(port) if port else 8020)
        except (OSError, ImportError) as exc:
            raise OSError(
                f"HDFS is not available here ({exc}): pyarrow's HadoopFileSystem needs libhdfs and Hadoop's jars "
                "(set HADOOP_HOME, ARROW_LIBHDFS_DIR and CLASSPATH=$(hadoop classpath --glob))"
            ) from None

    return _cached(("hdfs", netloc), make)


def read_range(location: str, offset: int, length: int, storage: dict[str, Any] | None = None) -> bytes:
    """`length` bytes of a file from `offset` (a deletion vector inside a Puffin file)."""
    fs, path = resolve(location, storage)
    with fs.open_input_file(path) as f:
        data = f.read_at(length, offset)
    if len(data) != length:
        raise OSError(f"Short read of {location}: {len(data)} of {length} bytes at offset {offset}")
    return bytes(data)

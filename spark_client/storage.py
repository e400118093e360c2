"""Where the files of a plan live: local paths, file: URIs and s3:// (s3a://, s3n://) through pyarrow.fs.

`storage` is a dict of S3 settings, by Iceberg's S3FileIO property names or short ones:
    s3.endpoint | endpoint            e.g. "http://127.0.0.1:9000" (the scheme picks http or https)
    s3.region | region                default us-east-1
    s3.access-key-id | access-key-id, s3.secret-access-key | secret-access-key, s3.session-token | session-token
    s3.path-style-access | path-style-access    default true (what MinIO and moto need)
(underscores work as well as dashes). Filesystems are cached per process and settings, so the many tasks an
executor runs share one S3 client. A plan's vended `storage-credentials` go over `storage` (vended_storage).
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

import pyarrow.fs as pafs

_S3_SCHEMES = ("s3", "s3a", "s3n")
_LOCAL = pafs.LocalFileSystem()
_CACHE: dict[tuple[tuple[str, str], ...], pafs.FileSystem] = {}
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
    raise ValueError(f"Unsupported location scheme '{scheme}' in {location}: use a local path, file: or s3:")


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


def s3_filesystem(storage: dict[str, Any] | None) -> pafs.FileSystem:
    settings = {str(k).replace("_", "-").lower(): str(v) for k, v in (storage or {}).items() if v is not None}
    key = tuple(sorted(settings.items()))
    with _LOCK:
        fs = _CACHE.get(key)
        if fs is None:
            endpoint, scheme = _setting(settings, "endpoint"), "https"
            if endpoint and "://" in endpoint:
                scheme, endpoint = endpoint.split("://", 1)
            path_style = (_setting(settings, "path-style-access") or "true").lower() != "false"
            fs = _CACHE[key] = pafs.S3FileSystem(
                access_key=_setting(settings, "access-key-id"),
                secret_key=_setting(settings, "secret-access-key"),
                session_token=_setting(settings, "session-token"),
                region=_setting(settings, "region") or "us-east-1",
                endpoint_override=endpoint,
                scheme=scheme,
                force_virtual_addressing=not path_style,
            )
        return fs


def read_range(location: str, offset: int, length: int, storage: dict[str, Any] | None = None) -> bytes:
    """`length` bytes of a file from `offset` (a deletion vector inside a Puffin file)."""
    fs, path = resolve(location, storage)
    with fs.open_input_file(path) as f:
        data = f.read_at(length, offset)
    if len(data) != length:
        raise OSError(f"Short read of {location}: {len(data)} of {length} bytes at offset {offset}")
    return bytes(data)

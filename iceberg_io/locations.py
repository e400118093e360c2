"""Storage locations: a URI parsed into its store and the path within it."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

S3_SCHEMES = ("s3", "s3a", "s3n")
GCS_SCHEMES = ("gs", "gcs")
AZURE_SCHEMES = ("abfs", "abfss", "wasb", "wasbs")
HDFS_SCHEMES = ("hdfs", "viewfs")
_CONTROL = re.compile("[\x00-\x1f\x7f]")  # (a regular expression: a hundred times a per-character loop's speed)


class InvalidLocation(ValueError):
    """A location that names no file this package can reach: empty, malformed, or of an unknown scheme."""


@dataclass(frozen=True)
class Location:
    """A parsed location: `scheme` is "file", "s3", "gs", "azure" or "hdfs"; `path` is what the scheme's
    filesystem takes ("bucket/key"; for Azure "account/container/key", the account "" when the location
    names none; for HDFS "namenode:port/path")."""

    scheme: str
    path: str

    @property
    def uri(self) -> str:
        if self.scheme == "azure":
            account, _, rest = self.path.partition("/")
            container, _, key = rest.partition("/")
            return f"abfss://{container}@{account}.dfs.core.windows.net/{key}" if account else f"abfs://{rest}"
        return f"{self.scheme}://{self.path}"

    @property
    def is_object_store(self) -> bool:
        return self.scheme != "file"

    def within(self, root: Location) -> bool:
        """Whether this location is `root` or lies beneath it."""
        return self.scheme == root.scheme and (
            self.path == root.path or self.path.startswith(root.path.rstrip("/") + "/")
        )


def parse_location(location: str) -> Location:
    """`/p`, `file:/p`, `file:///p` are local; `s3://b/k` (s3a:, s3n:), `gs://b/k`, Azure's
    `abfs[s]://container@account.dfs.core.windows.net/k` (wasb[s]: with .blob.) and `hdfs://nn:port/p`.
    Anything else raises InvalidLocation."""
    if not location:
        raise InvalidLocation("Empty location")
    control = _CONTROL.search(location)
    if control is not None:  # a NUL would end the path at the OS (or fail in it); none belongs in a location
        raise InvalidLocation(
            f"Invalid location {location[:300]!r}: it holds the control character U+{ord(control.group()):04X}"
        )
    scheme, sep, rest = location.partition(":")
    if not sep or "/" in scheme or len(scheme) == 1:  # a plain path (or a Windows drive)
        return Location("file", posixpath.normpath(location))
    scheme = scheme.lower()
    if scheme == "file":
        path = rest
        if path.startswith("//"):
            host, _, tail = path[2:].partition("/")
            if host not in ("", "localhost"):
                raise InvalidLocation(f"Unsupported file location with a host: {location}")
            path = "/" + tail
        return Location("file", posixpath.normpath(unquote(path)))
    if scheme in S3_SCHEMES or scheme in GCS_SCHEMES or scheme in HDFS_SCHEMES:
        if not rest.startswith("//") or len(rest) <= 2 or rest[2] == "/":
            raise InvalidLocation(f"Invalid {scheme} location (expected {scheme}://bucket/key): {location}")
        kind = "s3" if scheme in S3_SCHEMES else "gs" if scheme in GCS_SCHEMES else "hdfs"
        return Location(kind, rest[2:].rstrip("/"))
    if scheme in AZURE_SCHEMES:
        account, container, key = _azure_parts(location)
        return Location("azure", f"{account}/{container}/{key}".rstrip("/"))
    raise InvalidLocation(
        f"Unsupported location scheme '{scheme}' in {location}: use a local path, file:, s3:, gs:, abfs[s]:, "
        "wasb[s]: or hdfs:"
    )


def _azure_parts(location: str) -> tuple[str, str, str]:
    """(account, container, key) of `abfs[s]://container@account.dfs.core.windows.net/key` (or `wasb[s]://` with
    `.blob.`); `abfs://container/key` has no account in it ("": the configuration's adls.account-name)."""
    rest = location.partition("://")[2]
    authority, _, key = rest.partition("/")
    container, at, host = authority.partition("@")
    account = host.split(".", 1)[0] if at else ""
    if not container or (at and not account):
        raise InvalidLocation(
            f"Invalid Azure location (expected abfss://container@account.dfs.core.windows.net/path): {location}"
        )
    return account, container, key.strip("/")


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts)])

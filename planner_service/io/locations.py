"""Storage locations: parsing URIs into (scheme, path)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from urllib.parse import unquote

from planner_service.errors import BadRequestError

S3_SCHEMES = ("s3", "s3a", "s3n")


@dataclass(frozen=True)
class Location:
    """A parsed location: `scheme` is "file" or "s3"; `path` is what the pyarrow filesystem takes."""

    scheme: str
    path: str

    @property
    def uri(self) -> str:
        return f"s3://{self.path}" if self.scheme == "s3" else f"file://{self.path}"


def parse_location(location: str) -> Location:
    """`/p`, `file:/p`, `file:///p` are local; `s3://b/k`, `s3a://b/k`, `s3n://b/k` are S3."""
    if not location:
        raise BadRequestError("Empty location")
    scheme, sep, rest = location.partition(":")
    if not sep or "/" in scheme or len(scheme) == 1:  # a plain path (or a Windows drive)
        return Location("file", posixpath.normpath(location))
    scheme = scheme.lower()
    if scheme == "file":
        path = rest
        if path.startswith("//"):
            host, _, tail = path[2:].partition("/")
            if host not in ("", "localhost"):
                raise BadRequestError(f"Unsupported file location with a host: {location}")
            path = "/" + tail
        return Location("file", posixpath.normpath(unquote(path)))
    if scheme in S3_SCHEMES:
        if not rest.startswith("//") or len(rest) <= 2:
            raise BadRequestError(f"Invalid S3 location (expected s3://bucket/key): {location}")
        return Location("s3", rest[2:].rstrip("/"))
    raise BadRequestError(f"Unsupported location scheme '{scheme}' in {location}: use a local path, file: or s3:")


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts)])

"""Presigned GET URLs of a plan's files: what a principal whose reads are restricted reads exactly its
planned files with, and no others (docs/guides/access-control.md, "Read restrictions").

Such a principal never gets the table's storage credentials (they would read every file of the table).
Instead each answer of a plan made under its restrictions carries, for each of its files on S3, a URL that
opens that one object, for GET only, for `presigned_url_ttl_seconds`: SigV4 query signing (botocore's
presigned get_object), with the S3 configuration the service reads the file with (its own keys, or those a
catalog vended to it for the table), against the configured endpoint, path-style or virtual-hosted as
configured. The URLs are made for each answer, never kept.

On Azure, each URL is a read-only service SAS of that one blob (io/blob_sas.py), signed with the account
key. No URL is made for a local file (the reader reads it directly), a file on another store (GCS, HDFS:
not yet), a file outside the service's roots (a manifest may name any object; the service signs only what
it may read), or an S3 or Azure account the service has no keys for: the reader then needs storage access
of its own. Like vended keys, a URL never reaches a log, an explain output or an error message."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

import iceberg_io
from iceberg_io import S3Config
from planner_service.errors import LocationNotAllowedError
from planner_service.io.blob_sas import blob_sas_url
from planner_service.io.fileio import FileIO

log = logging.getLogger(__name__)

SIGNED = frozenset({"s3", "azure"})  # the stores URLs are made for (blob SAS: io/blob_sas.py)
MAX_CLIENTS = 256  # signing clients kept by S3 configuration (all forgotten at once beyond)


class Presigner:
    """Presigned GET URLs of S3 objects and Azure blobs, good for `ttl_seconds`, signed as `io` reads them."""

    def __init__(self, io: FileIO, ttl_seconds: int) -> None:
        if ttl_seconds <= 0:
            raise ValueError(f"A presigned URL's lifetime is positive, not {ttl_seconds} seconds")
        self.io = io
        self.ttl_seconds = ttl_seconds
        self._clients: dict[S3Config, Any] = {}  # None: no keys to sign with
        self._lock = threading.Lock()

    def signs_any(self, locations: Iterable[str]) -> bool:
        """Whether any of these locations (a file index's directories, say) is in a store URLs are made for."""
        return any(_scheme(location) in SIGNED for location in locations)

    def urls(self, locations: Iterable[str]) -> dict[str, str]:
        """The URL of each of `locations` that can have one (on S3, within the roots, with keys), by the
        location as given."""
        out: dict[str, str] = {}
        outside = 0
        for location in locations:
            if location in out:
                continue
            try:
                if _scheme(location) not in SIGNED:
                    continue
                loc = self.io.roots.check(location)
            except (iceberg_io.InvalidLocation, LocationNotAllowedError):
                outside += 1
                continue
            if loc.scheme == "azure":
                account, container, blob = loc.path.split("/", 2)
                url = blob_sas_url(account, container, blob, self.io.storage_for(loc).azure, self.ttl_seconds)
                if url is not None:
                    out[location] = url
                continue
            client = self._client(self.io.storage_for(loc).s3)
            if client is None:
                continue
            bucket, _, key = loc.path.partition("/")
            out[location] = client.generate_presigned_url(
                "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=self.ttl_seconds
            )
        if outside:
            log.warning("no presigned URL for files outside the roots", extra={"files": outside})
        return out

    def _client(self, s3: S3Config) -> Any:
        """The botocore S3 client that signs for `s3` (None: no keys to sign with), made once."""
        with self._lock:
            if s3 in self._clients:
                return self._clients[s3]
        client = _signing_client(s3)
        with self._lock:
            if len(self._clients) >= MAX_CLIENTS:
                self._clients.clear()
            self._clients[s3] = client
        return client


def _signing_client(s3: S3Config) -> Any:
    """A botocore S3 client for `s3`'s endpoint, region, addressing and keys (without keys: those of AWS's
    default chain, as the service's reads use; None when it has none)."""
    import botocore.session  # here: only a service that signs loads it
    from botocore.config import Config

    session = botocore.session.get_session()
    keys: dict[str, str | None] = {}
    if s3.access_key_id and s3.secret_access_key:
        keys = {
            "aws_access_key_id": s3.access_key_id,
            "aws_secret_access_key": s3.secret_access_key,
            "aws_session_token": s3.session_token,
        }
    elif session.get_credentials() is None:
        log.warning("no presigned URLs: no S3 keys to sign with", extra={"endpoint": s3.endpoint})
        return None
    endpoint = s3.endpoint
    if endpoint and "://" not in endpoint:
        endpoint = f"https://{endpoint}"  # (as the service's own reads take it)
    config = Config(signature_version="s3v4", s3={"addressing_style": "path" if s3.path_style else "virtual"})
    return session.create_client(
        "s3", endpoint_url=endpoint or None, region_name=s3.region or "us-east-1", config=config, **keys
    )


def _scheme(location: str) -> str | None:
    try:
        return iceberg_io.parse_location(location).scheme
    except iceberg_io.InvalidLocation:
        return None

"""Vended credentials: storage credentials the service hands to its clients with a table or a plan, in the
REST spec's `storage-credentials` form (`[{"prefix": <location>, "config": {Iceberg storage properties}}]`),
so that Spark executors and PyIceberg read a table's files without cloud keys of their own.

- static: the `vended_storage_properties` setting, for every S3 table (keys as Iceberg's: `s3.access-key-id`,
  `s3.secret-access-key`, `s3.session-token`, `s3.endpoint`, `s3.region`, ...);
- sts: short-lived keys from STS AssumeRole of `sts_role_arn`, with a session policy that allows reading and
  listing only the table's location (its bucket and key prefix), asked with the service's own S3 keys and
  kept until five minutes before they expire.

Local tables get none (nothing to vend). The keys never reach a log, an explain output or an error message:
they travel only in the bodies that carry them.

Which location is vended for is decided before any vendor is asked (vendable_location): only a table's own
directory, the one that holds its metadata file, never the `location` a metadata file merely claims (whoever
writes a metadata file chooses that field)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from iceberg_io import S3Config
from planner_service.errors import StorageError
from planner_service.io.locations import parse_location
from planner_service.io.roots import table_root

RENEW_BEFORE_SECONDS = 300
MAX_KEPT = 4096  # credentials kept by table location (all forgotten at once beyond)

StorageCredentials = list[dict[str, Any]]


class CredentialVendor(Protocol):
    def storage_credentials(self, table_location: str) -> StorageCredentials: ...


def _endpoint_properties(s3: S3Config) -> dict[str, str]:
    """What a reader needs besides keys to reach the service's S3: endpoint, region, addressing."""
    out = {"s3.path-style-access": "true" if s3.path_style else "false"}
    if s3.endpoint:
        out["s3.endpoint"] = s3.endpoint
    if s3.region:
        out["s3.region"] = out["client.region"] = s3.region
    return out


def vendable_location(metadata_location: str, table_location: str) -> str | None:
    """The table's location, when it is the directory that holds the metadata file (`<location>/metadata/`);
    None for a location the metadata file only claims (another table's, a bucket), or a table whose metadata
    lies elsewhere (write.metadata.path), for which no directory can be vouched."""
    own, claimed = parse_location(table_root(metadata_location)), parse_location(table_location)
    same = own.scheme == claimed.scheme and own.path.rstrip("/") == claimed.path.rstrip("/")
    return table_location if same and own.path.rstrip("/") else None


def _s3_prefix(table_location: str) -> str | None:
    loc = parse_location(table_location)
    return f"s3://{loc.path.rstrip('/')}" if loc.scheme == "s3" else None


class StaticVendor:
    def __init__(self, properties: Mapping[str, str], s3: S3Config) -> None:
        self.config = {**_endpoint_properties(s3), **properties}

    def storage_credentials(self, table_location: str) -> StorageCredentials:
        prefix = _s3_prefix(table_location)
        return [] if prefix is None else [{"prefix": prefix, "config": dict(self.config)}]


_IAM_SPECIAL = re.compile(r"[$*?]")


def iam_literal(text: str) -> str:
    """`text` matched literally in an IAM resource or a StringLike condition: its wildcard characters (`*`,
    `?`) and `$` written as IAM's policy variables `${*}`, `${?}`, `${$}` (so a table named `t*` is not every
    table whose name starts with `t`)."""
    return _IAM_SPECIAL.sub(lambda m: "${" + m.group(0) + "}", text)


def read_policy(prefix: str) -> str:
    """An IAM session policy that allows reading the objects under an s3:// prefix and listing them, nothing
    else (AWS's documented form for one bucket and key prefix): the key written literally, and listing
    allowed only below `key/` (a listing of `key` alone would list `key_pii/` too)."""
    bucket, _, key = prefix.removeprefix("s3://").partition("/")
    key = iam_literal(key.rstrip("/"))
    objects = f"arn:aws:s3:::{bucket}/{key}/*" if key else f"arn:aws:s3:::{bucket}/*"
    statements: list[dict[str, Any]] = [
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:GetObjectVersion"], "Resource": [objects]},
        {"Effect": "Allow", "Action": ["s3:GetBucketLocation"], "Resource": [f"arn:aws:s3:::{bucket}"]},
    ]
    listing: dict[str, Any] = {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [f"arn:aws:s3:::{bucket}"]}
    if key:
        listing["Condition"] = {"StringLike": {"s3:prefix": [f"{key}/", f"{key}/*"]}}
    statements.append(listing)
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, separators=(",", ":"))


class StsVendor:
    def __init__(
        self, role_arn: str, s3: S3Config, endpoint: str | None, region: str | None, duration_seconds: int
    ) -> None:
        import boto3  # here: only a service that vends STS credentials loads it

        self.role_arn = role_arn
        self.duration = duration_seconds
        self.s3 = s3
        self._sts = boto3.client(
            "sts",
            endpoint_url=endpoint,
            region_name=region or s3.region or "us-east-1",
            aws_access_key_id=s3.access_key_id,
            aws_secret_access_key=s3.secret_access_key,
            aws_session_token=s3.session_token,
        )
        self._lock = threading.Lock()
        self._kept: dict[str, tuple[dict[str, str], float]] = {}  # prefix -> (config, expires at, monotonic)

    def storage_credentials(self, table_location: str) -> StorageCredentials:
        prefix = _s3_prefix(table_location)
        if prefix is None:
            return []
        with self._lock:
            kept = self._kept.get(prefix)
        if kept is None or time.monotonic() > kept[1] - RENEW_BEFORE_SECONDS:
            kept = self._assume(prefix)
            with self._lock:
                if len(self._kept) >= MAX_KEPT:
                    self._kept.clear()
                self._kept[prefix] = kept
        return [{"prefix": prefix, "config": dict(kept[0])}]

    def _assume(self, prefix: str) -> tuple[dict[str, str], float]:
        try:
            answer = self._sts.assume_role(
                RoleArn=self.role_arn,
                RoleSessionName="scan-planner",
                Policy=read_policy(prefix),
                DurationSeconds=self.duration,
            )
        except Exception as exc:  # botocore's errors: their code says enough (never their whole text)
            code = getattr(exc, "response", {}).get("Error", {}).get("Code", type(exc).__name__)
            raise StorageError(
                f"Cannot vend credentials for {prefix}: STS AssumeRole of {self.role_arn} failed ({code})"
            ) from None
        creds = answer["Credentials"]
        expiration: datetime = creds["Expiration"]
        config = {
            **_endpoint_properties(self.s3),
            "s3.access-key-id": creds["AccessKeyId"],
            "s3.secret-access-key": creds["SecretAccessKey"],
            "s3.session-token": creds["SessionToken"],
            "s3.session-token-expires-at-ms": str(int(expiration.timestamp() * 1000)),
        }
        remaining = expiration.timestamp() - time.time()
        return config, time.monotonic() + remaining

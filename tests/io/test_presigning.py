"""Presigned GET URLs of a restricted plan's files (io/presigning.py), made without a store (signing is local):
one per S3 file within the roots, signed with the keys the service reads it with (a catalog's vended ones
for its prefix over the service's own), for the configured endpoint and addressing, good for the TTL; none
for local files, other stores, files outside the roots or an S3 without keys. Each URL passes the check S3
makes (tests/read_restrictions/signing_store.py's, as moto lacks it); altered, it fails it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from iceberg_io import S3Config, StorageConfig
from planner_service.io.fileio import FileIO
from planner_service.io.presigning import Presigner
from planner_service.io.roots import Roots
from tests.read_restrictions.signing_store import refusal

ENDPOINT = "http://127.0.0.1:9000"
SERVICE = S3Config(endpoint=ENDPOINT, region="eu-west-1", access_key_id="service-key", secret_access_key="s3cret")
FILE = "s3://lake/warehouse/db/t/data/part=a b+c/00000-0.parquet"


def _presigner(roots: Roots | None = None, s3: S3Config = SERVICE, ttl: int = 900) -> Presigner:
    return Presigner(FileIO(StorageConfig(s3=s3), roots or Roots(["s3://lake/warehouse"])), ttl)


def _environ(url: str) -> dict[str, str]:
    parts = urlsplit(url)
    return {"RAW_URI": f"{parts.path}?{parts.query}", "REQUEST_METHOD": "GET", "HTTP_HOST": parts.netloc}


def test_one_url_per_s3_file_in_the_roots() -> None:
    locations = [FILE, FILE, "/tmp/local.parquet", "gs://lake/warehouse/x.parquet", "s3://other/secret.parquet"]
    urls = _presigner(ttl=600).urls(locations)
    assert list(urls) == [FILE]
    url = urlsplit(urls[FILE])
    assert (url.scheme, url.netloc, url.path) == (
        "http",
        "127.0.0.1:9000",
        "/lake/warehouse/db/t/data/part%3Da%20b%2Bc/00000-0.parquet",
    )
    query = parse_qs(url.query)
    assert query["X-Amz-Expires"] == ["600"] and query["X-Amz-Credential"][0].startswith("service-key/")
    assert query["X-Amz-Credential"][0].endswith("/eu-west-1/s3/aws4_request")
    assert "s3cret" not in urls[FILE]
    now = datetime.now(UTC)
    keys = {"service-key": "s3cret"}
    assert refusal(_environ(urls[FILE]), keys, now) is None
    assert refusal(_environ(urls[FILE]), keys, now + timedelta(seconds=601)) == ("AccessDenied", "Request has expired")
    refused = refusal(_environ(urls[FILE].replace("00000-0.parquet", "00001-0.parquet")), keys, now)  # another file
    assert refused is not None and refused[0] == "SignatureDoesNotMatch"


def test_virtual_hosted_addressing_as_configured() -> None:
    s3 = S3Config(region="us-east-1", access_key_id="k", secret_access_key="s", path_style=False)
    url = urlsplit(_presigner(s3=s3).urls([FILE])[FILE])
    assert url.netloc == "lake.s3.amazonaws.com" and url.path.startswith("/warehouse/db/t/data/")


def test_signed_with_the_keys_the_service_reads_the_file_with() -> None:
    """A catalog's vended keys for the table's prefix (FileIO.use_storage_properties) over the service's own."""
    presigner = _presigner()
    presigner.io.use_storage_properties(
        "s3://lake/warehouse/db/t", {"s3.access-key-id": "vended-key", "s3.secret-access-key": "v"}
    )
    urls = presigner.urls([FILE, "s3://lake/warehouse/db/u/data/f.parquet"])
    assert [parse_qs(urlsplit(u).query)["X-Amz-Credential"][0].split("/")[0] for u in urls.values()] == [
        "vended-key",
        "service-key",
    ]


def test_no_urls_without_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An S3 the service has no keys for, nor AWS's default chain: no URL (the reader needs its own access)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # (no instance metadata asked: nothing off loopback)
    assert _presigner(s3=S3Config(endpoint=ENDPOINT)).urls([FILE]) == {}


def test_a_lifetime_is_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        _presigner(ttl=0)

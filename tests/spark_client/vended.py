"""A table on S3 (moto on loopback) and services that vend credentials for it, shared by the tests of vended
credentials on pyspark 4 and 3.5 and of what never leaks them: the keys of each party, the table written by
PyIceberg, and a service started with them."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
from pyiceberg.catalog.sql import SqlCatalog

from planner_service.demo import DEMO_TABLE, write_demo_table
from tests.conftest import running_service

KEY, SECRET, REGION = "service-key", "service-secret", "us-east-1"  # the service's own keys
READER_KEY, READER_SECRET = "reader-key", "reader-secret-XYZ"  # what a static vendor hands out
ROLE = "arn:aws:iam::123456789012:role/lake-reader"  # what an STS vendor assumes
BUCKET, CATALOG_NAME = "vended", "lake"
TABLE = DEMO_TABLE
TABLE_PREFIX = f"s3://{BUCKET}/warehouse/demo/events"  # the table's location: the credentials' prefix


def s3_keys(endpoint: str) -> dict[str, str]:
    """The service's own S3 settings as Iceberg storage properties (PyIceberg's, to write and read the table)."""
    return {"s3.endpoint": endpoint, "s3.access-key-id": KEY, "s3.secret-access-key": SECRET, "s3.region": REGION}


def write_vended_table(endpoint: str, directory: Path) -> str:
    """demo.events written by PyIceberg to s3://vended/warehouse, registered in a SQL catalog; its path."""
    boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=REGION
    ).create_bucket(Bucket=BUCKET)
    db = directory / "catalog.db"
    catalog = SqlCatalog(CATALOG_NAME, uri=f"sqlite:///{db}", warehouse=f"s3://{BUCKET}/warehouse", **s3_keys(endpoint))
    write_demo_table(catalog)
    return str(db)


def load_vended_table(catalog: str, endpoint: str) -> Any:
    """The table as PyIceberg loads it with the service's own keys: the oracle of its rows."""
    return SqlCatalog(CATALOG_NAME, uri=f"sqlite:///{catalog}", **s3_keys(endpoint)).load_table(TABLE)


@contextlib.contextmanager
def vending_service(
    directory: Path, catalog: str, endpoint: str, log_path: Path | None = None, **settings: Any
) -> Iterator[str]:
    """A service over the table's SQL catalog with the service's own S3 keys, plus `settings` (the vending:
    vend_credentials = "static" or "sts", ...); yields its URL."""
    config = directory / "service.json"
    config.write_text(
        json.dumps(
            {
                "catalog_uri": catalog,
                "catalog_name": CATALOG_NAME,
                "s3_endpoint": endpoint,
                "s3_region": REGION,
                "s3_access_key_id": KEY,
                "s3_secret_access_key": SECRET,
                **settings,
            }
        )
    )
    with running_service("--config", str(config), log_path=log_path) as url:
        yield url


def static_vending(**properties: str) -> dict[str, Any]:
    """The settings of a static vendor handing out the reader's keys (and `properties`)."""
    keys = {"s3.access-key-id": READER_KEY, "s3.secret-access-key": READER_SECRET, **properties}
    return {"vend_credentials": "static", "vended_storage_properties": keys}


def sts_vending(sts_endpoint: str) -> dict[str, Any]:
    """The settings of an STS vendor assuming ROLE at `sts_endpoint`."""
    return {"vend_credentials": "sts", "sts_role_arn": ROLE, "sts_endpoint": sts_endpoint}

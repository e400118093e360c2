"""Vended credentials end to end, on a moto S3 (and STS) server on loopback: a table on S3, a service that
vends storage credentials (static ones from its settings, or short-lived ones from STS AssumeRole), and
clients with no storage settings of their own (no endpoint, no keys): Spark through plan_and_read and
PyIceberg through the REST catalog read the table's rows with what the service handed them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog

from planner_service.io.vending import read_policy
from spark_client import ScanPlannerDataSource, plan_and_read
from tests.conftest import running_service
from tests.spark_client.vended import (
    KEY,
    READER_KEY,
    READER_SECRET,
    REGION,
    TABLE,
    TABLE_PREFIX,
    static_vending,
    sts_vending,
    vending_service,
)


@pytest.fixture(scope="module")
def demo_rows(vended_table: Any) -> int:
    """The table's rows as PyIceberg reads them with the service's own keys (the oracle)."""
    rows: int = vended_table.scan().to_arrow().num_rows
    return rows


@pytest.fixture(scope="module")
def static_service(vended_catalog: str, s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with vending_service(tmp_path_factory.mktemp("static"), vended_catalog, s3_endpoint, **static_vending()) as url:
        yield url


@pytest.fixture(scope="module")
def sts_service(vended_catalog: str, s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with vending_service(
        tmp_path_factory.mktemp("sts"), vended_catalog, s3_endpoint, **sts_vending(s3_endpoint)
    ) as url:
        yield url


def _plan(url: str, **body: Any) -> dict[str, Any]:
    response = httpx.post(f"{url}/plan", json={"table": TABLE, **body}, timeout=60)
    assert response.status_code == 200, response.text
    plan: dict[str, Any] = response.json()
    return plan


def test_plans_carry_the_static_credentials(static_service: str, s3_endpoint: str) -> None:
    for _ in range(2):  # the second from the plan cache: still with them (bodies with credentials are not kept)
        plan = _plan(static_service)
        (credential,) = plan["storage-credentials"]
        assert credential["prefix"] == TABLE_PREFIX
        assert plan["metadata-location"].startswith(credential["prefix"] + "/")
        config = credential["config"]
        assert (config["s3.access-key-id"], config["s3.secret-access-key"]) == (READER_KEY, READER_SECRET)
        assert config["s3.endpoint"] == s3_endpoint and config["s3.region"] == REGION
        assert KEY not in json.dumps(plan)  # never the service's own keys
    explained = _plan(static_service, explain=True, filter="id < 10")
    assert READER_SECRET not in json.dumps(explained["explain"])


def test_rest_catalog_vends_them_when_asked(static_service: str) -> None:
    table = f"{static_service}/v1/namespaces/demo/tables/events"
    asked = httpx.get(table, headers={"X-Iceberg-Access-Delegation": "vended-credentials"}, timeout=30).json()
    assert asked["storage-credentials"][0]["config"]["s3.secret-access-key"] == READER_SECRET
    assert asked["config"]["s3.access-key-id"] == READER_KEY
    plain = httpx.get(table, timeout=30).json()
    assert "storage-credentials" not in plain and "s3.access-key-id" not in plain["config"]
    planned = httpx.post(f"{table}/plan", json={}, timeout=60).json()
    assert planned["status"] == "completed" and planned["storage-credentials"][0]["config"]["s3.access-key-id"]


def test_pyiceberg_reads_with_the_vended_credentials(static_service: str, demo_rows: int) -> None:
    """PyIceberg's RestCatalog, given only the service's URI, reads the rows from S3."""
    catalog = RestCatalog("vended", uri=static_service, **{"header.X-Iceberg-Access-Delegation": "vended-credentials"})
    table = catalog.load_table(TABLE)
    assert table.io.properties["s3.access-key-id"] == READER_KEY
    assert table.scan().to_arrow().num_rows == demo_rows


def test_spark_reads_with_no_storage_settings(
    spark: Any, static_service: str, sts_service: str, demo_rows: int
) -> None:
    """plan_and_read and the data source with no `storage`: the executors reach moto only through the
    vended endpoint and keys."""
    for url in (static_service, sts_service):
        df = plan_and_read(spark, TABLE, service_url=url, columns=["id", "region"])
        assert df.count() == demo_rows
    spark.dataSource.register(ScanPlannerDataSource)  # and the data source (pyspark 4)
    source = spark.read.format("scan-planner").option("service-url", static_service).load(TABLE)
    assert source.select("id").collect().__len__() == demo_rows


def test_sts_credentials_are_short_lived_and_scoped(sts_service: str) -> None:
    first = _plan(sts_service)["storage-credentials"][0]
    config = first["config"]
    assert first["prefix"] == TABLE_PREFIX
    assert config["s3.access-key-id"] not in (KEY, READER_KEY) and config["s3.session-token"]
    assert int(config["s3.session-token-expires-at-ms"]) > 0
    again = _plan(sts_service)["storage-credentials"][0]["config"]
    assert again["s3.access-key-id"] == config["s3.access-key-id"]  # kept until shortly before they expire


def test_the_session_policy_allows_reading_the_table_only() -> None:
    """AWS's documented policy for read access to one bucket and key prefix."""
    policy = json.loads(read_policy("s3://lake/warehouse/db/events"))
    assert policy == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:GetObjectVersion"],
                "Resource": ["arn:aws:s3:::lake/warehouse/db/events/*"],
            },
            {"Effect": "Allow", "Action": ["s3:GetBucketLocation"], "Resource": ["arn:aws:s3:::lake"]},
            {
                "Effect": "Allow",
                "Action": ["s3:ListBucket"],
                "Resource": ["arn:aws:s3:::lake"],
                "Condition": {"StringLike": {"s3:prefix": ["warehouse/db/events/", "warehouse/db/events/*"]}},
            },
        ],
    }


def test_the_session_policy_names_the_table_literally() -> None:
    """A table directory named with IAM's wildcard characters: its keys read as themselves (`${*}`), never as
    every table whose name begins alike; no listing of a sibling that shares the name's start."""
    policy = json.loads(read_policy("s3://lake/db/t*?$x"))
    objects, _, listing = policy["Statement"]
    assert objects["Resource"] == ["arn:aws:s3:::lake/db/t${*}${?}${$}x/*"]
    assert listing["Condition"]["StringLike"]["s3:prefix"] == ["db/t${*}${?}${$}x/", "db/t${*}${?}${$}x/*"]


def test_a_service_behind_the_catalog_reads_with_what_it_vends(static_service: str, tmp_path: Path) -> None:
    """The service under an upstream REST catalog that vends credentials (here, the static service's /v1)
    needs no S3 settings of its own: LoadTable's config and storage-credentials (endpoint and keys) are
    what it reads the table's manifests with."""
    config = tmp_path / "downstream.json"
    config.write_text(json.dumps({}))
    with running_service("--rest-catalog-uri", static_service, "--config", str(config)) as url:
        ours = _plan(url, filter="region = 'eu'")
    theirs = _plan(static_service, filter="region = 'eu'")
    assert ours["metadata-location"] == theirs["metadata-location"]
    assert ours["files"] == theirs["files"] and ours["tasks"] == theirs["tasks"]

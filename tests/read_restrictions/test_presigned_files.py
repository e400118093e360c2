"""Files, not tables: a principal whose reads a policy restricts gets, with each answer of its plan, a presigned
GET URL for exactly the files of that answer and no others, and reads them with no storage access of its
own. On moto's S3 on loopback behind S3's check of presigned URLs (signing_store.py): a table of three
files (partitioned by region), written by PyIceberg; a service with its own S3 keys and a policy that
restricts alice (the row filter `region != 'apac' AND amount >= 10`, which leaves the apac file out, and a
mask on email) and lets bob plan unrestricted."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx
import pyarrow as pa
import pytest

from planner_client import PlannerClient, Scan
from spark_client.partitions import expand_tasks
from spark_client.planner import CAPABILITIES
from tests.read_restrictions.restricted_table import RAW, kept_by_row_filter, mask_alphanum
from tests.read_restrictions.signing_store import signing_store
from tests.spark_client.conftest import spark  # noqa: F401  (the session the PySpark client tests share)
from tests.spark_client.vended import CATALOG_NAME, KEY, SECRET, s3_keys, vending_service

TABLE, BUCKET = "db.people", "presigned"
ALICE, BOB = "alice-token", "bob-token"
COLUMNS = ("id", "email", "region", "amount")
RULES = [
    {
        "principals": ["alice"],
        "tables": [TABLE],
        "privileges": ["plan"],
        "row_filter": "region != 'apac' AND amount >= 10",
        "column_masks": {"email": "mask-alphanum"},
    },
    {"principals": ["bob"], "tables": [TABLE], "privileges": ["plan"]},
]
POLICY: dict[str, Any] = {"auth_tokens": {"alice": ALICE, "bob": BOB}, "access_rules": RULES}
VISIBLE = sorted(  # the rows the row filter keeps (on raw values), email masked
    (
        {**{c: r[c] for c in COLUMNS}, "email": r["email"] and mask_alphanum(r["email"])}
        for r in RAW
        if kept_by_row_filter(r)
    ),
    key=lambda r: r["id"],
)


def _write_table(endpoint: str, directory: Path) -> str:
    """The table, one file per region, in a SQL catalog (its path), written with the service's keys."""
    import boto3
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    keys = s3_keys(endpoint)
    boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=keys["s3.region"]
    ).create_bucket(Bucket=BUCKET)
    db = directory / "catalog.db"
    catalog = SqlCatalog(CATALOG_NAME, uri=f"sqlite:///{db}", warehouse=f"s3://{BUCKET}/warehouse", **keys)
    catalog.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "email", StringType()),
        NestedField(3, "region", StringType()),
        NestedField(4, "amount", LongType()),
    )
    spec = PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "region"))
    table = catalog.create_table(TABLE, schema=schema, partition_spec=spec)
    table.append(pa.Table.from_pylist([{c: r[c] for c in COLUMNS} for r in RAW], schema=table.schema().as_arrow()))
    return str(db)


@pytest.fixture(scope="module")
def store() -> Iterator[str]:
    with signing_store({KEY: SECRET}) as url:
        yield url


@pytest.fixture(scope="module")
def catalog(store: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return _write_table(store, tmp_path_factory.mktemp("presigned-table"))


@pytest.fixture(scope="module")
def service_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("presigned-service") / "service.log"


@pytest.fixture(scope="module")
def service(catalog: str, store: str, service_log: Path) -> Iterator[str]:
    with vending_service(service_log.parent, catalog, store, service_log, **POLICY) as url:
        yield url


def _plan(service: str, token: str, **request: Any) -> dict[str, Any]:
    with PlannerClient(service, token=token, capabilities=CAPABILITIES) as client:
        return client.plan(Scan(TABLE).request(**request))


def _paths(plan: dict[str, Any]) -> set[str]:
    return {f["data-file"]["file-path"] for f in plan["files"]}


def test_a_restricted_answer_carries_a_url_for_each_planned_file_and_nothing_else(
    service: str, store: str, service_log: Path
) -> None:
    plan = _plan(service, ALICE)
    everything = _plan(service, BOB)
    assert "file-urls" not in everything and "storage-credentials" not in everything  # (unrestricted: as before)
    assert len(_paths(everything)) == 3 and plan["delete-files"] == []
    urls = plan["file-urls"]
    assert set(urls) == _paths(plan) and len(urls) == 2 and "storage-credentials" not in plan
    (excluded,) = _paths(everything) - _paths(plan)  # the apac file: the row filter leaves it out, and its URL
    assert "region=apac" in excluded
    for url in urls.values():
        assert url.startswith(f"{store}/{BUCKET}/") and "X-Amz-Signature=" in url
        head = httpx.get(url, headers={"Range": "bytes=0-3"}, timeout=30)
        assert (head.status_code, head.content) == (206, b"PAR1")
    for payload in expand_tasks(plan):  # an executor's payload: its own files' URLs, no others
        assert set(payload["plan"]["file-urls"]) == {f["data-file"]["file-path"] for f in payload["task"]["files"]}
    # a URL edited to name another object (the file the row filter leaves out): refused by the store
    signed = urlsplit(next(iter(urls.values())))
    edited = signed._replace(path="/" + quote(excluded.removeprefix("s3://"), safe="/~"))
    assert edited.path != signed.path
    refused = httpx.get(urlunsplit(edited), timeout=30)
    assert refused.status_code == 403 and b"SignatureDoesNotMatch" in refused.content
    audited = [json.loads(line) for line in service_log.read_text().splitlines() if '"presigned"' in line]
    assert {(a["principal"], a["table"], a["files"]) for a in audited} == {("alice", TABLE, 2)}


def test_each_answer_gets_urls_of_its_own_files(service: str) -> None:
    """Made for each answer, never kept: no 304 for a restricted plan (its body would hold old URLs); a plan
    answered by id names no file and carries none; each task fetched carries its own files' URLs."""
    headers = {"Authorization": f"Bearer {ALICE}", "X-Iceberg-Client-Capabilities": ",".join(CAPABILITIES)}
    with httpx.Client(base_url=service, headers=headers, timeout=60) as http:
        first = http.post("/plan", json={"table": TABLE})
        again = http.post("/plan", json={"table": TABLE}, headers={"If-None-Match": first.headers["ETag"]})
        assert (first.status_code, again.status_code) == (200, 200) and again.json()["file-urls"]
        by_id = http.post("/plan", json={"table": TABLE, "inline-task-limit": 0}).json()
        assert "file-urls" not in by_id and "files" not in by_id
        assert "file-urls" not in http.get(f"/plans/{by_id['plan-id']}").json()
        tasks = [http.get(f"/plans/{by_id['plan-id']}/tasks/{i}").json() for i in range(by_id["task-count"])]
        ranged = http.get(f"/plans/{by_id['plan-id']}/tasks", params={"end": by_id["task-count"]}).json()
    for answer in [*tasks, ranged]:
        files = {f["data-file"]["file-path"] for task in answer["tasks"] for f in task["files"]}
        assert set(answer["plan"]["file-urls"]) == files
    assert set(ranged["plan"]["file-urls"]) == _paths(first.json())


def _rows(df: Any) -> list[dict[str, Any]]:
    return sorted((row.asDict() for row in df.collect()), key=lambda r: r["id"])


@pytest.mark.parametrize("limit", [None, 0], ids=["inline", "by-id"])
def test_spark_reads_the_visible_rows_with_no_keys(spark: Any, service: str, store: str, limit: int | None) -> None:  # noqa: F811
    """plan_and_read with storage that names the endpoint and no keys: the executors read the planned files
    through their URLs alone (moto refuses an anonymous read)."""
    from spark_client import plan_and_read

    storage = {"s3.endpoint": store, "s3.region": "us-east-1"}
    df = plan_and_read(spark, TABLE, service_url=service, token=ALICE, storage=storage, inline_task_limit=limit)
    assert _rows(df) == VISIBLE


def test_a_read_after_the_urls_expired_fails_saying_to_plan_again(
    spark: Any,  # noqa: F811
    catalog: str,
    store: str,
    tmp_path: Path,
) -> None:
    from spark_client.dataframe import read_plan

    with vending_service(tmp_path, catalog, store, presigned_url_ttl_seconds=1, **POLICY) as url:
        plan = _plan(url, ALICE)
    time.sleep(2.1)  # (X-Amz-Date counts whole seconds)
    with pytest.raises(Exception) as failed:
        read_plan(spark, plan, storage={"s3.endpoint": store}).collect()
    message = str(failed.value)
    assert "The plan's presigned URL for s3://" in message
    assert (
        "expired or was refused (the store answered 403: AccessDenied, Request has expired): plan the scan again"
        in message
    )
    assert "httpx" not in message and "X-Amz-Signature" not in message

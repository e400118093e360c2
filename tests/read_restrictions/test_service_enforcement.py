"""The reader against the real service: restricted_table's rows written by PyIceberg into the demo
warehouse (partitioned by identity(region)), a policy that restricts one principal with the same row filter
and masks (by column name: the service binds them to PyIceberg's field ids), and plans the service makes
under them, inline and by id, read with spark_client's reader; the rows must be the enforced ones, computed
from the raw rows by hand. The service refuses the principal's plans unless the client declares
read-restrictions, and answers no aggregate from metadata."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from planner_client import PlannerClient, PlannerServiceError, Scan
from read_restrictions import new_salt
from spark_client.partitions import expand_tasks, fetch_task, read_payload
from spark_client.planner import CAPABILITIES
from tests.conftest import running_service
from tests.read_restrictions.restricted_table import RAW, SPEC_EMAIL, expected_rows, mask_alphanum

TABLE = "demo.restricted"
TOKEN = "alice-token"
RULE = {
    "principals": ["alice"],
    "tables": [TABLE],
    "privileges": ["plan"],
    "row_filter": "region != 'apac' AND amount >= 10",
    "column_masks": {
        "email": "mask-alphanum",
        "region": "mask-alphanum",
        "card": "show-last-4",
        "ssn": "sha-256-query-local",
        "info.city": "show-first-4",
    },
}


def _write_table(warehouse: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType, StructType

    from planner_service.demo import DEMO_CATALOG_NAME, demo_catalog_uri

    catalog = SqlCatalog(DEMO_CATALOG_NAME, uri=demo_catalog_uri(warehouse), warehouse=f"file://{warehouse}")
    info = StructType(NestedField(8, "city", StringType()), NestedField(9, "zip", StringType()))
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        *(NestedField(i, name, StringType()) for i, name in ((2, "email"), (3, "region"), (4, "card"), (5, "ssn"))),
        NestedField(6, "amount", LongType()),
        NestedField(7, "info", info),
    )
    spec = PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "region"))
    # file paths that do not name the (masked) region: the service plans no file whose path tells it
    paths = {"write.object-storage.enabled": "true", "write.object-storage.partitioned-paths": "false"}
    table = catalog.create_table(TABLE, schema=schema, partition_spec=spec, properties=paths)
    table.append(pa.Table.from_pylist(RAW, schema=table.schema().as_arrow()))


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from planner_service.demo import ensure_demo_warehouse

    home = tmp_path_factory.mktemp("restricted-service")
    _write_table(ensure_demo_warehouse(home / "demo-warehouse"))
    config = home / "service.json"
    config.write_text(json.dumps({"auth_tokens": {"alice": TOKEN}, "access_rules": [RULE]}))
    with running_service("--config", str(config), env={"SCAN_PLANNER_HOME": str(home)}) as url:
        yield url


COLUMNS = pa.schema([("id", pa.int64(), False), ("email", pa.string()), ("region", pa.string())])
NESTED = pa.schema([("id", pa.int64(), False), ("ssn", pa.string()), ("info", pa.struct([("city", pa.string())]))])


def _rows(payloads: list[dict[str, Any]], schema: pa.Schema) -> list[dict[str, Any]]:
    """The payloads read as an executor reads them, in Spark's Arrow types: rows by id."""
    rows = [r for p in payloads for b in read_payload(p, schema) for r in b.to_pylist()]
    return sorted(rows, key=lambda r: r["id"])


def _read(plan: dict[str, Any], salt: bytes) -> list[dict[str, Any]]:
    return _rows(expand_tasks(plan, salt), COLUMNS)


def _expected(salt: bytes, schema: pa.Schema = COLUMNS) -> list[dict[str, Any]]:
    """The enforced rows (no delete here), in `schema`'s columns (info: its city alone)."""
    rows = [{k: r[k] for k in schema.names} for r in expected_rows(salt, deleted=None)]
    return [{**r, "info": r["info"] and {"city": r["info"]["city"]}} if "info" in r else r for r in rows]


def test_the_service_plans_and_the_reader_enforces(service: str) -> None:
    with PlannerClient(service, token=TOKEN, capabilities=CAPABILITIES) as client:
        plan = client.plan(Scan(TABLE))
        assert plan["read-restrictions"]["required-column-projections"]
        partitions = {f["data-file"]["partition"][0] for f in plan["files"]}
        assert len(plan["files"]) == 2 and not partitions & {"eu", "us"}  # masked: the reader reads the files'
        salt = new_salt()
        assert _read(plan, salt) == _expected(salt)
        # the user's filter, on masked values: the raw address matches nothing, its mask two rows
        raw = client.plan(Scan(TABLE, filter=f"email = '{SPEC_EMAIL}'"))
        assert _read(raw, salt) == []
        masked_email = mask_alphanum(SPEC_EMAIL)
        masked = client.plan(Scan(TABLE, filter=f"email = '{masked_email}'"))
        assert [r["id"] for r in _read(masked, salt)] == [1, 8]
        # by id: each task fetched as an executor fetches it, the query's salt with it
        by_id = client.plan(Scan(TABLE).request(inline_task_limit=0))
        fetched = [fetch_task(service, by_id["plan-id"], i, TOKEN, salt) for i in range(by_id["task-count"])]
        assert _rows(fetched, NESTED) == _expected(salt, NESTED)
        aggregated = client.aggregate(Scan(TABLE), ["count(*)", "max(email)"])
        assert not aggregated["exact"] and all(not a["exact"] for a in aggregated["aggregates"])


def test_a_client_that_does_not_declare_it_is_refused(service: str) -> None:
    with PlannerClient(service, token=TOKEN, retries=0) as client, pytest.raises(PlannerServiceError) as refused:
        client.plan(Scan(TABLE))
    assert refused.value.status == 403 and "read-restrictions" in refused.value.message

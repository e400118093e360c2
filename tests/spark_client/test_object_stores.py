"""Google Cloud Storage and Azure end to end, against real emulators on loopback (gcp-storage-emulator from
PyPI, Azurite from npm): demo.events written by PyIceberg to each, planned by the service (its gcs_* and
adls_* settings) as PyIceberg plans it, and read by plan_and_read's executors (PyIceberg's gcs.* and adls.*
properties as `storage`) as PyIceberg reads it. HDFS, which cannot run here, is a 503 naming what it needs."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow.fs as pafs
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from iceberg_io import StorageConfig
from planner_service.demo import DEMO_TABLE, write_demo_table
from planner_service.errors import StorageError
from planner_service.io.fileio import FileIO
from spark_client import plan_and_read
from tests.conftest import running_service
from tests.plan_wire import splits

AZURITE_ACCOUNT = "devstoreaccount1"  # Azurite's well-known development account and key
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
HDFS_ROOT = "hdfs://namenode:8020/warehouse"


class Store:
    """A table on one object store: PyIceberg's view of it, and the service and reader settings for it."""

    def __init__(
        self, name: str, catalog: PyIcebergSqlCatalog, db: Path, properties: dict[str, str], settings: dict[str, Any]
    ) -> None:
        self.name, self.catalog, self.db = name, catalog, db
        self.properties = properties  # PyIceberg's (and the executors' `storage`)
        self.settings = settings  # the service's

    @property
    def table(self) -> Any:
        return self.catalog.load_table(DEMO_TABLE)


def _gcs(endpoint: str, directory: Path) -> Store:
    pafs.GcsFileSystem(
        anonymous=True, endpoint_override=endpoint.split("://")[1], scheme="http", project_id="test"
    ).create_dir("lake")
    expires = str(int((time.time() + 86400) * 1000))
    properties = {
        "gcs.service.host": endpoint,
        "gcs.project-id": "test",
        "gcs.oauth2.token": "emulator",
        "gcs.oauth2.token-expires-at": expires,
    }
    settings = {"gcs_endpoint": endpoint, "gcs_project_id": "test", "gcs_anonymous": True}
    return _written("gcs", "gs://lake/warehouse", directory, properties, settings)


def _azure(authority: str, directory: Path) -> Store:
    pafs.AzureFileSystem(
        account_name=AZURITE_ACCOUNT,
        account_key=AZURITE_KEY,
        blob_storage_authority=authority,
        blob_storage_scheme="http",
        dfs_storage_authority=authority,
        dfs_storage_scheme="http",
    ).create_dir("lake")
    properties = {
        "adls.account-name": AZURITE_ACCOUNT,
        "adls.account-key": AZURITE_KEY,
        "adls.blob-storage-authority": authority,
        "adls.dfs-storage-authority": authority,
        "adls.blob-storage-scheme": "http",
        "adls.dfs-storage-scheme": "http",
    }
    settings = {
        "adls_account_name": AZURITE_ACCOUNT,
        "adls_account_key": AZURITE_KEY,
        "adls_blob_storage_authority": authority,
        "adls_storage_scheme": "http",
    }
    # PyIceberg 0.12's pyarrow FileIO takes abfs://container@account... for a container named so: the account
    # goes in adls.account-name instead (the service reads both forms: test_azure_locations_name_the_account)
    return _written("azure", "abfs://lake/warehouse", directory, properties, settings)


def _written(name: str, warehouse: str, directory: Path, properties: dict[str, str], settings: dict[str, Any]) -> Store:
    db = directory / f"{name}.db"
    catalog = PyIcebergSqlCatalog(
        name,
        uri=f"sqlite:///{db}",
        warehouse=warehouse,
        **{"py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO", **properties},
    )
    write_demo_table(catalog)
    return Store(name, catalog, db, properties, settings)


@pytest.fixture(scope="module")
def stores(gcs_endpoint: str, azurite_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Store]:
    directory = tmp_path_factory.mktemp("object-stores")
    return {"gcs": _gcs(gcs_endpoint, directory), "azure": _azure(azurite_endpoint, directory)}


@pytest.fixture(scope="module")
def services(stores: dict[str, Store], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A service per store, with only that store's settings and the tables of its SQL catalog."""
    directory = tmp_path_factory.mktemp("object-store-services")
    gcs_config = _config(directory, stores["gcs"], allowed_roots=["gs://lake", HDFS_ROOT])
    with (
        running_service("--config", gcs_config) as gcs,
        running_service("--config", _config(directory, stores["azure"])) as azure,
    ):
        yield {"gcs": gcs, "azure": azure}


def _config(directory: Path, store: Store, **extra: Any) -> str:
    path = directory / f"{store.name}.json"
    path.write_text(json.dumps({"catalog_uri": str(store.db), "catalog_name": store.name, **store.settings, **extra}))
    return str(path)


@pytest.mark.parametrize("store", ["gcs", "azure"])
@pytest.mark.parametrize("row_filter", [None, "region = 'eu' AND id < 300"])
def test_plans_hold_what_pyiceberg_plans(
    stores: dict[str, Store], services: dict[str, str], store: str, row_filter: str | None
) -> None:
    body: dict[str, Any] = {"table": DEMO_TABLE, "filter": row_filter}
    response = httpx.post(f"{services[store]}/plan", json=body, timeout=60)
    assert response.status_code == 200, response.text
    plan = response.json()
    expected = stores[store].table.scan(**({"row_filter": row_filter} if row_filter else {})).plan_files()
    assert sorted({f["data-file"]["file-path"] for f in splits(plan)}) == sorted(t.file.file_path for t in expected)
    assert plan["metadata-location"] == stores[store].table.metadata_location


@pytest.mark.parametrize("store", ["gcs", "azure"])
def test_spark_reads_what_pyiceberg_reads(
    spark: Any, stores: dict[str, Store], services: dict[str, str], store: str
) -> None:
    df = plan_and_read(
        spark,
        DEMO_TABLE,
        filter="id < 400",
        columns=["id", "region", "amount"],
        service_url=services[store],
        storage=stores[store].properties,
    )
    ours = sorted((r.id, r.region, r.amount) for r in df.collect())
    theirs = stores[store].table.scan(row_filter="id < 400", selected_fields=("id", "region", "amount")).to_arrow()
    assert ours == sorted(zip(*(theirs.column(c).to_pylist() for c in ("id", "region", "amount")), strict=True))
    assert len(ours) > 0


def test_a_restricted_principal_reads_its_planned_blobs_by_sas(
    spark: Any, stores: dict[str, Store], tmp_path: Path
) -> None:
    """A principal whose reads a rule restricts gets no account key: a read-only SAS URL for each blob it is
    planned (io/blob_sas.py), which Azurite checks; plan_and_read reads with them and no key of its own."""
    rule = {"principals": ["alice"], "tables": [DEMO_TABLE], "privileges": ["plan"], "row_filter": "region = 'eu'",
            "column_masks": {"amount": "mask-to-default"}}  # fmt: skip
    config = _config(tmp_path, stores["azure"], auth_tokens={"alice": "alice-token"}, access_rules=[rule])
    headers = {"Authorization": "Bearer alice-token", "X-Iceberg-Client-Capabilities": "read-restrictions"}
    with running_service("--config", config) as url:
        plan = httpx.post(f"{url}/plan", json={"table": DEMO_TABLE}, headers=headers, timeout=60).json()
        planned = {f["data-file"]["file-path"] for f in plan["files"]}
        eu = {t.file.file_path for t in stores["azure"].table.scan(row_filter="region = 'eu'").plan_files()}
        assert planned == eu and set(plan["file-urls"]) == planned and "storage-credentials" not in plan
        first, sas = sorted(plan["file-urls"].items())[0]
        assert AZURITE_KEY not in json.dumps(plan) and "sig=" in sas and "sp=r" in sas
        head = httpx.get(sas, headers={"Range": "bytes=0-3"}, timeout=30)
        assert head.status_code == 206 and head.content == b"PAR1"
        other = sas.replace(first.rsplit("/", 1)[1], "not-planned.parquet")
        assert httpx.get(other, timeout=30).status_code == 403  # the signature is of that blob alone
        keyless = {k: v for k, v in stores["azure"].properties.items() if k != "adls.account-key"}
        df = plan_and_read(spark, DEMO_TABLE, columns=["id", "amount"], service_url=url, token="alice-token",
                           storage=keyless)  # fmt: skip
        ours = sorted((r.id, r.amount) for r in df.collect())
    theirs = stores["azure"].table.scan(row_filter="region = 'eu'", selected_fields=("id", "amount")).to_arrow()
    masked = [
        (i, None if a is None else 0.0)
        for i, a in zip(*(theirs.column(c).to_pylist() for c in ("id", "amount")), strict=True)
    ]
    assert ours == sorted(masked) and len(ours) > 0


def test_azure_locations_name_the_account(stores: dict[str, Store]) -> None:
    """abfss://container@account.dfs.core.windows.net/path, Iceberg Java's form, reads the same object as
    abfs://container/path with the account from the settings (and wasbs:// with .blob.)."""
    location = stores["azure"].table.metadata_location
    assert location.startswith("abfs://lake/")
    settings = dict(stores["azure"].properties)
    io = FileIO(StorageConfig.from_properties(settings))
    key = location.removeprefix("abfs://lake/")
    canonical = f"abfss://lake@{AZURITE_ACCOUNT}.dfs.core.windows.net/{key}"
    blob = f"wasbs://lake@{AZURITE_ACCOUNT}.blob.core.windows.net/{key}"
    assert io.read(canonical) == io.read(location) == io.read(blob)
    del settings["adls.account-name"]
    with pytest.raises(StorageError, match=r"needs adls\.account-name"):
        FileIO(StorageConfig.from_properties(settings)).read(location)


def test_hdfs_says_what_it_needs(services: dict[str, str]) -> None:
    hdfs = {"metadata-location": f"{HDFS_ROOT}/t/metadata/v1.metadata.json"}
    response = httpx.post(f"{services['gcs']}/plan", json=hdfs, timeout=60)
    assert response.status_code == 503, response.text
    message = response.json()["error"]["message"]
    assert "HDFS is not available here" in message and "HADOOP_HOME" in message
    outside = httpx.post(
        f"{services['gcs']}/plan", json={"metadata-location": "gs://elsewhere/t/v1.metadata.json"}, timeout=60
    )
    assert outside.status_code == 403, outside.text

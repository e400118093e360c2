"""The index's disk tier shared through object storage (planning/index_store.py), on S3 through moto, on Google
Cloud Storage's and Azure's emulators, on loopback: a planner on another host (its own empty directory, the same
store) plans a snapshot another host planned without reading a manifest, answering the same; an object damaged
or planted in the store is refused and the manifests decoded; a store that refuses costs decodes and one
warning, never a plan."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from pathlib import Path

import boto3
import pyarrow.fs as pafs
import pytest

from iceberg_io import AzureConfig, GcsConfig, S3Config, StorageConfig
from planner_service.io.fileio import FileIO
from planner_service.io.roots import Roots
from planner_service.planning.index_store import IndexStore
from planner_service.planning.index_tier import IndexTier
from planner_service.planning.planner import ScanPlanner
from tests.planning.factories import MemoryIO, TableWriter
from tests.planning.test_index_tier import FILTERS, KEY, MANIFESTS, _answer, _plan, _table
from tests.spark_client.test_object_stores import AZURITE_ACCOUNT, AZURITE_KEY

ACCESS, SECRET = "testing", "testing"


@pytest.fixture
def bucket(s3_endpoint: str) -> str:
    name = f"index-{secrets.token_hex(4)}"
    s3 = boto3.client(
        "s3", endpoint_url=s3_endpoint, aws_access_key_id=ACCESS, aws_secret_access_key=SECRET, region_name="us-east-1"
    )
    s3.create_bucket(Bucket=name)
    return name


def _store(endpoint: str, prefix: str) -> IndexStore:
    storage = StorageConfig(
        S3Config(endpoint=endpoint, region="us-east-1", access_key_id=ACCESS, secret_access_key=SECRET)
    )
    return IndexStore(FileIO(storage, Roots([prefix])), prefix)


class Hosts:
    """Planners each on a host of its own (its own directory), sharing one store."""

    def __init__(self, root: Path, endpoint: str, prefix: str) -> None:
        self.root, self.endpoint, self.prefix = root, endpoint, prefix
        self.made: list[ScanPlanner] = []

    def new(self, io: MemoryIO, endpoint: str | None = None) -> ScanPlanner:
        store = _store(endpoint or self.endpoint, self.prefix)
        tier = IndexTier(self.root / f"host-{len(self.made)}", 10**9, KEY, store)
        planner = ScanPlanner(io, threads=2, tier=tier)
        self.made.append(planner)
        return planner


@pytest.fixture
def hosts(tmp_path: Path, s3_endpoint: str, bucket: str) -> Iterator[Hosts]:
    made = Hosts(tmp_path, s3_endpoint, f"s3://{bucket}/index")
    yield made
    for planner in made.made:
        planner.close()


@pytest.fixture
def io() -> MemoryIO:
    return MemoryIO()


@pytest.fixture
def writer(io: MemoryIO) -> TableWriter:
    return _table(io)


def _objects(endpoint: str, bucket: str) -> dict[str, bytes]:
    s3 = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS, aws_secret_access_key=SECRET, region_name="us-east-1"
    )
    listed = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {o["Key"]: s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read() for o in listed}


def test_another_host_plans_from_the_store(io: MemoryIO, writer: TableWriter, hosts: Hosts, bucket: str) -> None:
    first = hosts.new(io)
    expected = [_answer(_plan(first, writer, f)) for f in FILTERS]
    names = sorted(key.removeprefix("index/") for key in _objects(hosts.endpoint, bucket))
    # the snapshot's two assemblies (with and without statistics) and the segments they refer to, its manifest
    # list decoded, and the files of the two fields the filters read (id, data)
    assert sum(n.startswith("asm-") for n in names) == 2 and sum(n.startswith("seg-") for n in names) == 2
    assert sum(n.startswith("lst-") for n in names) == 1 and sum(n.startswith("fld-") for n in names) == 2
    io.reads.clear()
    other = hosts.new(io)
    assert [_answer(_plan(other, writer, f)) for f in FILTERS] == expected
    manifest_list = writer.table().metadata.snapshots[1].manifest_list
    assert manifest_list is not None and io.reads[manifest_list] == 0
    assert io.reads_of(MANIFESTS) == [0, 0, 0, 0]
    assert other.manifests.tier is not None and other.manifests.tier.store is not None
    assert other.manifests.tier.store.stats.downloads == 7  # all of them
    # the manifests are linked on the new host too: a list of some of them is assembled from its directory
    links = [p for p in (hosts.root / "host-1").glob("*.core") if p.is_symlink()]
    assert len(links) == 4


@pytest.mark.parametrize("kind", ["gcs", "azure"])
def test_another_host_plans_from_a_store_on_gcs_or_azure(
    io: MemoryIO, writer: TableWriter, tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    store = (
        _gcs_store(request.getfixturevalue("gcs_endpoint"))
        if kind == "gcs"
        else _azure_store(request.getfixturevalue("azurite_endpoint"))
    )
    first = ScanPlanner(io, threads=2, tier=IndexTier(tmp_path / "a", 10**9, KEY, store))
    expected = [_answer(_plan(first, writer, f)) for f in FILTERS]
    first.close()
    io.reads.clear()
    second = ScanPlanner(io, threads=2, tier=IndexTier(tmp_path / "b", 10**9, KEY, store))
    try:
        assert [_answer(_plan(second, writer, f)) for f in FILTERS] == expected
        assert io.reads_of(MANIFESTS) == [0, 0, 0, 0] and store.stats.failures == 0
    finally:
        second.close()


def _gcs_store(endpoint: str) -> IndexStore:
    bucket = f"index-{secrets.token_hex(4)}"
    host = endpoint.split("://")[1]
    pafs.GcsFileSystem(anonymous=True, endpoint_override=host, scheme="http", project_id="test").create_dir(bucket)
    storage = StorageConfig(gcs=GcsConfig(endpoint=endpoint, project_id="test", anonymous=True))
    return IndexStore(FileIO(storage, Roots([f"gs://{bucket}/index"])), f"gs://{bucket}/index")


def _azure_store(authority: str) -> IndexStore:
    container = f"index-{secrets.token_hex(4)}"
    azure = AzureConfig(
        account_name=AZURITE_ACCOUNT,
        account_key=AZURITE_KEY,
        blob_storage_authority=authority,
        dfs_storage_authority=authority,
        blob_storage_scheme="http",
        dfs_storage_scheme="http",
    )
    pafs.AzureFileSystem(
        account_name=AZURITE_ACCOUNT,
        account_key=AZURITE_KEY,
        blob_storage_authority=authority,
        blob_storage_scheme="http",
        dfs_storage_authority=authority,
        dfs_storage_scheme="http",
    ).create_dir(container)
    prefix = f"abfs://{container}/index"
    return IndexStore(FileIO(StorageConfig(azure=azure), Roots([prefix])), prefix)


def test_a_damaged_object_in_the_store_costs_a_decode(
    io: MemoryIO, writer: TableWriter, hosts: Hosts, bucket: str, s3_endpoint: str, caplog: pytest.LogCaptureFixture
) -> None:
    expected = _answer(_plan(hosts.new(io), writer, FILTERS[1]))
    s3 = boto3.client(
        "s3", endpoint_url=s3_endpoint, aws_access_key_id=ACCESS, aws_secret_access_key=SECRET, region_name="us-east-1"
    )
    for key, data in _objects(s3_endpoint, bucket).items():
        if "/seg-" in key:
            s3.put_object(Bucket=bucket, Key=key, Body=data[:100] + bytes([data[100] ^ 1]) + data[101:])
    io.reads.clear()
    caplog.set_level(logging.WARNING)
    other = hosts.new(io)
    assert _answer(_plan(other, writer, FILTERS[1])) == expected
    assert sum(io.reads_of(MANIFESTS)) == 4
    assert other.manifests.tier is not None and other.manifests.tier.stats.rejected >= 1
    assert "was refused and is removed" in caplog.text


def test_a_store_that_refuses_costs_decodes_never_a_plan(
    io: MemoryIO, writer: TableWriter, hosts: Hosts, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    down = "http://127.0.0.1:9"  # (nothing listens there)
    planner = hosts.new(io, endpoint=down)
    expected = [_answer(_plan(ScanPlanner(io, threads=2), writer, f)) for f in FILTERS]
    assert [_answer(_plan(planner, writer, f)) for f in FILTERS] == expected
    store = planner.manifests.tier.store  # type: ignore[union-attr]
    assert store is not None and store.stats.failures >= 1
    assert caplog.text.count("index_store cannot be used") == 1

"""S3 through a real moto server on loopback: a table written by PyIceberg to S3, planned through our
S3 FileIO, must hold the files PyIceberg's own planner finds."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import boto3
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from iceberg_io import S3Config, StorageConfig
from planner_service.catalog.base import TableIdentifier
from planner_service.catalog.sql import SqlCatalog
from planner_service.demo import DEMO_TABLE, write_demo_table
from planner_service.errors import LocationNotAllowedError
from planner_service.io.fileio import FileIO, FileNotFound
from planner_service.io.roots import Roots
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import ScanRequest

KEY, SECRET, REGION = "testing", "testing", "us-east-1"


@pytest.fixture(scope="module")
def s3_table(s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, PyIcebergSqlCatalog]:
    boto3.client(
        "s3", endpoint_url=s3_endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET, region_name=REGION
    ).create_bucket(Bucket="lake")
    db = tmp_path_factory.mktemp("s3cat") / "catalog.db"
    catalog = PyIcebergSqlCatalog(
        "s3demo",
        uri=f"sqlite:///{db}",
        warehouse="s3://lake/warehouse",
        **{"s3.endpoint": s3_endpoint, "s3.access-key-id": KEY, "s3.secret-access-key": SECRET, "s3.region": REGION},
    )
    write_demo_table(catalog)
    return str(db), catalog


def _io(endpoint: str, roots: Roots | None = None) -> FileIO:
    s3 = S3Config(endpoint=endpoint, region=REGION, access_key_id=KEY, secret_access_key=SECRET)
    return FileIO(StorageConfig(s3=s3), roots)


def test_plan_over_s3_matches_pyiceberg(s3_endpoint: str, s3_table: tuple[str, PyIcebergSqlCatalog]) -> None:
    db, pyiceberg_catalog = s3_table
    io = _io(s3_endpoint)
    table = SqlCatalog(io, db, "s3demo").load_table(TableIdentifier.parse(DEMO_TABLE))
    assert table.metadata_location.startswith("s3://lake/warehouse/")
    planner = ScanPlanner(io)
    plan = planner.plan(table, ScanRequest())
    planner.close()

    expected = Counter(t.file.file_path for t in pyiceberg_catalog.load_table(DEMO_TABLE).scan().plan_files())
    ours = Counter(t.file.path for t in plan.file_tasks)
    assert ours == expected
    assert len(expected) > 10
    # every byte of every file is covered exactly once by the combined tasks
    covered = Counter(t.file.path for c in plan.tasks for t in c.tasks)
    assert set(covered) == set(expected)


def test_s3_aliases_and_missing_keys(s3_endpoint: str, s3_table: tuple[str, PyIcebergSqlCatalog]) -> None:
    io = _io(s3_endpoint)
    names = io.list_names("s3a://lake/warehouse")
    assert names, "the warehouse prefix lists its namespace directory"
    with pytest.raises(FileNotFound, match=r"s3n://lake/nope\.json"):
        io.read("s3n://lake/nope.json")


def test_roots_reject_other_buckets(s3_endpoint: str, tmp_path: Path) -> None:
    io = _io(s3_endpoint, Roots(["s3://lake/warehouse"]))
    with pytest.raises(LocationNotAllowedError, match="outside the roots"):
        io.read("s3://other/metadata.json")
    with pytest.raises(LocationNotAllowedError):
        io.read(str(tmp_path / "x"))
    with pytest.raises(LocationNotAllowedError):
        io.read("s3://lake/warehouse-evil/x")  # a prefix is not a parent directory
    with pytest.raises(LocationNotAllowedError, match=r"'\.' or '\.\.' segments"):
        io.read("s3://lake/warehouse/../private/x")  # S3 keeps the dots: the key is outside the warehouse


def test_cli_reads_s3_settings_from_the_environment(
    s3_endpoint: str,
    s3_table: tuple[str, PyIcebergSqlCatalog],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from planner_service.cli import main

    db, pyiceberg_catalog = s3_table
    for name, value in (
        ("ENDPOINT", s3_endpoint),
        ("REGION", REGION),
        ("ACCESS_KEY_ID", KEY),
        ("SECRET_ACCESS_KEY", SECRET),
    ):
        monkeypatch.setenv(f"SCAN_PLANNER_S3_{name}", value)
    args = ["plan", "--table", DEMO_TABLE, "--catalog-uri", db, "--catalog-name", "s3demo", "--json"]
    assert main(args) == 0
    body = json.loads(capsys.readouterr().out)
    planned = {f["data-file"]["file-path"] for f in body["files"]}
    assert planned == {t.file.file_path for t in pyiceberg_catalog.load_table(DEMO_TABLE).scan().plan_files()}

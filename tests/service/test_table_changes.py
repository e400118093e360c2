"""A table that changes between a job's plan and its reads. A plan id names the metadata file the plan was
made from (immutable), so every replica, and a restarted service, serves the tasks of the snapshot it
planned: a new snapshot or a compaction (the planned files replaced) leaves the plan's tasks and rows as
they were. Once the planned files are deleted (snapshots expired and cleaned up), reading a task fails
naming the file, as Spark + Iceberg's read fails; once the plan's manifests are gone too, fetching a task
is a clear error naming the manifest: never tasks of two snapshots mixed, never fewer rows in silence."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from planner_client import PlannerClient
from spark_client.partitions import read_payload
from tests.conftest import running_service

TABLE = "db.t"
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "v", StringType(), required=False))
ARROW = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _batch(start: int, n: int) -> pa.Table:
    return pa.table({"id": list(range(start, start + n)), "v": [f"row {i}" for i in range(start, start + n)]}, ARROW)


@pytest.fixture
def table(tmp_path: Path) -> Iterator[tuple[Any, Path]]:
    """A table of three appended files, and the service's config over its catalog."""
    catalog = SqlCatalog("changing", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("db")
    t = catalog.create_table(TABLE, SCHEMA)
    for start in (0, 100, 200):
        t.append(_batch(start, 100))
    config = tmp_path / "service.json"
    config.write_text(json.dumps({"catalog_uri": str(tmp_path / "catalog.db"), "catalog_name": "changing"}))
    yield catalog.load_table(TABLE), config


@contextlib.contextmanager
def _fresh(config: Path) -> Iterator[PlannerClient]:
    """A new service (nothing cached: as another replica, or this one restarted) and a client of it."""
    with running_service("--config", str(config)) as url, PlannerClient(url, retries=0) as client:
        yield client


def _read(client: PlannerClient, plan_id: str, count: int) -> tuple[list[Any], list[int]]:
    """Every task of a plan by id, and the ids of every row they read."""
    tasks, ids = [], []
    for index in range(count):
        payload = client.task(plan_id, index)
        tasks.append(payload["task"])
        for batch in read_payload(payload, ARROW):
            ids += batch.column("id").to_pylist()
    return tasks, sorted(ids)


def test_a_plan_id_serves_the_snapshot_it_planned_or_fails_clearly(table: tuple[Any, Path]) -> None:
    t, config = table
    expected = sorted(t.scan().to_arrow().column("id").to_pylist())
    assert expected == list(range(300))
    with _fresh(config) as client:
        plan = client.plan({"table": TABLE, "inline-task-limit": 0})
        plan_id, count = plan["plan-id"], plan["task-count"]
        tasks, ids = _read(client, plan_id, count)
    assert ids == expected

    t.append(_batch(300, 50))  # a new snapshot
    with _fresh(config) as client:
        assert _read(client, plan_id, count) == (tasks, expected)
        latest = client.plan({"table": TABLE, "inline-task-limit": 0})
        assert _read(client, latest["plan-id"], latest["task-count"])[1] == list(range(350))

    t = t.refresh()
    t.overwrite(_batch(0, 350))  # a compaction: every planned file replaced by a new one
    planned_files = {f["data-file"]["file-path"] for task in tasks for f in task["files"]}
    current = {task.file.file_path for task in t.refresh().scan().plan_files()}
    assert not planned_files & current
    with _fresh(config) as client:
        assert _read(client, plan_id, count) == (tasks, expected)

    gone = sorted(planned_files)[0]  # the snapshots expired and their files deleted
    Path(gone.removeprefix("file://")).unlink()
    with _fresh(config) as client, pytest.raises(FileNotFoundError, match=r"No such file") as info:
        _read(client, plan_id, count)
    assert gone.removeprefix("file://") in str(info.value)

    manifests = [m.manifest_path for m in t.snapshot_by_id(plan["snapshot-id"]).manifests(t.io)]
    for manifest in manifests:
        Path(manifest.removeprefix("file://")).unlink()
    with _fresh(config) as client:
        answer = httpx.get(f"{client.service_url}/plans/{plan_id}/tasks/0", timeout=30)
    assert answer.status_code == 503, answer.text[:300]
    assert "Metadata file is missing" in answer.json()["error"]["message"]
    assert any(m.removeprefix("file://") in answer.json()["error"]["message"] for m in manifests)

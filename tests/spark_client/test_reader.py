"""read_task against Spark + Iceberg Java: every read case of tests/conformance/read_cases.py.

Each case is planned on the real service over the conformance warehouse (POST /plan with the case's
filter, columns, snapshot and split size), every task is read with read_task, and the rows must equal
what Spark's Iceberg source returned for the same read (DIR/reads/<id>.parquet), as a multiset, with the
same Arrow types once Spark's Parquet spellings are normalized (list element and map entry names,
nullability, field ids).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Generator
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_client import deletes, read_task, reader
from spark_client.formats import open_data_file
from spark_client.partitions import expand_tasks
from spark_client.schema import arrow_schema
from tests.conformance.read_cases import READ_CASES
from tests.conformance.reference import Conformance
from tests.plan_wire import splits
from tests.spark_client.compare import normalized, rows


def plan_request(case: dict[str, Any]) -> dict[str, Any]:
    """The /plan body equivalent to the case's Spark read."""
    body: dict[str, Any] = {"table": f"db.{case['table']}"}
    kind, value = case["snapshot"]["kind"], case["snapshot"].get("value")
    if kind == "id":
        body["snapshot-id"] = value
    elif kind == "as_of":
        body["as-of-timestamp-ms"] = value
    elif kind in ("branch", "tag"):
        body["ref"] = value
    elif kind == "appends":
        body["start-snapshot-id"] = case["snapshot"]["start"]
        if case["snapshot"]["end"] is not None:
            body["end-snapshot-id"] = case["snapshot"]["end"]
    if case["filter"] is not None:
        body["filter"] = case["filter"]
    if case["columns"] is not None:
        body["select"] = case["columns"]
    if case["split_size"] is not None:
        body["options"] = {"split-size": case["split_size"]}
    return body


def plan_of(service: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(f"{service}/plan", json=body, timeout=60)
    assert response.status_code == 200, response.text
    plan: dict[str, Any] = response.json()
    return plan


def read_plan(plan: dict[str, Any]) -> pa.Table:
    schema = arrow_schema(plan["schema"])
    batches = []
    for payload in expand_tasks(plan):
        task = payload["task"]
        for batch in read_task(task, {**payload["plan"], "tasks": [task]}):
            assert batch.schema.equals(schema, check_metadata=True)
            batches.append(batch)
    return pa.Table.from_batches(batches, schema=schema)


@pytest.mark.parametrize("read_id", [c["id"] for c in READ_CASES])
def test_read_matches_spark_and_iceberg_java(conformance: Conformance, conformance_service: str, read_id: str) -> None:
    case = conformance.read(read_id)
    plan = plan_of(conformance_service, plan_request(case))
    expected = pq.read_table(conformance.dir / case["path"])
    actual = read_plan(plan).select(expected.column_names)  # Spark's order; drops columns only the filter read
    assert expected.num_rows == case["rows"]
    assert [(f.name, normalized(f.type)) for f in actual.schema] == [
        (f.name, normalized(f.type)) for f in expected.schema
    ]
    assert rows(actual) == rows(expected)


def test_read_cases_cover_what_they_should(conformance: Conformance) -> None:
    reads = {r["id"]: r for r in conformance.reads}
    assert [r["id"] for r in conformance.reads] == [c["id"] for c in READ_CASES]
    assert {r["table"] for r in reads.values() if r["id"].endswith("/full")} >= set(conformance.tables)
    assert {r["snapshot"]["kind"] for r in reads.values()} == {"current", "id", "as_of", "branch", "tag", "appends"}
    assert all(r["rows"] > 0 for r in reads.values() if r["table"] != "empty")
    assert conformance.expected["read_tables"]["name_mapped"]["format_version"] == 2
    # where Spark filtered the rows Iceberg returned, the residual must keep exactly Spark's rows ...
    assert reads["all_types/float-gt"]["spark_filters_rows"] is True
    # ... and where Iceberg answered from identity partitions, Spark took them as they came
    assert reads["identity_part/category-not-eq"]["spark_filters_rows"] is False
    assert (
        reads["identity_part/category-not-eq"]["spark_pushed_filters"] == "category IS NOT NULL, NOT (category = 'b')"
    )


def test_a_file_split_across_tasks_is_read_once(conformance: Conformance, conformance_service: str) -> None:
    """row_groups with 1 KiB splits: every task reads the row groups starting in its range, and together
    the tasks read each row exactly once."""
    plan = plan_of(conformance_service, {"table": "db.row_groups", "options": {"split-size": 1024}})
    ranges: dict[str, list[tuple[int, int]]] = {}
    ids: list[int] = []
    for payload in expand_tasks(plan):
        task = payload["task"]
        for f in task["files"]:
            ranges.setdefault(f["data-file"]["file-path"], []).append((f["start"], f["length"]))
        for batch in read_task(task, {**payload["plan"], "tasks": [task]}):
            ids.extend(batch.column("id").to_pylist())
    assert any(len(r) > 4 for r in ranges.values())  # files really were cut into many tasks
    assert sorted(ids) == list(range(5000))


@pytest.mark.parametrize("filter_", ["category != 'b'", {"type": "not-eq", "term": "category", "value": "b"}])
def test_not_eq_drops_null_partitions_as_spark_does(
    conformance: Conformance, conformance_service: str, filter_: Any
) -> None:
    """Spark's `category != 'b'` drops rows whose category is null; Iceberg's residual for the null
    partition is `true` (by Iceberg's rules null passes not-eq), so the reader applies the scan's filter."""
    case = conformance.read("identity_part/category-not-eq")  # recorded from Spark with the plain `!=`
    plan = plan_of(conformance_service, {"table": "db.identity_part", "filter": filter_})
    null_partition = [f for f in splits(plan) if f["data-file"]["partition"] == [None]]
    assert null_partition and all(f["residual-filter"] is True for f in null_partition)  # Java's residual
    expected = pq.read_table(conformance.dir / case["path"])
    assert rows(read_plan(plan).select(expected.column_names)) == rows(expected)


def _open_files() -> set[str]:
    """What this process's descriptors point at (Linux /proc/self/fd): the files it holds open."""
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            out.add(os.readlink(f"/proc/self/fd/{fd}"))
    return {p for p in out if p.endswith((".parquet", ".orc", ".avro"))}


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
@pytest.mark.parametrize("table", ["mixed_formats", "mor_position_deletes", "equality_deletes", "all_types"])
def test_every_file_a_read_opens_is_closed(
    conformance_service: str, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Data and delete files (Parquet, ORC, Avro) are closed by the reader, not left to the garbage collector
    (the opened objects are kept alive here), after a whole read and after a read stopped at its first batch
    (Spark's limit closes the task's generator)."""
    opened: list[Any] = []

    def recorded(*args: Any) -> Any:
        opened.append(open_data_file(*args))
        return opened[-1]

    monkeypatch.setattr(reader, "open_data_file", recorded)
    monkeypatch.setattr(deletes, "open_data_file", recorded)
    plan = plan_of(conformance_service, {"table": f"db.{table}"})
    before = _open_files()
    assert len(read_plan(plan)) > 0
    assert opened and _open_files() == before
    for payload in expand_tasks(plan):
        task = payload["task"]
        batches = read_task(task, {**payload["plan"], "tasks": [task]})
        assert isinstance(batches, Generator)
        next(batches, None)
        batches.close()
    assert _open_files() == before

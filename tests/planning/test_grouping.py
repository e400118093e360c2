"""grouping=partition (Iceberg's preserve-data-grouping): every task holds splits of one partition tuple;
each key's files are packed as an ungrouped plan of that partition alone packs them (an ungrouped plan is
Iceberg Java's planTasks, held to it by the conformance suite); keys ascend as Spark orders a key-grouped
scan's partitions; the key is Partitioning.groupingKeyType's (fields every planned spec has unvoided, whose
source column the scan reads, by field id)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest

from planner_service.catalog.base import load_by_metadata_location
from planner_service.errors import BadRequestError
from planner_service.io.fileio import FileIO
from planner_service.metadata.partitioning import PartitionField, PartitionSpec, parse_transform
from planner_service.metadata.types import NestedField, PrimitiveType, Schema, StructType
from planner_service.planning.grouping import grouping_fields
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import scan_request
from tests.conformance.read_cases import GROUPING_CASES
from tests.conformance.reference import Conformance
from tests.planning.conformance_plans import conformance_table, task_pieces

SPLIT = {"split-size": 2048, "file-open-cost": 64}  # small: several tasks a partition, no adaptive split size
PARTITIONED = ["identity_part", "bucket_part", "day_part", "time_part", "truncate_part"]


@pytest.fixture(scope="module")
def planner() -> ScanPlanner:
    return ScanPlanner(FileIO())


@pytest.mark.parametrize("name", PARTITIONED)
def test_each_task_holds_one_partition_packed_as_that_partition_alone(
    conformance: Conformance, planner: ScanPlanner, name: str
) -> None:
    table = conformance_table(conformance, planner, name)
    grouped = planner.plan(table, scan_request(options=SPLIT, grouping="partition"))
    whole = planner.plan(table, scan_request(options=SPLIT))
    grouping = grouped.grouping
    assert grouping is not None and grouped.files is not None and grouped.combined is not None
    assert len(grouping.task_key) == len(grouped.combined) and len(grouping.keys) > 1
    tasks = task_pieces(grouped)
    # the same file ranges as the ungrouped plan, only packed apart
    assert Counter(p for t in tasks for p in t) == Counter(p for t in task_pieces(whole) for p in t)
    # keys ascend (nulls first), each task's key is its files' key
    order = [tuple((v is not None, v) for v in key) for key in grouping.keys]
    assert order == sorted(order) and len(set(order)) == len(order)
    index, rows = grouped.files.index, grouped.files.rows
    spec_of = {int(s): table.metadata.specs[int(s)] for s in set(index.spec_id[rows].tolist())}
    field_ids = [f.field_id for f in grouping.fields]
    for t, key in enumerate(grouping.task_key):
        for p in grouped.combined.pieces(t):
            spec_id, values = index.partitions[int(index.partition_id[rows[int(grouped.combined.file[p])]])]
            by_id = dict(zip((f.field_id for f in spec_of[spec_id].fields), values, strict=False))
            assert tuple(by_id[i] for i in field_ids) == grouping.keys[int(key)]
    # a single-field identity key: each key's tasks are the ungrouped plan of that partition alone (Java's)
    if name == "identity_part":
        for k, key in enumerate(grouping.keys):
            field = table.metadata.schema.find_field(grouping.fields[0].source_id)
            assert field is not None
            condition = {"type": "is-null", "term": field.name}
            if key[0] is not None:
                condition = {"type": "eq", "term": field.name, "value": key[0]}
            alone = planner.plan(table, scan_request(options=SPLIT, filter=condition))
            mine = [tasks[t] for t, kt in enumerate(grouping.task_key) if kt == k]
            assert mine == task_pieces(alone)


def test_specs_without_a_common_field_are_not_grouped(conformance: Conformance, planner: ScanPlanner) -> None:
    """spec_evolution's specs are {category}, {category, bucket(id)} and {bucket(id)}: no field is in all three."""
    table = conformance_table(conformance, planner, "spec_evolution")
    grouped = planner.plan(table, scan_request(options=SPLIT, grouping="partition"))
    assert grouped.grouping is None
    assert task_pieces(grouped) == task_pieces(planner.plan(table, scan_request(options=SPLIT)))


def test_an_unpartitioned_table_is_not_grouped(conformance: Conformance, planner: ScanPlanner) -> None:
    table = conformance_table(conformance, planner, "unpartitioned")
    grouped = planner.plan(table, scan_request(options=SPLIT, grouping="partition"))
    assert grouped.grouping is None
    assert task_pieces(grouped) == task_pieces(planner.plan(table, scan_request(options=SPLIT)))


def test_a_key_without_the_partition_column_read_groups_nothing(conformance: Conformance, planner: ScanPlanner) -> None:
    table = conformance_table(conformance, planner, "identity_part")
    grouped = planner.plan(table, scan_request(options=SPLIT, grouping="partition", select=["id"]))
    assert grouped.grouping is None  # (Spark's key is of the expected schema: a column not read is not a key)


def _schema() -> Schema:
    fields = (
        NestedField(1, "id", PrimitiveType("long"), False),
        NestedField(2, "day", PrimitiveType("date"), False),
        NestedField(3, "region", PrimitiveType("string"), False),
    )
    return Schema(0, StructType(fields))


def _field(source: int, field_id: int, transform: str) -> PartitionField:
    return PartitionField(source, field_id, f"f{field_id}", parse_transform(transform))


def test_the_key_is_the_fields_every_spec_keeps() -> None:
    schema = _schema()
    first = PartitionSpec(0, (_field(3, 1001, "identity"), _field(2, 1000, "day")))
    dropped = PartitionSpec(1, (_field(3, 1001, "void"), _field(2, 1000, "day"), _field(1, 1002, "bucket[4]")))
    assert [f.field_id for f in grouping_fields([first], schema)] == [1000, 1001]  # by field id
    assert [f.field_id for f in grouping_fields([first, dropped], schema)] == [1000]
    assert grouping_fields([PartitionSpec(2, ())], schema) == ()
    unread = Schema(0, StructType(tuple(f for f in schema.struct.fields if f.field_id != 2)))
    assert [f.field_id for f in grouping_fields([first], unread)] == [1001]


def test_an_unknown_grouping_is_refused() -> None:
    with pytest.raises(BadRequestError, match="grouping must be one of none, partition"):
        scan_request(grouping="sort")


def test_grouping_through_plan_and_by_id(conformance_service: str) -> None:
    body: dict[str, Any] = {"table": "db.identity_part", "options": SPLIT, "grouping": "partition"}
    inline = httpx.post(f"{conformance_service}/plan", json=body, timeout=60).json()
    plain = httpx.post(f"{conformance_service}/plan", json={**body, "grouping": "none"}, timeout=60).json()
    assert inline["plan-id"] != plain["plan-id"] and "grouping" not in plain
    keys = inline["grouping"]["keys"]
    assert inline["grouping"]["type"] == "partition" and [f["name"] for f in inline["grouping"]["fields"]] == [
        "category"
    ]
    assert [t["grouping-key"] for t in inline["tasks"]] == sorted(
        (t["grouping-key"] for t in inline["tasks"]), key=lambda k: (k[0] is not None, k[0])
    )
    assert {tuple(t["grouping-key"]) for t in inline["tasks"]} == {tuple(k) for k in keys}
    assert all("grouping-key" not in t for t in plain["tasks"])
    by_id = httpx.post(f"{conformance_service}/plan", json={**body, "inline-task-limit": 0}, timeout=60).json()
    listed = httpx.get(f"{conformance_service}/plans/{by_id['plan-id']}", timeout=60).json()
    assert [keys[k] for k in listed["task-grouping-key"]] == [t["grouping-key"] for t in inline["tasks"]]
    assert listed["grouping"]["keys"] == keys
    bad = httpx.post(f"{conformance_service}/plan", json={**body, "grouping": "sort"}, timeout=60)
    assert bad.status_code == 400 and "grouping" in bad.json()["error"]["message"]


@pytest.mark.parametrize("index", range(len(GROUPING_CASES)))
def test_task_groups_equal_spark_and_iceberg(conformance: Conformance, planner: ScanPlanner, index: int) -> None:
    """Spark 3.5 + Iceberg 1.10.2's input partitions with preserve-data-grouping on, recorded by the generator
    (each a task group: its grouping key and tasks), equal ours as a multiset (Iceberg orders keys by hash;
    ours ascend), and as many; the session's parallelism (local[2], 2 shuffle partitions) for the adaptive
    split size."""
    recorded = conformance.expected["task_groups"][index]
    table = conformance_table(conformance, planner, recorded["table"])
    request = scan_request(options=recorded["options"], filter=recorded["filter"], grouping="partition", parallelism=2)
    plan = planner.plan(table, request)
    tasks = task_pieces(plan)
    if plan.grouping is None:
        ours = Counter(((), tuple(t)) for t in tasks)
    else:
        ours = Counter(
            (plan.grouping.keys[int(k)], tuple(t)) for k, t in zip(plan.grouping.task_key, tasks, strict=True)
        )
    java = Counter(
        (tuple(g["key"]), tuple((path, start, length) for path, start, length in g["tasks"]))
        for g in recorded["groups"]
    )
    assert ours == java
    assert len(tasks) == recorded["partitions"]


@pytest.mark.parametrize("grouping", ["partition", "sort-order"])
def test_a_spec_dropped_from_the_plan_leaves_its_partitions_out_of_the_key(
    tmp_path: Path, planner: ScanPlanner, grouping: str
) -> None:
    """The review's defect: spec 0 identity(data), spec 1 unpartitioned; `id < 100` keeps the 3 files of spec
    0 of 5 (at least half: the plan keeps the snapshot's whole index, spec 1's partitions in it), and the key
    was computed for every partition of the index: a KeyError, a 500. The key is the planned files' alone."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField as PyField
    from pyiceberg.partitioning import PartitionSpec as PySpec
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.table.sorting import SortField, SortOrder
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, StringType
    from pyiceberg.types import NestedField as PyNested

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("db")
    schema = PySchema(PyNested(1, "id", LongType(), required=False), PyNested(2, "data", StringType(), required=False))
    spec = PySpec(PyField(source_id=2, field_id=1000, transform=IdentityTransform(), name="data"))
    order = SortOrder(SortField(source_id=1, transform=IdentityTransform()))
    table = catalog.create_table("db.evolved", schema=schema, partition_spec=spec, sort_order=order)
    arrow = schema.as_arrow()
    for i, data in enumerate("abc"):
        table.append(pa.Table.from_pydict({"id": [i], "data": [data]}, schema=arrow))
    with table.update_spec() as update:
        update.remove_field("data")
    for i in (100, 101):
        table.append(pa.Table.from_pydict({"id": [i], "data": ["z"]}, schema=arrow))
    loaded = load_by_metadata_location(FileIO(), table.metadata_location)
    assert sorted(loaded.metadata.specs) == [0, 1]
    plain = planner.plan(loaded, scan_request(filter="id < 100"))
    grouped = planner.plan(loaded, scan_request(filter="id < 100", grouping=grouping))
    assert grouped.files is not None and len(grouped.files) == 3
    assert grouped.grouping is not None and sorted(grouped.grouping.keys) == [("a",), ("b",), ("c",)]
    assert Counter(p for t in task_pieces(grouped) for p in t) == Counter(p for t in task_pieces(plain) for p in t)

"""spark_client's reader under a plan's read restrictions (restricted_table.py: Parquet files written by
pyarrow, a hand-made plan): rows are those the required row filter keeps on the raw values, less the
deleted ones; masked columns, nested ones too, are the spec's actions of the raw values (computed by hand);
the user's filter sees masked values only; a masked identity partition column is read from the file, never
from the (masked) partition value; what cannot be enforced fails the read; a count reads only enforced rows;
and a plan without restrictions reads as before."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from read_restrictions import new_salt
from spark_client import read_task
from spark_client.partitions import expand_tasks, read_payload, task_payloads
from spark_client.reader import RestrictionError
from spark_client.restrictions import SALT_KEY, non_null_field_ids
from tests.read_restrictions.restricted_table import (
    DELETED_EMAIL,
    LOOKALIKE,
    RAW,
    SCHEMA,
    SPEC_EMAIL,
    expected_rows,
    mask_alphanum,
    rows_of,
    with_filter,
    write_table,
)
from tests.spark_client.plans import field, file_task, plan, schema, wire, write_rows


def read(p: dict[str, Any], salt: bytes = b"", **kw: Any) -> list[dict[str, Any]]:
    return rows_of([b for task in p["tasks"] for b in read_task(task, p, salt=salt, **kw)])


@pytest.fixture
def restricted(tmp_path: Path) -> dict[str, Any]:
    return write_table(tmp_path)


def test_rows_kept_on_raw_values_and_columns_masked(restricted: dict[str, Any]) -> None:
    salt = new_salt()
    rows = read(restricted, salt)
    assert rows == expected_rows(salt)
    assert [r["id"] for r in rows] == [1, 7, 8]  # eu and us with amount >= 10; bob's row deleted by his email
    first = rows[0]
    assert first["email"] == "xxxxxxxxnnnnnn@xxxxx.xxx"  # the spec's example
    assert first["card"] == "nnnn-nnnn-nnnn-4444"  # the spec's show-last-4 example
    assert first["region"] == "xx" and first["info"] == {"city": "Züri" + "xx", "zip": "8001"}
    # one salt for the query: the same ssn hashes alike in two tasks (rows 1 and 7 are in two files)
    assert first["ssn"] == rows[1]["ssn"] != rows[2]["ssn"] and len(first["ssn"]) == 64


def test_a_user_filter_matches_masked_values_only(restricted: dict[str, Any]) -> None:
    salt = new_salt()
    email = {"type": "eq", "term": "email", "value": SPEC_EMAIL}
    assert read(with_filter(restricted, email), salt) == []  # its raw value matches nothing
    masked = {"type": "eq", "term": "email", "value": mask_alphanum(SPEC_EMAIL)}
    rows = read(with_filter(restricted, masked), salt)
    assert rows == expected_rows(salt, lambda r: r["email"] == mask_alphanum(SPEC_EMAIL))
    assert {r["id"] for r in rows} == {1, 8}  # the look-alike address has the same mask
    assert LOOKALIKE != SPEC_EMAIL
    # the partition column too: its raw value matches nothing, its masked value its rows
    assert read(with_filter(restricted, {"type": "eq", "term": "region", "value": "eu"}), salt) == []
    region = {"type": "eq", "term": "region", "value": "xx"}
    assert [r["id"] for r in read(with_filter(restricted, region), salt)] == [1, 7, 8]  # eu's and us's: both "xx"
    starts = {"type": "starts-with", "term": "email", "value": "prash"}
    assert read(with_filter(restricted, starts), salt) == []


def test_a_masked_identity_partition_column_is_read_from_the_file(tmp_path: Path) -> None:
    """The plan's partition value stands for what the service sends (it masks it): a value no mask makes, so
    that any use of it shows."""
    restricted = write_table(tmp_path, partition=lambda region: f"SERVICE-{region}")
    salt = new_salt()
    rows = read(restricted, salt)
    assert rows == expected_rows(salt)  # the row filter kept eu and us by the files' raw regions
    assert {r["region"] for r in rows} == {"xx"}
    unrestricted = {k: v for k, v in restricted.items() if k != "read-restrictions"}
    assert {r["region"] for r in read(unrestricted)} == {"SERVICE-eu", "SERVICE-apac", "SERVICE-us"}  # (as today)


def test_a_file_without_its_masked_partition_column_fails(tmp_path: Path) -> None:
    """A file holding no region column (an imported one): its value is only in the partition, masked."""
    path = write_rows(tmp_path / "f.parquet", schema(field(1, "id", "long", True)), {"id": [1]})
    p = {**write_table(tmp_path), "tasks": [{"files": [file_task(path, partition=["xx"])]}], "delete-files": []}
    with pytest.raises(RestrictionError, match=r"does not hold masked column \(field 3\)"):
        read(p, new_salt())


def test_an_equality_delete_on_a_masked_partition_column_compares_raw_values(tmp_path: Path) -> None:
    """Deletes compare the file's own values: an equality delete of region 'us', a column the plan does not
    even project, deletes us's rows, although the partition value the plan carries is masked ('xx')."""
    restricted = write_table(tmp_path)
    deletes = tmp_path / "region-deletes.parquet"
    region = pa.field("region", pa.string(), True, {b"PARQUET:field_id": b"3"})
    pq.write_table(pa.table({"region": ["us"]}, schema=pa.schema([region])), deletes)
    restricted["delete-files"] = [
        {"content": "equality-deletes", "file-format": "parquet", "file-path": str(deletes), "equality-ids": [3]}
    ]
    restricted["schema"] = schema(*SCHEMA["fields"][:2])  # id and email
    del restricted["read-restrictions"]["required-row-filter"]
    rows = read(restricted, new_salt())
    assert [r["id"] for r in rows] == [r["id"] for r in RAW if r["region"] != "us"]
    assert {r["email"] for r in rows} == {None if r["email"] is None else mask_alphanum(r["email"]) for r in RAW[:6]}


def _with_masks(restricted: dict[str, Any], *masks: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(restricted)
    out["read-restrictions"]["required-column-projections"] = list(masks)
    return out


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        ({"action": "apply-expression", "field-id": 2}, r"'apply-expression' to column 'email'.*not an action"),
        ({"action": "mask-alphanum", "field-id": 6}, r"'mask-alphanum' to column 'amount'.*applies to string"),
        ({"action": "replace-with-null", "field-id": 1}, r"column 'id'.*required"),
        ({"action": "truncate-to-year", "field-id": 7}, r"column 'info'.*not struct"),
    ],
)
def test_an_action_it_cannot_apply_fails_the_read(
    restricted: dict[str, Any], mask: dict[str, Any], message: str
) -> None:
    with pytest.raises(RestrictionError, match=message):
        read(_with_masks(restricted, mask), new_salt())


def test_a_query_local_hash_without_the_query_salt_fails(restricted: dict[str, Any]) -> None:
    with pytest.raises(RestrictionError, match=r"'ssn'.*sha-256-query-local, and no query salt"):
        read(restricted)


def test_a_mask_inside_a_list_fails(tmp_path: Path) -> None:
    element = {"type": "struct", "fields": [field(4, "secret", "string")]}
    typ = {"type": "list", "element-id": 3, "element": element, "element-required": False}
    s = schema(field(1, "id", "long", True), field(2, "items", typ))
    path = write_rows(tmp_path / "l.parquet", s, {"id": [1], "items": [[{"secret": "x"}]]})
    p = plan(s, [[file_task(path)]])
    p["read-restrictions"] = {"required-column-projections": [{"action": "mask-alphanum", "field-id": 4}]}
    with pytest.raises(RestrictionError, match=r"'items.element.secret'.*inside a list or a map"):
        read(p)


BUCKET = {"type": "eq", "term": {"type": "transform", "transform": "bucket[4]", "term": "id"}, "value": 1}


def test_filters_it_cannot_evaluate_fail_instead_of_falling_back(restricted: dict[str, Any]) -> None:
    required = copy.deepcopy(restricted)
    required["read-restrictions"]["required-row-filter"] = BUCKET
    with pytest.raises(RestrictionError, match=r"Cannot evaluate the required row filter .*bucket\[4\]"):
        read(required, new_salt())
    with pytest.raises(RestrictionError, match=r"Cannot evaluate the scan's filter .*masked values"):
        read(with_filter(restricted, BUCKET), new_salt())
    unknown = copy.deepcopy(restricted)
    unknown["read-restrictions"]["required-row-filter"] = {"type": "eq", "term": "nowhere", "value": 1}
    with pytest.raises(RestrictionError, match="required row filter"):
        read(unknown, new_salt())
    # without restrictions, the same filter falls back to the tasks' residuals, as it always has
    unrestricted = {k: v for k, v in with_filter(restricted, BUCKET).items() if k != "read-restrictions"}
    assert len(read(unrestricted)) == len(RAW) - 1  # (all but the deleted row)


def test_a_count_reads_only_the_rows_enforcement_keeps(restricted: dict[str, Any]) -> None:
    """No column at all: ranges the row filter's statistics decide are counted from their metadata, the
    others read and filtered (the row filter's columns only), less the deleted rows."""
    salt = new_salt()
    batches = [b for task in restricted["tasks"] for b in read_task(task, restricted, salt=salt, columns=[])]
    assert sum(b.num_rows for b in batches) == len(expected_rows(salt)) == 3


def test_an_aggregate_of_a_masked_column_sees_masked_values(restricted: dict[str, Any]) -> None:
    """aggregate()'s read path (partial_aggregates) over the payloads: max and min of a masked column are of
    masked values, and the count is of enforced rows."""
    from spark_client.partial_aggregates import AggregateColumn, PartialAggregates, combine

    salt = new_salt()
    columns = [AggregateColumn("count"), AggregateColumn("max", ("email",)), AggregateColumn("min", ("card",))]
    partials = PartialAggregates(columns, pa.schema([("email", pa.string()), ("card", pa.string())]), 1024)
    rows = [next(iter(partials(p, partials.schema, None, 0))) for p in expand_tasks(wire(restricted), salt)]
    expected = expected_rows(salt)
    values = combine(["count", "max", "min"], pa.Table.from_batches(rows))
    assert values == [len(expected), max(r["email"] for r in expected), min(r["card"] for r in expected)]


def test_payloads_carry_the_query_salt(restricted: dict[str, Any]) -> None:
    salt = new_salt()
    payloads = task_payloads(wire(restricted), salt)
    assert all(json.loads(p)[SALT_KEY] == salt.hex() for p in payloads)
    schema_ = pa.schema([("id", pa.int64(), False), ("ssn", pa.string())])
    rows = sorted((r for p in payloads for b in read_payload(p, schema_) for r in b.to_pylist()), key=lambda r: r["id"])
    assert rows == [{"id": r["id"], "ssn": r["ssn"]} for r in expected_rows(salt)]
    assert task_payloads(wire({k: v for k, v in restricted.items() if k != "read-restrictions"}))[0].find(SALT_KEY) < 0


def test_masked_columns_are_not_declared_non_null(restricted: dict[str, Any]) -> None:
    """region holds no null, but a mask may write nulls (replace-with-null): Spark is not told it holds none."""
    assert non_null_field_ids(restricted) == [1]
    assert non_null_field_ids({k: v for k, v in restricted.items() if k != "read-restrictions"}) == [1, 3]


def test_a_plan_without_restrictions_reads_as_before(restricted: dict[str, Any]) -> None:
    unrestricted = {k: v for k, v in restricted.items() if k != "read-restrictions"}
    rows = read(unrestricted)
    raw = sorted((r for r in RAW if r["email"] != DELETED_EMAIL), key=lambda r: r["id"])
    # every row, raw, the region from the partition value (here the masked one a restricted plan would carry)
    assert rows == [{**r, "region": mask_alphanum(r["region"])} for r in raw]


def test_a_struct_mask_hides_its_fields_from_filters_and_the_partition(tmp_path: Path) -> None:
    """A mask on a struct covers the fields within: replace-with-null on info makes every row's info null,
    and a filter on info.zip sees null (so `info.zip = '8001'` keeps nothing)."""
    # (region unmasked here: its partition values are the files' own, as the service sends them then)
    restricted = write_table(tmp_path, partition=lambda region: region)
    restricted = _with_masks(restricted, {"action": "replace-with-null", "field-id": 7})
    salt = new_salt()
    assert {r["id"]: r["info"] for r in read(restricted, salt)} == {1: None, 7: None, 8: None}
    assert read(with_filter(restricted, {"type": "is-null", "term": "info.zip"}), salt) != []
    zip_code = {"type": "eq", "term": "info.zip", "value": "8001"}
    assert read(with_filter(restricted, zip_code), salt) == []


def test_the_raw_files_hold_what_the_oracle_says(restricted: dict[str, Any]) -> None:
    """(The oracle's raw rows are what the files hold: the expectations above rest on it.)"""
    files = [f["data-file"]["file-path"] for task in restricted["tasks"] for f in task["files"]]
    rows = sorted((r for path in files for r in pq.read_table(path).to_pylist()), key=lambda r: r["id"])
    assert rows == RAW
    assert SCHEMA["fields"][2]["name"] == "region"

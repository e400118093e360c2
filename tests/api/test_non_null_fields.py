"""A /plan's `non-null-field-ids` for every conformance read, against Iceberg Java's own null counts: the
top-level columns that every file Java's planFiles() plans gives a null count of 0, with the read's filter
and without (recorded by the generator), and Spark + Iceberg's rows."""

from __future__ import annotations

import httpx
import pyarrow.parquet as pq
import pytest

from planner_client import plan_request
from tests.conformance.read_cases import READ_CASES
from tests.conformance.reference import Conformance
from tests.spark_client.compare import assert_declared_non_null, read_arguments


@pytest.mark.parametrize("read_id", [c["id"] for c in READ_CASES])
def test_non_null_fields_are_what_the_planned_files_prove(
    conformance: Conformance, conformance_service: str, read_id: str
) -> None:
    """Proven over the files of the manifests the plan keeps (a superset of the planned files): at least what
    every file of the snapshot proves (not for an incremental read, whose added manifests may hold older
    files), at most what the planned files prove, exactly that without a filter; required columns always;
    nested and non-primitive columns only when required; none that holds a null in Spark + Iceberg's rows."""
    case = conformance.read(read_id)
    arguments = read_arguments(case)
    body = plan_request(f"db.{case['table']}", **arguments, inline_task_limit=0)
    plan = httpx.post(f"{conformance_service}/plan", json=body, timeout=60).raise_for_status().json()
    fields = {f["id"]: f for f in plan["schema"]["fields"]}
    declared = {fields[i]["name"] for i in plan["non-null-field-ids"]}
    required = {f["name"] for f in fields.values() if f["required"]}
    primitive = {f["name"] for f in fields.values() if isinstance(f["type"], str) and f["type"] != "unknown"}
    names = set(primitive) | required
    assert required <= declared <= names
    if case["null_free"]["planned"] is not None and not plan["metrics"]["scanned-data-files"]:
        assert declared == required
        return
    expected = pq.read_table(conformance.dir / case["path"])
    assert_declared_non_null(case, declared, required, names, expected)

"""plan_and_read on pyspark 3.5 (no Python data sources there), held to what test_dataframe.py holds
pyspark 4 to: every conformance read case must give Spark + Iceberg Java's rows and Spark types, one
partition per task; `limit=` reads and the partition counts Spark + Iceberg Java recorded for a session's
shuffle partitions; the demo table must read as PyIceberg reads it; and a table on moto's S3 must read as
PyIceberg reads it with no storage settings on the executors, only the credentials the service vends.

Starting a Spark takes seconds, so one subprocess in the small pyspark 3.5 venv (pyspark35_env.py) runs
every read in one SparkSession (pyspark35_read.py) and writes the rows of each to Parquet; the tests here,
one per read, compare those files with the expectations.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.aggregate_values import comparable
from tests.conformance.read_cases import AGGREGATE_CASES, PARTITION_COUNT_CASES, READ_CASES, plain_value
from tests.conformance.reference import REPO, Conformance
from tests.spark_client.compare import (
    assert_spark_read_matches,
    read_arguments,
    rows,
    snapshot_arguments,
)
from tests.spark_client.pyspark35_env import Pyspark35Env, ensure_pyspark35_env
from tests.spark_client.vended import TABLE as VENDED_TABLE
from tests.spark_client.vended import static_vending, sts_vending, vending_service

pytest.importorskip("pyspark")

HERE = Path(__file__).resolve().parent
CONFORMANCE = "conformance/"  # the prefix of a conformance read's name (then the case id, "<table>/<name>")
BY_ID = "by-id/"  # reads with every task fetched by its executor (inline-task-limit 0): the first of each table
AGGREGATE = "aggregate/"  # spark_client.aggregate of the conformance aggregate cases, by a Spark job
AGGREGATE_IN_DRIVER = "aggregate-in-driver/"  # ... read in the driver (small plans, by default)
PARTITIONS = "partitions/"  # PARTITION_COUNT_CASES by index: planned in a session of those shuffle partitions
LIMITED, WHOLE = "limit/many_manifests", "limit-whole/many_manifests"  # plan_and_read(limit=) and without
# the executors' task fetches are the same code whatever the case: each table's first read covers its formats
# and deletes (pyspark 4 reads every case by id, test_dataframe.py)
BY_ID_CASES = list({c["table"]: c for c in reversed(READ_CASES)}.values())
SMALL_SPLITS = {"split-size": 1024}  # a task per file
VENDED = "vended/"  # demo.events on moto's S3, read with only what the service vends (no storage of its own)
VENDED_READS: dict[str, dict[str, Any]] = {
    "static": {"columns": ["id", "ts", "region", "amount"]},
    "static-by-id": {"inline_task_limit": 0},
    "sts": {"filter": "region = 'eu'"},
}
DEMO_READS: dict[str, dict[str, Any]] = {
    "demo/all-small-splits": {"options": {"split-size": 4096}},
    "demo/filtered-projected": {"filter": "region = 'eu' AND id < 450", "columns": ["amount", "id"]},
    "demo/json-filter-tag": {"filter": {"type": "lt", "term": "id", "value": 120}, "ref": "first-load"},
    "demo/empty": {"filter": "id < 0"},
}


class Reads35:
    """What the pyspark 3.5 subprocess read: OUT_DIR/<name>.parquet and, per name, result.json's entry."""

    def __init__(self, env: Pyspark35Env, out: Path) -> None:
        self.env = env
        self.out = out
        self.results: dict[str, dict[str, Any]] = json.loads((out / "result.json").read_text())["reads"]

    def result(self, name: str) -> dict[str, Any]:
        return self.results[name]

    def table(self, name: str) -> Any:
        return pq.read_table(self.out / f"{name}.parquet")


def _request(name: str, service_url: str, table: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "service_url": service_url, "table": table, "arguments": arguments}


@pytest.fixture(scope="module")
def vending_services(
    vended_catalog: str, s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """Services vending static and STS credentials for the S3 table, by read name."""
    with (
        vending_service(tmp_path_factory.mktemp("static35"), vended_catalog, s3_endpoint, **static_vending()) as static,
        vending_service(
            tmp_path_factory.mktemp("sts35"), vended_catalog, s3_endpoint, **sts_vending(s3_endpoint)
        ) as sts,
    ):
        yield {"static": static, "static-by-id": static, "sts": sts}


@pytest.fixture(scope="module")
def reads35(
    tmp_path_factory: pytest.TempPathFactory,
    conformance: Conformance,
    conformance_service: str,
    demo_service: str,
    vending_services: dict[str, str],
) -> Reads35:
    """Every read of this module, done once by plan_and_read on pyspark 3.5 against the real services."""
    env35 = ensure_pyspark35_env()
    out = tmp_path_factory.mktemp("pyspark35-reads")
    requests = [
        _request(
            CONFORMANCE + c["id"], conformance_service, f"db.{c['table']}", read_arguments(conformance.read(c["id"]))
        )
        for c in READ_CASES
    ]
    requests += [
        _request(
            BY_ID + c["id"],
            conformance_service,
            f"db.{c['table']}",
            {**read_arguments(conformance.read(c["id"])), "inline_task_limit": 0},
        )
        for c in BY_ID_CASES
    ]
    requests += [_request(name, demo_service, "demo.events", arguments) for name, arguments in DEMO_READS.items()]
    requests += [
        _request(VENDED + name, vending_services[name], VENDED_TABLE, arguments)
        for name, arguments in VENDED_READS.items()
    ]
    requests += [
        {
            **_request(
                prefix + c["id"],
                conformance_service,
                f"db.{c['table']}",
                {"filter": c["filter"], **snapshot_arguments(conformance.aggregate(c["id"])["snapshot"]), **arguments},
            ),
            "aggregates": c["aggregates"],
        }
        for c in AGGREGATE_CASES
        for prefix, arguments in ((AGGREGATE, {"driver_read_bytes": 0}), (AGGREGATE_IN_DRIVER, {}))
    ]
    requests += [
        {
            **_request(f"{PARTITIONS}{i}", conformance_service, f"db.{table}", {"options": options or None}),
            "shuffle_partitions": shuffle,
            "plan_only": True,
        }
        for i, (table, shuffle, options) in enumerate(PARTITION_COUNT_CASES)
    ]
    wanted = _limit(conformance)
    requests += [
        _request(LIMITED, conformance_service, "db.many_manifests", {"limit": wanted, "options": SMALL_SPLITS}),
        _request(WHOLE, conformance_service, "db.many_manifests", {"options": SMALL_SPLITS}),
    ]
    requests_path = out / "requests.json"
    requests_path.write_text(json.dumps(requests))
    drop = {"SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "PYSPARK_DRIVER_PYTHON"}
    kept = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("AWS_")}  # no keys of its own
    environment = {**kept, "JAVA_HOME": env35.java_home, "PYSPARK_PYTHON": str(env35.python), "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [str(env35.python), str(HERE / "pyspark35_read.py"), str(requests_path), str(out)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-5000:]
    reads = Reads35(env35, out)
    assert set(reads.results) == {r["name"] for r in requests}
    return reads


def _limit(conformance: Conformance) -> int:
    """More rows than the first file (in Java's planFiles() order) of many_manifests holds: two files."""
    return int(conformance.case("many_manifests/current")["files"][0]["record_count"]) + 1


def test_the_reads_ran_on_pyspark_35(reads35: Reads35) -> None:
    assert reads35.env.pyspark_version.startswith("3.5.")
    assert {r["spark"] for r in reads35.results.values()} == {reads35.env.pyspark_version}


@pytest.mark.parametrize(
    ("prefix", "read_id"),
    [(CONFORMANCE, c["id"]) for c in READ_CASES] + [(BY_ID, c["id"]) for c in BY_ID_CASES],
    ids=[f"inline-{c['id']}" for c in READ_CASES] + [f"by-id-{c['id']}" for c in BY_ID_CASES],
)
def test_read_equals_spark_and_iceberg_java_on_pyspark_35(
    reads35: Reads35, conformance: Conformance, read_id: str, prefix: str
) -> None:
    from pyspark.sql.types import StructType

    case = conformance.read(read_id)
    result = reads35.result(prefix + read_id)
    assert "partitions" in result, result["error"]  # the DataFrame was built (an error here is a traceback)
    assert result["partitions"] == result["tasks"]
    assert "error" not in result, result["error"]
    schema = StructType.fromJson(result["schema"])
    assert_spark_read_matches(
        case, schema, reads35.table(prefix + read_id), pq.read_table(conformance.dir / case["path"])
    )


@pytest.mark.parametrize("case_id", [c["id"] for c in AGGREGATE_CASES])
def test_aggregate_equals_spark_and_iceberg_on_pyspark_35(
    reads35: Reads35, conformance: Conformance, case_id: str
) -> None:
    """spark_client.aggregate, held to what tests/spark_client/test_aggregates.py holds it to on pyspark 4."""
    from pyspark.sql.types import StructType

    case = conformance.aggregate(case_id)
    result = reads35.result(AGGREGATE + case_id)
    assert "error" not in result, result["error"]
    fields = StructType.fromJson(result["schema"]).fields
    assert [f.name for f in fields] == case["aggregates"]
    (row,) = reads35.table(AGGREGATE + case_id).to_pylist()
    types = [f.dataType.simpleString() for f in fields]
    assert comparable([plain_value(v) for v in row.values()], types) == comparable(case["read_values"], types)
    assert result["from_metadata"] == (case["pushed"] and case["stricter"] is None), case_id
    in_driver = reads35.result(AGGREGATE_IN_DRIVER + case_id)
    assert "error" not in in_driver, in_driver["error"]
    assert in_driver["from_metadata"]  # no Spark job: answered from metadata, or read in the driver
    (row,) = reads35.table(AGGREGATE_IN_DRIVER + case_id).to_pylist()
    assert comparable([plain_value(v) for v in row.values()], types) == comparable(case["read_values"], types)


def test_a_limit_reads_its_rows_from_fewer_tasks_on_pyspark_35(reads35: Reads35, conformance: Conformance) -> None:
    """limit=N: exactly N rows, each one of the table's (Spark + Iceberg's full read), from fewer tasks."""
    limited, whole = reads35.result(LIMITED), reads35.result(WHOLE)
    assert "error" not in limited and "error" not in whole, (limited.get("error"), whole.get("error"))
    assert 0 < limited["tasks"] < whole["tasks"]
    got = reads35.table(LIMITED)
    assert got.num_rows == limited["rows"] == _limit(conformance)
    table = rows(pq.read_table(conformance.dir / conformance.read("many_manifests/full")["path"]))
    assert all(table.get(row, 0) >= n for row, n in rows(got).items())  # rows of the table, none made up
    assert rows(reads35.table(WHOLE)) == table


@pytest.mark.parametrize("index", range(len(PARTITION_COUNT_CASES)))
def test_partitions_equal_spark_and_iceberg_on_pyspark_35(
    reads35: Reads35, conformance: Conformance, index: int
) -> None:
    """The pyspark 3.5 session's parallelism travels with the plan: Spark + Iceberg Java's partition count."""
    recorded = conformance.expected["partition_counts"][index]
    assert (recorded["table"], recorded["shuffle_partitions"], recorded["options"]) == PARTITION_COUNT_CASES[index]
    result = reads35.result(f"{PARTITIONS}{index}")
    assert "error" not in result, result["error"]
    assert result["parallelism"] == recorded["parallelism"]
    assert result["partitions"] == recorded["partitions"]


def test_the_demo_table_as_pyiceberg_reads_it_on_pyspark_35(reads35: Reads35, demo_table: Any) -> None:
    results = {name: reads35.result(name) for name in DEMO_READS}
    for name, result in results.items():
        assert "error" not in result, result["error"]
        assert result["partitions"] == result["tasks"], name
    assert results["demo/all-small-splits"]["tasks"] > 10 and results["demo/empty"]["tasks"] == 0

    first = demo_table.snapshot_by_name("first-load").snapshot_id
    expected = {
        "demo/all-small-splits": demo_table.scan(),
        "demo/filtered-projected": demo_table.scan(
            row_filter="region = 'eu' AND id < 450", selected_fields=("amount", "id")
        ),
        "demo/json-filter-tag": demo_table.scan(row_filter="id < 120", snapshot_id=first),
        "demo/empty": demo_table.scan(row_filter="id < 0"),
    }
    for name, scan in expected.items():
        ours = reads35.table(name)
        theirs = scan.to_arrow()
        assert ours.column_names == [f["name"] for f in results[name]["schema"]["fields"]], name
        assert rows(ours) == rows(theirs.select(ours.column_names)), name
    assert results["demo/filtered-projected"]["schema"]["fields"][1] == {
        "name": "id",
        "type": "long",
        "nullable": False,
        "metadata": {},
    }


def test_vended_credentials_on_pyspark_35(reads35: Reads35, vended_table: Any) -> None:
    """plan_and_read with no storage settings, on executors with no keys of their own: the rows PyIceberg reads
    from the table (with the service's keys), through static and STS credentials, inline and by id."""
    expected = {
        "static": vended_table.scan(selected_fields=("id", "ts", "region", "amount")),
        "static-by-id": vended_table.scan(),
        "sts": vended_table.scan(row_filter="region = 'eu'"),
    }
    for name, scan in expected.items():
        result = reads35.result(VENDED + name)
        assert "error" not in result, result["error"]
        ours, theirs = reads35.table(VENDED + name), scan.to_arrow()
        assert ours.num_rows == theirs.num_rows > 0, name
        assert rows(ours) == rows(theirs.select(ours.column_names)), name

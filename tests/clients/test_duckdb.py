"""DuckDB's Iceberg REST client (1.4.4 and 1.5.5, each with its defaults) attached to the service's /v1
catalog over the conformance warehouse, with stray files in it (a README and a tables.json at the root, a
notes.txt among the tables): it lists every namespace and table, as Java's HadoopCatalog lists them
(directories only), and reads every table and a few filtered queries with the rows Spark + Iceberg read
(count, and no row in one and not the other).

DuckDB plans and reads on its own (it reads the metadata the catalog names: the service does not tell it to
plan here, and its loadTable `config` is empty, which DuckDB 1.5 needs), so where it cannot read a table the
reason is its own, asserted here by its message (and for fixed_types by reading the same metadata file
without the service): no ORC or Avro data files, no v1 snapshot without a manifest list, fixed partition
values as Iceberg Java writes them; in 1.4, no equality deletes unless their columns are selected and no name
mapping; in 1.5, two rows too few where equality deletes apply.
Each release runs in a venv of its own (venvs.py), the queries in one process (duckdb_reads.py).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clients.venvs import DUCKDB_REQUIREMENTS, duckdb_python
from tests.conformance.read_cases import READ_CASES
from tests.conformance.reference import Conformance
from tests.conftest import running_service

RUNNER = Path(__file__).with_name("duckdb_reads.py")
# What DuckDB cannot read by itself, per release, and the words of its refusal (None: it reads other rows
# than Spark, the same with or without the service)
_COMMON = {
    "avro_evolved": "File format 'AVRO' not supported",
    "avro_format": "File format 'AVRO' not supported",
    "avro_types": "File format 'AVRO' not supported",
    "mixed_formats": "File format 'AVRO' not supported",
    "mixed_v3": "File format 'AVRO' not supported",
    "orc_evolved": "File format 'ORC' not supported",
    "orc_stripes": "File format 'ORC' not supported",
    "orc_types": "File format 'ORC' not supported",
    "v1_inline": "Snapshot required property 'manifest-list' is missing",
    "fixed_types": None,
}
DUCKDB_CANNOT: dict[str, dict[str, str | None]] = {
    "1.4.4": {
        **_COMMON,
        "equality_deletes": "Equality deletes need the relevant columns to be selected",
        "name_mapped": "does not have a field-id, and no field-mapping exists",
    },
    "1.5.5": {**_COMMON, "equality_deletes": None},  # reads name mapping; drops 2 rows equality deletes keep
}
# Filtered reads whose Spark SQL is DuckDB SQL too
FILTERED = (
    "unpartitioned/id-lt",
    "unpartitioned/in",
    "unpartitioned/not-and-or",
    "identity_part/category-eq",
    "identity_part/partition-or-column",
    "bucket_part/in",
    "mor_position_deletes/category",
    "v3_dv/id-lt",
)
STRAYS = ("README", "tables.json", "db/notes.txt")
FULL_READS = sorted(c["table"] for c in READ_CASES if c["id"] == f"{c['table']}/full")


@pytest.fixture(scope="module")
def service(conformance: Conformance) -> Iterator[str]:
    warehouse = conformance.dir / "warehouse"
    planted = [warehouse / stray for stray in STRAYS]
    for path in planted:
        path.write_text("not a namespace, not a table")
    try:
        with running_service("--warehouse", str(warehouse)) as url:
            yield url
    finally:
        for path in planted:
            path.unlink(missing_ok=True)


def _requests(conformance: Conformance) -> dict[str, Any]:
    reference = {r["id"]: str(conformance.dir / r["path"]) for r in conformance.reads}
    tables = [{"name": t, "reference": reference[f"{t}/full"]} for t in FULL_READS]
    queries = []
    for case in (c for c in READ_CASES if c["id"] in FILTERED):
        columns = ", ".join(case["columns"] or ["*"])
        sql = f"SELECT {columns} FROM sp.db.{case['table']} WHERE {case['spark_filter']}"
        queries.append({"id": case["id"], "sql": sql, "reference": reference[case["id"]]})
    return {"tables": tables, "queries": queries}


@pytest.fixture(scope="module", params=sorted(DUCKDB_REQUIREMENTS))
def duckdb_result(
    request: pytest.FixtureRequest, conformance: Conformance, service: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """Everything one DuckDB release did against the service (one process: duckdb_reads.py)."""
    version: str = request.param
    python = duckdb_python(version)
    work = tmp_path_factory.mktemp(f"duckdb-{version}")
    (work / "requests.json").write_text(json.dumps(_requests(conformance)))
    cmd = [str(python), str(RUNNER), "--endpoint", service, "--requests", str(work / "requests.json")]
    proc = subprocess.run([*cmd, "--out", str(work / "result.json")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads((work / "result.json").read_text())
    assert result["version"] == version
    return result


def _tables(conformance: Conformance) -> list[str]:
    return sorted(p.name for p in (conformance.dir / "warehouse" / "db").iterdir() if p.is_dir())


def test_duckdb_lists_what_the_warehouse_holds(conformance: Conformance, duckdb_result: dict[str, Any]) -> None:
    listed = duckdb_result["listed"]
    assert {(catalog, schema) for catalog, schema, _ in listed} == {("sp", "db")}
    assert sorted(name for _, _, name in listed) == _tables(conformance)


def test_duckdb_reads_every_table_as_spark_and_iceberg_read_it(
    conformance: Conformance, duckdb_result: dict[str, Any]
) -> None:
    cannot = DUCKDB_CANNOT[duckdb_result["version"]]
    for table in FULL_READS:
        result = duckdb_result["tables"][table]
        same = {"rows": conformance.read(f"{table}/full")["rows"], "only_ours": 0, "only_reference": 0}
        if table not in cannot:
            assert result == same, table
        elif cannot[table] is not None:
            assert cannot[table] in result.get("error", ""), (table, result)
        else:  # DuckDB's own reading of the table's metadata file differs, with or without the service
            assert result == _alone(conformance, duckdb_result["version"], table) != same, table


def _alone(conformance: Conformance, version: str, table: str) -> dict[str, Any]:
    """What DuckDB reads of the table from its newest metadata file, without the service."""
    metadata = sorted((conformance.dir / "warehouse" / "db" / table / "metadata").glob("*.metadata.json"))[-1]
    reference = conformance.dir / conformance.read(f"{table}/full")["path"]
    script = (
        "import json, sys, duckdb; sys.path.insert(0, sys.argv[1]); import duckdb_reads as r;"
        "con = duckdb.connect(config={'allow_unsigned_extensions': 'true'});"
        "[con.execute(f\"LOAD '{r.extension_file(n)}'\") for n in r.EXTENSIONS];"
        "print(json.dumps(r.counted(con, f\"SELECT * FROM iceberg_scan('{sys.argv[2]}')\", sys.argv[3])))"
    )
    python = str(duckdb_python(version))
    proc = subprocess.run(
        [python, "-c", script, str(RUNNER.parent), str(metadata), str(reference)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    alone: dict[str, Any] = json.loads(proc.stdout)
    return alone


def test_duckdb_filtered_reads(conformance: Conformance, duckdb_result: dict[str, Any]) -> None:
    assert sorted(duckdb_result["queries"]) == sorted(FILTERED)
    for case_id, result in duckdb_result["queries"].items():
        expected_rows = conformance.read(case_id)["rows"]
        assert result == {"rows": expected_rows, "only_ours": 0, "only_reference": 0}, case_id


def test_every_table_has_a_full_read(conformance: Conformance) -> None:
    assert set(FULL_READS) == set(conformance.tables)


def test_duckdb_as_a_principal_sees_and_reads_what_it_is_granted(conformance: Conformance, tmp_path: Path) -> None:
    """With a grants policy, DuckDB attached with a principal's bearer token lists only the table it is
    granted and reads it as Spark + Iceberg does; the other table is one that does not exist for it."""
    config = tmp_path / "service.json"
    rules = [{"principals": ["duck"], "tables": ["db.unpartitioned"], "privileges": ["plan", "credentials"]}]
    settings = {"warehouse": str(conformance.dir / "warehouse"), "auth_tokens": {"duck": "duck-token"}}
    config.write_text(json.dumps({**settings, "access_rules": rules}))
    reference = str(conformance.dir / conformance.read("unpartitioned/full")["path"])
    requests = {"tables": [{"name": "unpartitioned", "reference": reference}, {"name": "identity_part"}], "queries": []}
    (tmp_path / "requests.json").write_text(json.dumps(requests))
    version = max(DUCKDB_REQUIREMENTS)
    with running_service("--config", str(config)) as url:
        cmd = [
            str(duckdb_python(version)),
            str(RUNNER),
            "--endpoint",
            url,
            "--requests",
            str(tmp_path / "requests.json"),
        ]
        cmd += ["--out", str(tmp_path / "result.json"), "--token", "duck-token"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert [row[:3] for row in result["listed"]] == [["sp", "db", "unpartitioned"]], result["listed"]
    expected = conformance.read("unpartitioned/full")["rows"]
    assert result["tables"]["unpartitioned"] == {"rows": expected, "only_ours": 0, "only_reference": 0}
    assert "does not exist" in result["tables"]["identity_part"]["error"], result["tables"]["identity_part"]

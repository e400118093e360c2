"""PyIceberg 0.12's RestCatalog with its defaults against the service's /v1 catalog over the conformance
warehouse: it lists every namespace and table, and reads every table with the rows Spark + Iceberg read.

The service does not tell PyIceberg to plan here (rest_catalog.advertises_server_planning: 0.12 plans
server-side synchronously only and refuses null partition values), so it plans in the client from the
metadata the catalog serves; where it cannot read a table the reason is its own, asserted by its message.
tests/api/test_rest_scan.py holds PyIceberg's server-side planning (`scan-planning-mode=server`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog

from tests.conformance.read_cases import READ_CASES
from tests.conformance.reference import Conformance
from tests.spark_client.compare import rows

RUNNER = Path(__file__).with_name("pyiceberg_reads.py")
EQUALITY_DELETES = "PyIceberg does not yet support equality deletes"
# What PyIceberg 0.12 cannot read by itself, and the words of its refusal
PYICEBERG_CANNOT = {
    "avro_evolved": EQUALITY_DELETES,
    "avro_format": "Unsupported file format: FileFormat.AVRO",
    "avro_types": "Unsupported file format: FileFormat.AVRO",
    "equality_deletes": EQUALITY_DELETES,
    "mixed_formats": EQUALITY_DELETES,
    "mixed_v3": "Unsupported file format: FileFormat.AVRO",
    "name_mapped": "Could not find field with name: extra",
    "orc_evolved": EQUALITY_DELETES,
    "v1_inline": "manifest-list\n  Field required",
}
# Where PyIceberg reads other values than Spark: the rows that differ, on each side
PYICEBERG_DIFFERS = {"all_types": 1, "orc_types": 1}  # each one null list (lst) read as an empty list
CRASHES = ("fixed_types",)  # a segmentation fault in PyIceberg's Avro decoder, planning with or without us
FULL_READS = sorted(c["table"] for c in READ_CASES if c["id"] == f"{c['table']}/full")


def _read(service: str, out: Path, tables: list[str]) -> subprocess.CompletedProcess[str]:
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(RUNNER), service, str(out), *tables]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def test_pyiceberg_lists_what_the_warehouse_holds(conformance: Conformance, conformance_service: str) -> None:
    catalog = RestCatalog("scan-planner", uri=conformance_service)
    assert catalog.list_namespaces() == [("db",)]
    names = {*conformance.tables, *conformance.expected["sized_tables"]}
    assert sorted(name for _, name in catalog.list_tables("db")) == sorted(names)


def test_pyiceberg_reads_every_table_with_its_defaults(
    conformance: Conformance, conformance_service: str, tmp_path: Path
) -> None:
    readable = [t for t in FULL_READS if t not in CRASHES]
    proc = _read(conformance_service, tmp_path, readable)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads((tmp_path / "result.json").read_text())
    assert result["server_side"] is False
    for table in readable:
        outcome = result["tables"][table]
        if table in PYICEBERG_CANNOT:
            assert PYICEBERG_CANNOT[table] in outcome.get("error", ""), (table, outcome)
            continue
        read = conformance.read(f"{table}/full")
        assert outcome == {"rows": read["rows"]}, table
        ours, spark = (
            rows(pq.read_table(tmp_path / f"{table}.parquet")),
            rows(pq.read_table(conformance.dir / read["path"])),
        )
        differing = PYICEBERG_DIFFERS.get(table, 0)
        assert (sum((ours - spark).values()), sum((spark - ours).values())) == (differing, differing), table


@pytest.mark.parametrize("table", CRASHES)
def test_pyiceberg_crashes_on_its_own(conformance: Conformance, table: str, tmp_path: Path) -> None:
    """PyIceberg's own Avro decoder dies on the table's manifests: so it does loading the metadata file
    itself, without the service (StaticTable), so the crash is PyIceberg's, not an answer of ours."""
    metadata = sorted((conformance.dir / "warehouse" / "db" / table / "metadata").glob("*.metadata.json"))[-1]
    script = (
        "import sys; from pyiceberg.table import StaticTable;StaticTable.from_metadata(sys.argv[1]).scan().to_arrow()"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(metadata)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -11, proc.stderr[-2000:]  # SIGSEGV

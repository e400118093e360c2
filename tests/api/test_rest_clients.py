"""Real Iceberg REST clients attached to the service's /v1 catalog over the conformance warehouse, with stray
files in it (a README and a tables.json at the root, a notes.txt among the tables): DuckDB 1.4's Iceberg
extension and PyIceberg list every namespace and table, as Java's HadoopCatalog lists them (directories only),
and DuckDB reads every table with the rows Spark + Iceberg read (count, and no row in one and not the other).

DuckDB plans and reads on its own (it reads the metadata the catalog names), so where it cannot read a table
the reason is its own, asserted here by its message (and for fixed_types by reading the same metadata file
without the service): no ORC or Avro data files, no equality deletes unless their columns are selected, no
name mapping, no v1 snapshot without a manifest list, and fixed partition values as Iceberg Java writes them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from pyiceberg.catalog.rest import RestCatalog

from tests.conformance.read_cases import READ_CASES
from tests.conformance.reference import Conformance
from tests.conftest import running_service

EXTENSIONS = ("httpfs", "avro", "iceberg")
# What DuckDB 1.4.4 cannot read by itself, and the words of its refusal (None: it reads no rows)
DUCKDB_CANNOT = {
    "avro_evolved": "File format 'AVRO' not supported",
    "avro_format": "File format 'AVRO' not supported",
    "avro_types": "File format 'AVRO' not supported",
    "mixed_formats": "File format 'AVRO' not supported",
    "mixed_v3": "File format 'AVRO' not supported",
    "orc_evolved": "File format 'ORC' not supported",
    "orc_stripes": "File format 'ORC' not supported",
    "orc_types": "File format 'ORC' not supported",
    "equality_deletes": "Equality deletes need the relevant columns to be selected",
    "name_mapped": "does not have a field-id, and no field-mapping exists",
    "v1_inline": "Snapshot required property 'manifest-list' is missing",
    "fixed_types": None,
}
STRAYS = ("README", "tables.json", "db/notes.txt")


def _duckdb() -> duckdb.DuckDBPyConnection:
    """DuckDB with the Iceberg extension loaded from its PyPI package (no download)."""
    directory = Path(duckdb.__file__).parent.parent / "duckdb_ext" / "extensions" / f"v{duckdb.__version__}"
    platform = next(directory.iterdir())
    con = duckdb.connect(
        config={
            "allow_unsigned_extensions": "true",
            "autoinstall_known_extensions": "false",
            "autoload_known_extensions": "false",
        }
    )
    for name in EXTENSIONS:
        con.execute(f"LOAD '{platform / name}.duckdb_extension'")
    return con


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


@pytest.fixture(scope="module")
def attached(service: str) -> duckdb.DuckDBPyConnection:
    con = _duckdb()
    con.execute(f"ATTACH 'warehouse' AS c (TYPE iceberg, ENDPOINT '{service}', AUTHORIZATION_TYPE 'none')")
    return con


def _tables(conformance: Conformance) -> list[str]:
    return sorted(p.name for p in (conformance.dir / "warehouse" / "db").iterdir() if p.is_dir())


def test_duckdb_and_pyiceberg_list_what_the_warehouse_holds(
    conformance: Conformance, service: str, attached: duckdb.DuckDBPyConnection
) -> None:
    listed = attached.execute("SHOW ALL TABLES").fetchall()
    assert {row[1] for row in listed} == {"db"}
    assert sorted(row[2] for row in listed) == _tables(conformance)
    catalog = RestCatalog("served", uri=service)
    assert catalog.list_namespaces() == [("db",)]
    assert sorted(name for _, name in catalog.list_tables("db")) == _tables(conformance)


def _full_reads(conformance: Conformance) -> list[dict[str, Any]]:
    return [r for r in conformance.reads if r["id"] == f"{r['table']}/full"]


@pytest.mark.parametrize("table", sorted(c["table"] for c in READ_CASES if c["id"] == f"{c['table']}/full"))
def test_duckdb_reads_what_spark_and_iceberg_read(
    conformance: Conformance, attached: duckdb.DuckDBPyConnection, table: str
) -> None:
    read = conformance.read(f"{table}/full")
    spark_rows = conformance.dir / read["path"]
    ours = f"c.db.{table}"
    if table in DUCKDB_CANNOT:
        reason = DUCKDB_CANNOT[table]
        if reason is not None:
            with pytest.raises(duckdb.Error, match=reason):
                attached.execute(f"SELECT count(*) FROM {ours}").fetchone()
            return
        metadata = sorted((conformance.dir / "warehouse" / "db" / table / "metadata").glob("*.metadata.json"))[-1]
        alone = _duckdb().execute(f"SELECT count(*) FROM iceberg_scan('{metadata}')").fetchone()
        assert attached.execute(f"SELECT count(*) FROM {ours}").fetchone() == alone != (read["rows"],)
        return
    assert attached.execute(f"SELECT count(*) FROM {ours}").fetchone() == (read["rows"],)
    for left, right in ((ours, f"read_parquet('{spark_rows}')"), (f"read_parquet('{spark_rows}')", ours)):
        only = attached.execute(f"SELECT count(*) FROM (SELECT * FROM {left} EXCEPT ALL SELECT * FROM {right})")
        assert only.fetchone() == (0,), f"rows of {left} that {right} does not have"


def test_every_table_has_a_full_read(conformance: Conformance) -> None:
    assert {r["table"] for r in _full_reads(conformance)} == set(conformance.tables)

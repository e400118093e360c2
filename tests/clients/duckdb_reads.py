"""Run by tests/clients/test_duckdb.py in a DuckDB venv (duckdb_env.py): attach the service as an Iceberg REST
catalog with DuckDB's defaults and run the queries asked for, in one process.

    python duckdb_reads.py --endpoint URL --requests REQUESTS_JSON --out RESULT_JSON [--token TOKEN]

REQUESTS_JSON is {"tables": [{"name", "reference"}], "queries": [{"id", "sql", "reference"}]}: each table is
counted (SELECT count(*) FROM sp.db.<name>); with a reference (a Parquet file of Spark + Iceberg's rows) the
rows of each side that the other lacks are counted too (EXCEPT ALL both ways), and so for each query.
RESULT_JSON records DuckDB's version, SHOW ALL TABLES, and per table and query its counts or its error.
The extensions (httpfs, avro, iceberg) are loaded from their PyPI packages, so nothing is downloaded; every
other setting is DuckDB's default. Needs only duckdb and the standard library.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import duckdb

EXTENSIONS = ("httpfs", "avro", "iceberg")


def extension_file(name: str) -> Path:
    """An extension's file as its PyPI package lays it out: duckdb-extension-<name> (1.5) or duckdb-ext-<name> (1.4)."""
    site = Path(duckdb.__file__).parent.parent
    version = f"v{duckdb.__version__}"
    for pattern in (
        f"duckdb_extension_{name}/extensions/{version}/*.duckdb_extension",
        f"duckdb_ext/extensions/{version}/*/{name}.duckdb_extension",
    ):
        found = sorted(site.glob(pattern))
        if found:
            return found[0]
    raise SystemExit(f"the {name} extension of DuckDB {duckdb.__version__} is not installed in {site}")


def connect(endpoint: str, token: str | None = None) -> duckdb.DuckDBPyConnection:
    """The service attached as catalog `sp`; with `token`, as DuckDB's docs attach a catalog with a bearer
    token (an iceberg secret holding it)."""
    con = duckdb.connect(config={"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false"})
    for name in EXTENSIONS:
        con.execute(f"LOAD '{extension_file(name)}'")
    if token is None:
        con.execute(f"ATTACH 'warehouse' AS sp (TYPE iceberg, ENDPOINT '{endpoint}', AUTHORIZATION_TYPE 'none')")
    else:
        con.execute(f"CREATE SECRET service_token (TYPE iceberg, TOKEN '{token}')")
        con.execute(f"ATTACH 'warehouse' AS sp (TYPE iceberg, ENDPOINT '{endpoint}', SECRET service_token)")
    return con


def counted(con: duckdb.DuckDBPyConnection, sql: str, reference: str | None) -> dict[str, Any]:
    """The query's row count, and with a reference the rows only it has and the rows only the reference has."""
    try:
        (rows,) = con.execute(f"SELECT count(*) FROM ({sql})").fetchone() or (None,)
        result: dict[str, Any] = {"rows": rows}
        if reference is not None:
            theirs = f"SELECT * FROM read_parquet('{reference}')"
            for key, left, right in (("only_ours", sql, theirs), ("only_reference", theirs, sql)):
                (only,) = con.execute(f"SELECT count(*) FROM ({left} EXCEPT ALL {right})").fetchone() or (None,)
                result[key] = only
        return result
    except duckdb.Error as err:
        return {"error": f"{type(err).__name__}: {err}"}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--requests", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--token", help="a bearer token for the service")
    args = parser.parse_args()
    requests = json.loads(args.requests.read_text())
    con = connect(args.endpoint, args.token)
    listed = [list(row[:3]) for row in con.execute("SHOW ALL TABLES").fetchall()]
    tables = {
        t["name"]: counted(con, f"SELECT * FROM sp.db.{t['name']}", t.get("reference")) for t in requests["tables"]
    }
    queries = {q["id"]: counted(con, q["sql"], q.get("reference")) for q in requests["queries"]}
    result = {"version": duckdb.__version__, "listed": listed, "tables": tables, "queries": queries}
    args.out.write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

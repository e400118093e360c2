"""Run by tests/clients/test_pyiceberg.py: PyIceberg's RestCatalog with its defaults (only `uri`) reads the
tables named on the command line through the service, one after the other, in one process.

    python pyiceberg_reads.py URI OUT_DIR TABLE [TABLE ...]

Each table's rows (`load_table(...).scan().to_arrow()`) become OUT_DIR/<table>.parquet; OUT_DIR/result.json
records per table the rows read or PyIceberg's error, and whether the scan was planned by the service (the
catalog's own answer: supports_server_side_planning()). A subprocess, because PyIceberg's Avro decoder can
crash the interpreter (a segmentation fault on Iceberg Java's manifests of fixed partition values).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from pyiceberg.catalog.rest import RestCatalog


def main() -> int:
    uri, out, tables = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    catalog = RestCatalog("scan-planner", uri=uri)
    result: dict[str, Any] = {"server_side": catalog.supports_server_side_planning(), "tables": {}}
    for name in tables:
        try:
            rows = catalog.load_table(f"db.{name}").scan().to_arrow()
        except Exception as err:  # recorded; the other tables still run
            result["tables"][name] = {"error": f"{type(err).__name__}: {err}"[:2000]}
            continue
        pq.write_table(rows, out / f"{name}.parquet")
        result["tables"][name] = {"rows": rows.num_rows}
    (out / "result.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""iceberg-go's REST catalog (v0.7.0, the first release with remote scan planning) against the service over
the conformance warehouse: each table read with its scans planned on the service
(`table.WithScanPlanningMode(table.ScanPlanningRemote)`) and, iceberg-go's default, planned locally from the
manifests the catalog names. Every table it can read gives exactly Spark + Iceberg's rows either way;
where it cannot, the reason is its own, asserted by its message: no ORC or Avro data files (nor position
deletes in them), no name mapping. Planned on the service, it also reads `fixed_types`, whose manifests
(Java's fixed partition values written as Avro bytes, apache/iceberg#17501) its own Avro decoder refuses.

The Go program (iceberg_go/main.go) is built once per content into $SCAN_PLANNER_CACHE/bin (a minute and
a half the first time; modules from the Go module proxy).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest

from tests.conformance.reference import Conformance, load_java_env
from tests.spark_client.compare import rows

SOURCE = Path(__file__).with_name("iceberg_go")
PLAN_ROUTE = 'method="POST",route="/v1/namespaces/{namespace}/tables/{table}/plan"'
NOT_PARQUET = "not implemented: only parquet format is implemented"
POSITION_DELETES = "read position deletes from"
# What iceberg-go v0.7.0 cannot read, either way, and the words of its refusal (of a table with two reasons,
# either: it stops at the first file that has one, and file order follows the manifests' UUID names)
GO_CANNOT: dict[str, str | tuple[str, ...]] = {
    "avro_evolved": POSITION_DELETES,
    "avro_format": NOT_PARQUET,
    "avro_types": NOT_PARQUET,
    "mixed_formats": POSITION_DELETES,
    "mixed_v3": NOT_PARQUET,
    "name_mapped": "cannot convert extra",
    "orc_evolved": (POSITION_DELETES, NOT_PARQUET),
    "orc_stripes": NOT_PARQUET,
    "orc_types": NOT_PARQUET,
}
LOCAL_CANNOT: dict[str, str | tuple[str, ...]] = {"fixed_types": "ocf: decoding datum", "orc_evolved": NOT_PARQUET}


def go_reader() -> Path:
    """The built program, cached by the digest of its sources."""
    go = shutil.which("go")
    if go is None:
        pytest.fail("`go` is not on PATH: install Go 1.25 or newer (the iceberg-go client is built with it)")
    digest = hashlib.sha256()
    for name in ("main.go", "go.mod", "go.sum"):
        digest.update((SOURCE / name).read_bytes())
    target = Path(load_java_env().cache_root()) / "bin" / f"iceberg_go_reads-{digest.hexdigest()[:12]}"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        proc = subprocess.run([go, "build", "-o", str(tmp), "."], cwd=SOURCE, capture_output=True, text=True)
        assert proc.returncode == 0, f"go build failed (is the Go module proxy reachable?):\n{proc.stderr[-3000:]}"
        os.replace(tmp, target)
    return target


def _plans(service: str) -> float:
    text = httpx.get(f"{service}/metrics", timeout=30).text
    return sum(
        float(v)
        for v in re.findall(r"^scan_planner_requests_total\{" + re.escape(PLAN_ROUTE) + r"[^}]*\} (\S+)$", text, re.M)
    )


def _read(service: str, mode: str, out: Path, tables: list[str]) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    cmd = [str(go_reader()), service, mode, str(out), *(f"db.{t}" for t in tables)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads((out / "result.json").read_text())
    return result


@pytest.mark.parametrize("mode", ["remote", "local"])
def test_iceberg_go_reads_every_table(
    conformance: Conformance, conformance_service: str, tmp_path: Path, mode: str
) -> None:
    tables = sorted(conformance.tables)
    before = _plans(conformance_service)
    result = _read(conformance_service, mode, tmp_path, tables)
    planned = _plans(conformance_service) - before
    cannot = GO_CANNOT | (LOCAL_CANNOT if mode == "local" else {})
    for table in tables:
        outcome = result[f"db.{table}"]
        if table in cannot:
            reasons = cannot[table]
            error = outcome.get("error", "")
            assert any(r in error for r in ((reasons,) if isinstance(reasons, str) else reasons)), (table, outcome)
            continue
        read = conformance.read(f"{table}/full")
        assert outcome == {"rows": read["rows"]}, (table, outcome)
        ours = rows(pq.read_table(tmp_path / f"{table}.parquet"))
        assert ours == rows(pq.read_table(conformance.dir / read["path"])), table
    if mode == "remote":  # every scan of a table with a snapshot planned on the service
        assert planned >= len([t for t in tables if conformance.tables[t].get("current_snapshot_id")])
    else:
        assert planned == 0

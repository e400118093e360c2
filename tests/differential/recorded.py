"""Java's side of the suite's differential runs, recorded once per content of the generator and cached.

$SCAN_PLANNER_CACHE/differential/<digest>/ (default ~/.cache/scan-planner) holds warehouse/ (the tables
Spark + Iceberg wrote) and recorded.json (each history's ops and Java's answers), written last, atomically;
the digest covers every file that decides the tables and the answers (GENERATOR_FILES) and what was asked
(a tier's seeds, request count and history size, or the regression cases). A warm run only plans on our
side. A file lock keeps parallel sessions from recording the same directory twice, as
tests/conformance/reference.py does for the conformance tables.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conformance import reference
from tests.differential.driver import JavaProcess, log
from tests.differential.fuzz import Recorded, ask_java
from tests.differential.requests import TableShape
from tests.differential.spark_reads import rows_read

HERE = Path(__file__).resolve().parent
GENERATOR_FILES = (
    HERE / "histories.py",
    HERE / "requests.py",
    HERE / "sql.py",
    HERE / "java_side.py",
    HERE / "spark_reads.py",
    HERE / "driver.py",
    HERE / "fuzz.py",  # (which requests Spark reads, and when)
    reference.GENERATE,
    reference.HERE / "reference_tables.py",
    reference.JAVA_ENV,
)
REGRESSIONS = HERE / "regressions"


@dataclass(frozen=True)
class Tier:
    """A seeded run of the suite: histories `first_seed`.. (`histories` of them), `requests` each."""

    name: str
    first_seed: int
    histories: int
    requests: int
    size: str

    @property
    def key(self) -> str:
        return f"{self.name}-{self.first_seed}-{self.histories}x{self.requests}-{self.size}"


def _cached(key: str, record: Callable[[JavaProcess], Any]) -> Any:
    """recorded.json of `key` under the generator's digest: from the cache, or recorded now (locked)."""
    java_env = reference.load_java_env()
    digest = hashlib.sha256((reference.generator_digest(GENERATOR_FILES) + key).encode()).hexdigest()[:16]
    target = java_env.cache_root() / "differential" / digest
    done = target / "recorded.json"
    if not done.exists():
        with java_env.file_lock(target.with_name(target.name + ".lock")):
            if not done.exists():  # another session may have recorded it meanwhile
                started = time.monotonic()
                print(f"\n[differential] recording Java's answers for {key} into {target}", file=sys.stderr)
                with JavaProcess(target / "warehouse") as java:
                    data = record(java)
                tmp = done.with_name(done.name + ".tmp")
                tmp.write_text(json.dumps(data))
                os.replace(tmp, done)
                log(f"recorded {key} in {time.monotonic() - started:.0f}s")
    return json.loads(done.read_text())


def load_tier(tier: Tier) -> list[Recorded]:
    """Java's answers for every history and request of `tier`."""

    def record(java: JavaProcess) -> list[dict[str, Any]]:
        seeds = range(tier.first_seed, tier.first_seed + tier.histories)
        return [ask_java(java, seed, tier.requests, tier.size)[0].to_json() for seed in seeds]

    return [Recorded.from_json(r) for r in _cached(tier.key, record)]


def regression_cases() -> list[Path]:
    return sorted(REGRESSIONS.glob("*.json"))


def load_regressions() -> dict[str, dict[str, Any]]:
    """Each saved case (regressions/<name>.json: a history and a request) replayed by Java: its table's
    metadata location, the ops Spark applied, and Java's answer now; a case with `"read": "rows"` (a finding
    of the rows Spark reads) also has Spark + Iceberg's rows of the request ("spark": {"rows_read", "rows"}, and
    "restricted" when the request carries a read restriction: spark_reads.py)."""
    cases = {path.stem: json.loads(path.read_text()) for path in regression_cases()}
    key = "regressions-" + hashlib.sha256(json.dumps(cases, sort_keys=True).encode()).hexdigest()[:16]

    def record(java: JavaProcess) -> dict[str, Any]:
        out = {}
        for name, case in cases.items():
            built = java.replay(case["history"])
            reply = java.plan(built.table, case["request"]) if built.metadata_location else {"invalid": "no table"}
            out[name] = {"ops": built.ops, "metadata_location": built.metadata_location, **reply}
            if case.get("read") == "rows" and built.metadata_location and "request" in reply:
                resolved = reply["request"]
                assert isinstance(resolved, dict)
                shape = TableShape(built.metadata_location)
                rows = rows_read(resolved, shape.schemas[shape.current_schema_id])
                out[name]["spark"] = {"rows_read": rows, **java.read(built.table, resolved, False, rows)}
        return out

    recorded: dict[str, dict[str, Any]] = _cached(key, record)
    return recorded

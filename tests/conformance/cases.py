"""The Iceberg Java conformance cases: which scan of which table generate.py records.

Plain data, no third-party imports: generate.py imports it inside the pyspark venv, our tests in the
project's venv. Each case is
    {"id": "<table>/<name>", "table": <table>, "snapshot": <choice>, "options": {...}, "filter": None,
     "case_sensitive": True}
with a snapshot choice of {"kind": "current"}, {"kind": "id", "value": ...}, {"kind": "as_of", "value": ...}
or {"kind": "ref", "value": "<branch or tag>"}.

Symbolic snapshot values are resolved by the generator against the table's snapshot log (main's history,
oldest first, N counting from 1); expected.json carries the concrete numbers (and the symbol):
    id     "log:N"    the N-th snapshot's id
    as_of  "log:N"    exactly the N-th snapshot's timestamp (ms)
           "log:N+"   midway between the N-th snapshot's timestamp and the next one's
           "log:1-"   1 ms before the first snapshot
Cases named "error-..." expect Java to throw; the generator records the exception instead of tasks.
"""

from __future__ import annotations

from itertools import product
from typing import Any

TABLES = (
    "unpartitioned",
    "identity_part",
    "day_part",
    "bucket_part",
    "truncate_part",
    "time_part",
    "spec_evolution",
    "schema_evolution",
    "mor_position_deletes",
    "equality_deletes",
    "v3_dv",
    "upgrade_v3",
    "row_groups",
    "avro_format",
    "many_manifests",
    "snapshots",
    "empty",
)

SPLIT_SIZE = "read.split.target-size"
LOOKBACK = "read.split.planning-lookback"
OPEN_FILE_COST = "read.split.open-file-cost"

SPLIT_SIZES = {"1k": 1024, "16k": 16 * 1024, "1m": 1024 * 1024, "128m": 128 * 1024 * 1024}
LOOKBACKS = (1, 10)
OPEN_FILE_COSTS = (0, 4 * 1024 * 1024)

# Tables planned with every combination of split size, lookback and open-file cost.
OPTION_MATRIX_TABLES = ("row_groups", "avro_format", "many_manifests", "unpartitioned", "mor_position_deletes")
# Tables planned once more with small splits (deletes are charged to every split; DVs by content size).
SMALL_SPLIT_TABLES = ("equality_deletes", "v3_dv", "upgrade_v3", "spec_evolution", "identity_part")

UNKNOWN_SNAPSHOT_ID = 123456789


def case(
    table: str, name: str, snapshot: dict[str, Any] | None = None, options: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "id": f"{table}/{name}",
        "table": table,
        "snapshot": snapshot or {"kind": "current"},
        "options": options or {},
        "filter": None,
        "case_sensitive": True,
    }


def _option_matrix(table: str) -> list[dict[str, Any]]:
    return [
        case(
            table,
            f"split-{size}-lookback-{lookback}-open-{cost}",
            options={SPLIT_SIZE: str(SPLIT_SIZES[size]), LOOKBACK: str(lookback), OPEN_FILE_COST: str(cost)},
        )
        for size, lookback, cost in product(SPLIT_SIZES, LOOKBACKS, OPEN_FILE_COSTS)
    ]


def _snapshot_cases() -> list[dict[str, Any]]:
    t = "snapshots"
    return [
        case(t, "id-first", {"kind": "id", "value": "log:1"}),
        case(t, "id-second", {"kind": "id", "value": "log:2"}),
        case(t, "as-of-between-2-and-3", {"kind": "as_of", "value": "log:2+"}),
        case(t, "as-of-exactly-3", {"kind": "as_of", "value": "log:3"}),
        case(t, "as-of-exactly-1", {"kind": "as_of", "value": "log:1"}),
        case(t, "ref-branch", {"kind": "ref", "value": "branch_x"}),
        case(t, "ref-tag", {"kind": "ref", "value": "tag_x"}),
        case(t, "ref-main", {"kind": "ref", "value": "main"}),
        case(t, "ref-branch-small-splits", {"kind": "ref", "value": "branch_x"}, {SPLIT_SIZE: "1024"}),
        case(t, "error-unknown-id", {"kind": "id", "value": UNKNOWN_SNAPSHOT_ID}),
        case(t, "error-unknown-ref", {"kind": "ref", "value": "no_such_ref"}),
        case(t, "error-as-of-before-first", {"kind": "as_of", "value": "log:1-"}),
    ]


def _all_cases() -> list[dict[str, Any]]:
    cases = [case(table, "current") for table in TABLES]
    for table in OPTION_MATRIX_TABLES:
        cases += _option_matrix(table)
    for table in SMALL_SPLIT_TABLES:
        cases.append(case(table, "split-1k", options={SPLIT_SIZE: "1024"}))
        cases.append(case(table, "split-16k-open-0", options={SPLIT_SIZE: str(16 * 1024), OPEN_FILE_COST: "0"}))
    cases += _snapshot_cases()
    cases += [
        case("equality_deletes", "id-before-deletes", {"kind": "id", "value": "log:2"}),
        case("equality_deletes", "id-after-global-deletes", {"kind": "id", "value": "log:4"}),
        case("mor_position_deletes", "id-before-deletes", {"kind": "id", "value": "log:2"}),
        case("mor_position_deletes", "id-after-partition-deletes", {"kind": "id", "value": "log:3"}),
        case("upgrade_v3", "id-before-upgrade", {"kind": "id", "value": "log:3"}),
        case("schema_evolution", "id-first", {"kind": "id", "value": "log:1"}),
        case("spec_evolution", "id-first", {"kind": "id", "value": "log:1"}),
    ]
    return cases


CASES: list[dict[str, Any]] = _all_cases()
assert len({c["id"] for c in CASES}) == len(CASES), "case ids must be unique"

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
    "nested_nan",
    "pre_epoch",
    "v1_gzip",
    "v1_inline",
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
SMALL_SPLIT_TABLES = ("equality_deletes", "v3_dv", "upgrade_v3", "spec_evolution", "identity_part", "v1_gzip")

UNKNOWN_SNAPSHOT_ID = 123456789


def case(
    table: str,
    name: str,
    snapshot: dict[str, Any] | None = None,
    options: dict[str, str] | None = None,
    filter: Any = None,
    case_sensitive: bool = True,
) -> dict[str, Any]:
    return {
        "id": f"{table}/{name}",
        "table": table,
        "snapshot": snapshot or {"kind": "current"},
        "options": options or {},
        "filter": filter,
        "case_sensitive": case_sensitive,
    }


# --- Row filters (REST JSON expressions, parsed by Java's ExpressionParser) --------------------------------


def p(op: str, term: Any, value: Any = None, values: list[Any] | None = None) -> dict[str, Any]:
    """A predicate in the REST JSON form."""
    out: dict[str, Any] = {"type": op, "term": term}
    if value is not None:
        out["value"] = value
    if values is not None:
        out["values"] = values
    return out


def and_(left: Any, right: Any) -> dict[str, Any]:
    return {"type": "and", "left": left, "right": right}


def or_(left: Any, right: Any) -> dict[str, Any]:
    return {"type": "or", "left": left, "right": right}


def not_(child: Any) -> dict[str, Any]:
    return {"type": "not", "child": child}


def transform(name: str, column: str) -> dict[str, Any]:
    return {"type": "transform", "transform": name, "term": column}


def ts(text: str) -> str:
    """A timestamptz literal (Spark's TIMESTAMP is Iceberg's timestamptz)."""
    return text + "+00:00"


def _operator_cases(table: str, column: str, value: Any, prefix: str) -> list[dict[str, Any]]:
    """Every comparison operator on one column."""
    ops = ("lt", "lt-eq", "gt", "gt-eq", "eq", "not-eq")
    return [case(table, f"{prefix}-{op}", filter=p(op, column, value)) for op in ops]


def _filter_cases() -> list[dict[str, Any]]:
    u, ip, dp, bp, tp = "unpartitioned", "identity_part", "day_part", "bucket_part", "truncate_part"
    cases = []
    cases += _operator_cases(u, "id", 25, "id")
    cases += _operator_cases(u, "name", "banana-10", "name")
    cases += _operator_cases(u, "amount", 500.5, "amount")
    cases += _operator_cases(ip, "category", "b", "category")
    cases += _operator_cases(ip, "id", 40, "id")
    cases += _operator_cases(dp, "ts", ts("2024-01-02T12:00:00"), "ts")
    cases += _operator_cases(bp, "id", 7, "id")
    cases += _operator_cases(tp, "name", "band", "name")
    cases += [
        case(u, "true", filter=True),
        case(u, "false", filter=False),
        case(u, "in-1", filter=p("in", "id", values=[3])),
        case(u, "in-5", filter=p("in", "id", values=[1, 7, 33, 48, 59])),
        case(u, "in-300", filter=p("in", "id", values=list(range(1000, 1600, 2)))),
        case(u, "in-300-hit", filter=p("in", "id", values=[*range(1000, 1299), 5])),
        case(u, "not-in", filter=p("not-in", "id", values=[1, 2, 3])),
        case(u, "in-strings", filter=p("in", "category", values=["a", "zz"])),
        case(u, "is-null", filter=p("is-null", "category")),
        case(u, "not-null", filter=p("not-null", "category")),
        case(u, "is-nan", filter=p("is-nan", "amount")),
        case(u, "not-nan", filter=p("not-nan", "amount")),
        case(u, "starts-with", filter=p("starts-with", "name", "ban")),
        case(u, "not-starts-with", filter=p("not-starts-with", "name", "ban")),
        case(u, "and", filter=and_(p("gt-eq", "id", 10), p("lt", "id", 30))),
        case(u, "or", filter=or_(p("lt", "id", 5), p("gt", "id", 55))),
        case(u, "not", filter=not_(p("lt", "id", 30))),
        case(
            u, "not-and-or", filter=not_(and_(p("gt", "id", 10), or_(p("eq", "category", "a"), p("is-null", "name"))))
        ),
        case(
            u,
            "ts-range",
            filter=and_(p("gt-eq", "ts", ts("2024-01-02T00:00:00")), p("lt", "ts", ts("2024-01-03T00:00:00"))),
        ),
        case(
            u, "literal-wrapped", filter=p("eq", {"type": "reference", "term": "id"}, {"type": "literal", "value": 7})
        ),
        case(u, "id-above-int-range", filter=p("lt", "id", 9_000_000_000)),
        case(u, "case-insensitive", filter=p("lt", "ID", 10), case_sensitive=False),
        case(u, "error-case-sensitive", filter=p("lt", "ID", 10)),
        case(u, "error-unknown-column", filter=p("eq", "nope", 1)),
        case(u, "error-string-for-long", filter=p("eq", "id", "abc")),
        case(u, "error-nan-on-string", filter=p("is-nan", "name")),
        case(u, "error-starts-with-on-long", filter=p("starts-with", "id", "1")),
        case(u, "split-1k-filtered", options={SPLIT_SIZE: "1024"}, filter=p("lt", "id", 30)),
        case(ip, "in-partition", filter=p("in", "category", values=["a", "c"])),
        case(ip, "not-in-partition", filter=p("not-in", "category", values=["a", "c"])),
        case(ip, "is-null-partition", filter=p("is-null", "category")),
        case(ip, "not-null-partition", filter=p("not-null", "category")),
        case(ip, "starts-with-partition", filter=p("starts-with", "category", "a")),
        case(ip, "partition-or-column", filter=or_(p("eq", "category", "a"), p("gt", "id", 80))),
        case(ip, "not-partition", filter=not_(p("eq", "category", "b"))),
        case(ip, "partition-and-column", filter=and_(p("eq", "category", "c"), p("lt", "id", 45))),
        case(dp, "day-transform-term", filter=p("eq", transform("day", "ts"), "2024-01-02")),
        case(
            dp,
            "ts-range",
            filter=and_(p("gt", "ts", ts("2024-01-01T06:00:00")), p("lt-eq", "ts", ts("2024-01-03T00:00:00"))),
        ),
        case(bp, "in-5", filter=p("in", "id", values=[1, 2, 3, 4, 5])),
        case(bp, "bucket-term", filter=p("eq", transform("bucket[8]", "id"), 3)),
        case(bp, "not-in", filter=p("not-in", "id", values=[7, 8])),
        case(tp, "starts-with-shorter", filter=p("starts-with", "name", "b")),
        case(tp, "starts-with-equal", filter=p("starts-with", "name", "ban")),
        case(tp, "starts-with-longer", filter=p("starts-with", "name", "bandit")),
        case(tp, "not-starts-with-shorter", filter=p("not-starts-with", "name", "ap")),
        case(tp, "not-starts-with-equal", filter=p("not-starts-with", "name", "app")),
        case(tp, "not-starts-with-longer", filter=p("not-starts-with", "name", "apple")),
        case(tp, "in", filter=p("in", "name", values=["apple-3", "cherry-12"])),
        case("time_part", "date-lt", filter=p("lt", "d", "2023-01-01")),
        case("time_part", "date-eq", filter=p("eq", "d", "2022-06-15")),
        case("time_part", "month-gt-eq", filter=p("gt-eq", "created", ts("2024-02-01T00:00:00"))),
        case("time_part", "hour-lt", filter=p("lt", "ts", ts("2024-01-01T01:30:00"))),
        case("time_part", "hour-not-eq", filter=p("not-eq", "ts", ts("2024-01-01T01:00:00"))),
        case("spec_evolution", "category", filter=p("eq", "category", "a")),
        case("spec_evolution", "id", filter=p("eq", "id", 25)),
        case("spec_evolution", "in", filter=p("in", "id", values=[3, 25, 47])),
        case("schema_evolution", "renamed-column", filter=p("eq", "label", "n5")),
        case("schema_evolution", "renamed-partition-source", filter=p("eq", "grp2", "x")),
        case("schema_evolution", "promoted-id", filter=p("gt", "id", 15)),
        case("schema_evolution", "added-column-null", filter=p("is-null", "extra")),
        case("schema_evolution", "case-insensitive", filter=p("eq", "LABEL", "n12"), case_sensitive=False),
        case(
            "schema_evolution",
            "time-travel-current-schema",
            {"kind": "id", "value": "log:1"},
            filter=p("eq", "label", "n5"),
        ),
        case("schema_evolution", "error-dropped-column", filter=p("eq", "value", 1.0)),
        case("mor_position_deletes", "category", filter=p("eq", "category", "a")),
        case("mor_position_deletes", "id", filter=p("lt", "id", 30)),
        case("equality_deletes", "id", filter=p("eq", "id", 3)),
        case("equality_deletes", "name", filter=p("eq", "name", "n45")),
        case("equality_deletes", "category", filter=p("eq", "category", "a")),
        case("equality_deletes", "id-range", filter=p("gt", "id", 40)),
        case("v3_dv", "category", filter=p("eq", "category", "b")),
        case("v3_dv", "id", filter=p("lt", "id", 50)),
        case("upgrade_v3", "category", filter=p("eq", "category", "a")),
        case("many_manifests", "id", filter=p("in", "id", values=[0, 20, 40])),
        case("row_groups", "id-split", options={SPLIT_SIZE: "16384"}, filter=p("lt", "id", 4500)),
        case("nested_nan", "nested-gt", filter=p("gt", "info.a", 5)),
        case("nested_nan", "nested-eq-string", filter=p("eq", "info.b", "x")),
        case("nested_nan", "nested-is-null", filter=p("is-null", "info.a")),
        case("nested_nan", "float-is-nan", filter=p("is-nan", "f")),
        case("nested_nan", "float-not-nan", filter=p("not-nan", "f")),
        case("nested_nan", "double-is-nan", filter=p("is-nan", "d")),
        case("nested_nan", "double-not-nan", filter=p("not-nan", "d")),
        case("nested_nan", "float-lt", filter=p("lt", "f", 1.5)),
        case("nested_nan", "double-gt-eq", filter=p("gt-eq", "d", 0)),
        case("nested_nan", "double-eq-zero", filter=p("eq", "d", 0.0)),
        case("nested_nan", "float-above-max", filter=p("gt", "f", 1e300)),
        case("nested_nan", "double-is-null", filter=p("is-null", "d")),
        case("empty", "filtered", filter=p("eq", "category", "a")),
    ]
    for column in ("ts_h", "ts_d", "ts_m", "ts_y"):
        for op, value in (
            ("lt", "1969-12-31T23:59:59.999999"),
            ("lt-eq", "1969-12-31T23:00:00.999999"),
            ("gt", "1969-12-31T22:59:59.999999"),
            ("gt-eq", "1969-12-01T00:00:00.999999"),
            ("eq", "1969-12-31T23:59:59.999999"),
            ("eq", "1969-01-01T00:00:00.999999"),
            ("not-eq", "1969-12-31T00:00:00.999999"),
            ("lt", "1970-01-01T00:00:00"),
            ("gt-eq", "1969-06-15T12:00:00"),
        ):
            cases.append(case("pre_epoch", f"{column}-{op}-{value}", filter=p(op, column, ts(value))))
        cases.append(
            case(
                "pre_epoch",
                f"{column}-in",
                filter=p("in", column, values=[ts("1969-12-31T23:59:59.999999"), ts("1968-12-31T23:59:59.999999")]),
            )
        )
    return cases


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


def appends(start: Any, end: Any = None) -> dict[str, Any]:
    """An incremental append scan: after `start` (exclusive) up to `end` (inclusive; None: current)."""
    return {"kind": "appends", "start": start, "end": end}


def _append_cases() -> list[dict[str, Any]]:
    """Incremental append scans (newIncrementalAppendScan): only the appends in the end's lineage count,
    deletes are not applied, filters and split options work as in a table scan; Java's errors."""
    return [
        case("snapshots", "appends-after-first", appends("log:1")),  # overwrites between are skipped
        case("snapshots", "appends-1-to-2", appends("log:1", "log:2")),
        case("snapshots", "appends-to-branch", appends("log:1", "ref:branch_x")),  # a branch-only snapshot
        case("snapshots", "appends-to-tag", appends("log:1", "ref:tag_x")),
        case("snapshots", "appends-filtered", appends("log:1"), filter=p("gt", "id", 12)),
        case("snapshots", "appends-split-1k", appends("log:1"), options={SPLIT_SIZE: "1024"}),
        case("mor_position_deletes", "appends-after-first", appends("log:1")),  # position deletes not applied
        case("equality_deletes", "appends-after-first", appends("log:1")),
        case("v3_dv", "appends-after-first", appends("log:1")),  # deletion vectors not applied
        case("spec_evolution", "appends-after-first", appends("log:1")),
        case("many_manifests", "appends-4-to-12", appends("log:4", "log:12"), options={SPLIT_SIZE: "16384"}),
        case("snapshots", "error-appends-start-is-end", appends("log:2", "log:2")),
        case("snapshots", "error-appends-start-after-end", appends("log:4", "log:2")),
        case("snapshots", "error-appends-unknown-end", appends("log:1", UNKNOWN_SNAPSHOT_ID)),
        case("snapshots", "error-appends-unknown-start", appends(UNKNOWN_SNAPSHOT_ID)),
    ]


def _stats_cases() -> list[dict[str, Any]]:
    """Column stats of the requested columns only (REST stats-fields; Java's includeColumnStats)."""
    return [
        {**case("all_types", "stats-fields"), "stats_fields": ["i", "f", "d", "bin", "s", "dt", "dec9"]},
        {**case("unpartitioned", "stats-fields-filtered", filter=p("gt", "id", 10)), "stats_fields": ["id", "name"]},
    ]


def _hex_cases() -> list[dict[str, Any]]:
    """Binary values in REST JSON expressions as the spec writes them, upper-case hex, which Java's
    ExpressionParser reads as bytes when it is given the schema (the generator passes it: "with_schema")."""
    out = [
        case("identity_types", "bin-hex-eq", filter=p("eq", "bin", "00FF")),  # an identity partition
        case("identity_types", "bin-hex-in-empty", filter=p("in", "bin", values=["00FF", ""])),  # X'' too
        case("identity_types", "bin-hex-not-eq", filter=p("not-eq", "bin", "00FF")),
        case("all_types", "bin-hex-gt", filter=p("gt", "bin", "05FF")),  # column bounds
        case("all_types", "bin-hex-beyond", filter=p("eq", "bin", "09FF")),
        case("all_types", "bin-hex-starts-with", filter=p("starts-with", "s", "s3")),  # strings stay strings
        # fixed: the hex must spell exactly the column's length (SingleValueParser)
        case("fixed_types", "fixed-hex-eq-partition", filter=p("eq", "part", "0A0B")),  # an identity partition
        case("fixed_types", "fixed-hex-in-partition", filter=p("in", "part", values=["00FF", "FFFF"])),
        case("fixed_types", "fixed-hex-not-eq-partition", filter=p("not-eq", "part", "00FF")),
        case("fixed_types", "fixed-hex-gt", filter=p("gt", "fx", "7F000000")),  # column bounds
        case("fixed_types", "fixed-hex-lt-eq", filter=p("lt-eq", "fx", "0000FFFF")),
        case("fixed_types", "fixed-hex-lower-case", filter=p("eq", "fx", "7f000000")),
        case("fixed_types", "fixed-hex-and", filter=and_(p("eq", "part", "0A0B"), p("gt-eq", "fx", "00010000"))),
        case("fixed_types", "error-fixed-hex-too-short", filter=p("eq", "fx", "00FF")),
        case("fixed_types", "error-fixed-hex-too-long-in", filter=p("in", "part", values=["00FF", "00FF00"])),
    ]
    return [{**c, "with_schema": True} for c in out]


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
        case("v1_gzip", "id-first", {"kind": "id", "value": "log:1"}),
        case("v1_gzip", "filtered", filter={"type": "in", "term": "category", "values": ["b", "c"]}),
        case("v1_inline", "id-first", {"kind": "id", "value": "log:1"}),
        case("v1_inline", "filtered", filter={"type": "in", "term": "category", "values": ["a", "c"]}),
        case("v1_inline", "split-1k", options={SPLIT_SIZE: "1024"}),
    ]
    cases += _hex_cases()
    cases += _append_cases()
    cases += _stats_cases()
    cases += _filter_cases()
    return cases


CASES: list[dict[str, Any]] = _all_cases()
assert len({c["id"] for c in CASES}) == len(CASES), "case ids must be unique"

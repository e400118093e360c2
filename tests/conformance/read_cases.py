"""The read cases: which reads of the conformance tables generate.py records with Spark + Iceberg Java.

Plain data, no third-party imports (like cases.py). Each read case is
    {"id": "<table>/<name>", "table": <table>, "columns": [...] | None, "spark_filter": <Spark SQL> | None,
     "filter": <REST JSON expression> | None, "snapshot": <choice>, "split_size": int | None}
`spark_filter` is what `.where()` gets, `filter` the same condition as the planner's /plan takes it (with
the IS NOT NULL Spark infers where Iceberg's partition-level answer differs without it; expected.json
records the filters Spark pushed to Iceberg and whether Spark filtered the scan's rows again).
Snapshot choices are those of cases.py ({"kind": "current" | "id" | "as_of", ...}, symbolic "log:N" values
resolved by the generator) plus {"kind": "branch" | "tag", "value": name}, as Spark's read options name them.

The generator reads each case with
    spark.read.format("iceberg").option(<snapshot option>)[.option("split-size")].load(t).where(f).select(cols)
and writes the rows to DIR/reads/<id>.parquet (Spark's own Parquet writer, timestamps as TIMESTAMP_MICROS);
expected.json's "reads" holds per case the case itself (snapshot resolved), the row count and Spark's schema.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING or __package__:  # imported by the tests (tests.conformance.read_cases); mypy reads this one
    from .cases import TABLES, and_, not_, or_, p, ts
else:  # imported by generate.py, which puts this directory on sys.path
    from cases import TABLES, and_, not_, or_, p, ts

# Tables built only for the read cases (no planning cases of their own; reference_tables.py builds them).
READ_TABLES = (
    "all_types",
    "identity_types",
    "name_mapped",
    "metrics_modes",
    "fixed_types",
    # ORC and Avro data (and delete) files, alone and mixed with Parquet in one table
    "orc_evolved",
    "avro_evolved",
    "mixed_formats",
    "mixed_v3",
    "orc_types",
    "avro_types",
    "orc_stripes",
    # written with a sort order (grouping=sort-order)
    "sorted_ids",
    "sorted_multi",
    "sorted_transforms",
    "sorted_bucket",
)
# Metadata-only tables (their data files do not exist): Spark's partition counts are recorded, nothing is read.
SIZED_TABLES = ("sized_files", "sized_unadapted")
# Spark's partition counts, (table, spark.sql.shuffle.partitions, read options), in a local[2] session: the
# split size adapts to the parallelism max(2, shuffle partitions) unless a split-size option is given or the
# table sets read.split.adaptive-size.enabled=false (sized_unadapted).
PARTITION_COUNT_CASES: tuple[tuple[str, int, dict[str, str]], ...] = (
    ("sized_files", 2, {}),
    ("sized_files", 8, {}),
    ("sized_files", 200, {}),
    ("sized_files", 200, {"split-size": str(128 * 1024 * 1024)}),
    ("sized_files", 200, {"split-size": str(64 * 1024 * 1024)}),
    ("unpartitioned", 200, {}),
    ("row_groups", 200, {}),
    ("identity_part", 8, {}),
    ("sized_unadapted", 200, {}),
)
# Spark + Iceberg's task groups with spark.sql.iceberg.planning.preserve-data-grouping=true, (table, Spark
# filter or None, read options): identity, bucket and day partitions, evolved specs (whose planned specs share
# a field only under the filter), a split size small enough for several tasks a partition, and the adaptive
# split size of the session (shuffle partitions 2, local[2]: parallelism 2).
GROUPING_CASES: tuple[tuple[str, str | None, dict[str, str]], ...] = (
    ("identity_part", None, {"split-size": "2048", "file-open-cost": "64"}),
    ("identity_part", "id >= 10", {}),
    ("bucket_part", None, {"split-size": "2048", "file-open-cost": "64"}),
    ("day_part", None, {"split-size": "2048", "file-open-cost": "64"}),
    ("day_part", None, {}),
    ("spec_evolution", None, {"split-size": "2048", "file-open-cost": "64"}),
    ("spec_evolution", "category = 'a'", {"split-size": "2048", "file-open-cost": "64"}),
    ("truncate_part", None, {"split-size": "4096"}),
)


def read(
    table: str,
    name: str,
    columns: list[str] | None = None,
    spark_filter: str | None = None,
    filter: Any = None,
    snapshot: dict[str, Any] | None = None,
    split_size: int | None = None,
) -> dict[str, Any]:
    if (spark_filter is None) != (filter is None):
        raise ValueError(f"{table}/{name}: give the filter both as Spark SQL and as a REST expression")
    return {
        "id": f"{table}/{name}",
        "table": table,
        "columns": columns,
        "spark_filter": spark_filter,
        "filter": filter,
        "snapshot": snapshot or {"kind": "current"},
        "split_size": split_size,
    }


def _projections() -> list[dict[str, Any]]:
    return [
        read("unpartitioned", "projection-reordered", ["amount", "id"]),
        read("identity_part", "projection-partition-source", ["name", "category"]),
        read("schema_evolution", "projection", ["extra", "label", "id"]),
        read("nested_nan", "projection-struct", ["info", "id"]),
        read("all_types", "projection-nested", ["m", "lst", "st", "b"]),
        read("name_mapped", "projection", ["points", "category", "id"]),
        read("mor_position_deletes", "projection-no-delete-columns", ["amount"]),
        read("equality_deletes", "projection-without-equality-columns", ["category"]),
    ]


def _filters() -> list[dict[str, Any]]:
    u, ip = "unpartitioned", "identity_part"
    return [
        read(u, "id-lt", spark_filter="id < 25", filter=p("lt", "id", 25)),
        read(u, "name-gt-eq", spark_filter="name >= 'banana-10'", filter=p("gt-eq", "name", "banana-10")),
        read(u, "category-not-eq", spark_filter="category != 'a'", filter=p("not-eq", "category", "a")),
        read(u, "in", spark_filter="id IN (1, 7, 33, 48, 59)", filter=p("in", "id", values=[1, 7, 33, 48, 59])),
        read(u, "not-in", spark_filter="category NOT IN ('a', 'b')", filter=p("not-in", "category", values=["a", "b"])),
        read(u, "starts-with", spark_filter="name LIKE 'ban%'", filter=p("starts-with", "name", "ban")),
        read(u, "not-starts-with", spark_filter="NOT name LIKE 'ban%'", filter=p("not-starts-with", "name", "ban")),
        read(u, "is-null", spark_filter="category IS NULL", filter=p("is-null", "category")),
        read(
            u,
            "not-and-or",
            spark_filter="NOT (id > 10 AND (category = 'a' OR name IS NULL))",
            filter=not_(and_(p("gt", "id", 10), or_(p("eq", "category", "a"), p("is-null", "name")))),
        ),
        read(
            u,
            "ts-range-projected",
            ["id"],
            spark_filter="ts >= TIMESTAMP '2024-01-02 00:00:00' AND ts < TIMESTAMP '2024-01-03 00:00:00'",
            filter=and_(p("gt-eq", "ts", ts("2024-01-02T00:00:00")), p("lt", "ts", ts("2024-01-03T00:00:00"))),
        ),
        read(ip, "category-eq", spark_filter="category = 'b'", filter=p("eq", "category", "b")),
        # Spark adds the IS NOT NULL it infers from a null-intolerant predicate (InferFiltersFromConstraints) to
        # the filters it pushes, and Iceberg evaluates these on identity partitions without Spark filtering
        # again: the null partition goes by `not-null`, since Java's not-eq of a null partition is true.
        read(
            ip,
            "category-not-eq",
            spark_filter="category != 'b'",
            filter=and_(p("not-null", "category"), p("not-eq", "category", "b")),
        ),
        read(
            ip,
            "partition-or-column",
            spark_filter="category = 'a' OR id > 80",
            filter=or_(p("eq", "category", "a"), p("gt", "id", 80)),
        ),
        read(
            "day_part",
            "ts-gt",
            spark_filter="ts > TIMESTAMP '2024-01-02 12:00:00'",
            filter=p("gt", "ts", ts("2024-01-02T12:00:00")),
        ),
        read("bucket_part", "in", spark_filter="id IN (1, 2, 3, 4, 5)", filter=p("in", "id", values=[1, 2, 3, 4, 5])),
        read("truncate_part", "starts-with", spark_filter="name LIKE 'band%'", filter=p("starts-with", "name", "band")),
        read("time_part", "date-lt", spark_filter="d < DATE '2023-01-01'", filter=p("lt", "d", "2023-01-01")),
        read("spec_evolution", "category", spark_filter="category = 'a'", filter=p("eq", "category", "a")),
        read("spec_evolution", "id", spark_filter="id = 25", filter=p("eq", "id", 25)),
        read("schema_evolution", "renamed-partition-source", spark_filter="grp2 = 'x'", filter=p("eq", "grp2", "x")),
        read("schema_evolution", "promoted-id", spark_filter="id > 15", filter=p("gt", "id", 15)),
        read("schema_evolution", "added-column-null", spark_filter="extra IS NULL", filter=p("is-null", "extra")),
        read("mor_position_deletes", "category", spark_filter="category = 'a'", filter=p("eq", "category", "a")),
        read("equality_deletes", "id-gt", spark_filter="id > 40", filter=p("gt", "id", 40)),
        read("v3_dv", "id-lt", spark_filter="id < 50", filter=p("lt", "id", 50)),
        read("nested_nan", "nested-gt", spark_filter="info.a > 5", filter=p("gt", "info.a", 5)),
        read("nested_nan", "float-lt", spark_filter="f < 1.5", filter=p("lt", "f", 1.5)),
        read("nested_nan", "double-gt-eq", spark_filter="d >= 0", filter=p("gt-eq", "d", 0)),
        read("nested_nan", "float-is-nan", spark_filter="isnan(f)", filter=p("is-nan", "f")),
        read("nested_nan", "double-not-nan", spark_filter="NOT isnan(d)", filter=p("not-nan", "d")),
        read("nested_nan", "float-eq-zero", spark_filter="f = 0.0", filter=p("eq", "f", 0.0)),
        # NaN next to numbers in one file: Spark orders NaN above every number, and NaN = NaN
        read("all_types", "float-gt", spark_filter="f > 1.0", filter=p("gt", "f", 1.0)),
        read("all_types", "double-not-eq", spark_filter="d != 2.25", filter=p("not-eq", "d", 2.25)),
        read("all_types", "double-lt-eq", spark_filter="d <= 2.25", filter=p("lt-eq", "d", 2.25)),
        read("all_types", "decimal-gt", spark_filter="dec9 > 10.50", filter=p("gt", "dec9", "10.50")),
        read("all_types", "date-lt", spark_filter="dt < DATE '1969-12-25'", filter=p("lt", "dt", "1969-12-25")),
        read(
            "all_types",
            "timestamp-ntz-gt-eq",
            spark_filter="ts_ntz >= TIMESTAMP_NTZ '2024-01-04 00:00:00'",
            filter=p("gt-eq", "ts_ntz", "2024-01-04T00:00:00"),
        ),
        read("all_types", "bool-partition", spark_filter="b = true", filter=p("eq", "b", True)),
        # binary and fixed values: X'..' in Spark, upper-case hex in REST JSON
        read("all_types", "binary-gt", spark_filter="bin > X'05FF'", filter=p("gt", "bin", "05FF")),
        read("fixed_types", "fixed-gt", spark_filter="fx > X'0000FFFF'", filter=p("gt", "fx", "0000FFFF")),
        read(
            "fixed_types",
            "fixed-partition-in",
            spark_filter="part IN (X'00FF', X'FFFF')",
            filter=p("in", "part", values=["00FF", "FFFF"]),
        ),
        read(
            "all_types", "string-in", spark_filter="s IN ('s1-é', 's5-é')", filter=p("in", "s", values=["s1-é", "s5-é"])
        ),
        read("identity_types", "decimal-partition", spark_filter="dec9 < 0", filter=p("lt", "dec9", "0.00")),
        read(
            "identity_types",
            "ts-partition",
            spark_filter="ts < TIMESTAMP '1970-01-01 00:00:00'",
            filter=p("lt", "ts", ts("1970-01-01T00:00:00")),
        ),
        read("name_mapped", "points", spark_filter="points >= 1.0", filter=p("gt-eq", "points", 1.0)),
        read("name_mapped", "category", spark_filter="category = 'b'", filter=p("eq", "category", "b")),
        read("name_mapped", "nested", spark_filter="info.a > 4", filter=p("gt", "info.a", 4)),
        read(
            "row_groups",
            "id-split",
            spark_filter="id < 4500",
            filter=p("lt", "id", 4500),
            split_size=16 * 1024,
        ),
        read(
            "row_groups",
            "id-range-skips-row-groups",
            spark_filter="id >= 1000 AND id < 1100",
            filter=and_(p("gt-eq", "id", 1000), p("lt", "id", 1100)),
            split_size=16 * 1024,
        ),
    ] + [
        # Java's pre-epoch transform quirk: the partition can say yes where the row says no
        read(
            "pre_epoch",
            f"{column}-{op}",
            spark_filter=f"{column} {sql} TIMESTAMP '{value}'",
            filter=p(op, column, ts(value.replace(" ", "T"))),
        )
        for column in ("ts_h", "ts_d", "ts_m", "ts_y")
        for op, sql, value in (
            ("lt", "<", "1969-12-31 23:59:59.999999"),
            ("eq", "=", "1969-12-31 23:59:59.999999"),
            ("gt-eq", ">=", "1969-12-01 00:00:00.999999"),
        )
    ]


def _time_travel() -> list[dict[str, Any]]:
    after_first = {"kind": "appends", "start": "log:1", "end": None}
    s = "snapshots"
    return [
        read(s, "id-first", snapshot={"kind": "id", "value": "log:1"}),
        read(s, "as-of-between-2-and-3", snapshot={"kind": "as_of", "value": "log:2+"}),
        read(s, "tag", snapshot={"kind": "tag", "value": "tag_x"}),
        read(s, "branch", snapshot={"kind": "branch", "value": "branch_x"}),
        read(
            s,
            "branch-filtered",
            spark_filter="id >= 1000",
            filter=p("gt-eq", "id", 1000),
            snapshot={"kind": "branch", "value": "branch_x"},
        ),
        read("schema_evolution", "id-first-old-schema", snapshot={"kind": "id", "value": "log:1"}),
        read("equality_deletes", "id-after-global-deletes", snapshot={"kind": "id", "value": "log:4"}),
        read("mor_position_deletes", "id-after-partition-deletes", snapshot={"kind": "id", "value": "log:3"}),
        read("upgrade_v3", "id-before-upgrade", snapshot={"kind": "id", "value": "log:3"}),
        # incremental append reads: the rows the appends after the start added, deletes not applied
        read(s, "appends-after-first", snapshot=after_first),
        read(s, "appends-1-to-2", snapshot={"kind": "appends", "start": "log:1", "end": "log:2"}),
        read(
            "mor_position_deletes",
            "appends-filtered",
            snapshot=after_first,
            spark_filter="id > 5",
            filter={"type": "gt", "term": "id", "value": 5},
        ),
        read("v3_dv", "appends-after-first", snapshot=after_first),
    ]


def _splits() -> list[dict[str, Any]]:
    """Files cut into several tasks: the rows must not change."""
    return [
        read("row_groups", "split-16k", split_size=16 * 1024),
        read("row_groups", "split-1k", split_size=1024),
        read("mor_position_deletes", "split-1k", split_size=1024),
        read("v3_dv", "split-1k", split_size=1024),
    ]


def _formats() -> list[dict[str, Any]]:
    """ORC and Avro: projections (renamed, promoted, added, partition and equality columns), filters (rows
    and partitions), the snapshots before the deletes and before the evolution, small splits."""
    out = []
    for table in ("orc_evolved", "avro_evolved"):
        out += [
            read(table, "projection", ["extra", "label", "id"]),
            read(table, "projection-without-equality-columns", ["amount", "category"]),
            read(table, "id-gt", spark_filter="id > 30", filter=p("gt", "id", 30)),
            read(table, "category-eq", spark_filter="category = 'a'", filter=p("eq", "category", "a")),
            read(table, "label-starts-with", spark_filter="label LIKE 'ban%'", filter=p("starts-with", "label", "ban")),
            read(table, "before-the-deletes", snapshot={"kind": "id", "value": "log:1"}),
            read(table, "split-1k", split_size=1024),
        ]
    for table in ("orc_types", "avro_types"):
        out += [
            read(table, "projection-nested", ["m", "lst", "st", "b"]),
            read(table, "decimal-gt", spark_filter="dec9 > 10.50", filter=p("gt", "dec9", "10.50")),
            read(table, "float-gt", spark_filter="f > 1.0", filter=p("gt", "f", 1.0)),
            read(table, "binary-gt", spark_filter="bin > X'05FF'", filter=p("gt", "bin", "05FF")),
            read(
                table,
                "timestamp-ntz-gt-eq",
                spark_filter="ts_ntz >= TIMESTAMP_NTZ '2024-01-04 00:00:00'",
                filter=p("gt-eq", "ts_ntz", "2024-01-04T00:00:00"),
            ),
        ]
    return [
        *out,
        read(
            "mixed_formats",
            "ts-gt",
            spark_filter="ts > TIMESTAMP '2024-01-02 12:00:00'",
            filter=p("gt", "ts", ts("2024-01-02T12:00:00")),
        ),
        read("mixed_formats", "projection", ["name", "id"]),
        read("mixed_formats", "split-1k", split_size=1024),
        read("mixed_v3", "category-eq", spark_filter="category = 'b'", filter=p("eq", "category", "b")),
        read("mixed_v3", "split-1k", split_size=1024),
        read("orc_stripes", "split-16k", split_size=16 * 1024),
        read("orc_stripes", "split-1k", split_size=1024),
        read(
            "orc_stripes",
            "id-range",
            spark_filter="id >= 1000 AND id < 1100",
            filter=and_(p("gt-eq", "id", 1000), p("lt", "id", 1100)),
            split_size=16 * 1024,
        ),
        read("avro_format", "split-1k", split_size=1024),
        read("avro_format", "id-lt", spark_filter="id < 100", filter=p("lt", "id", 100), split_size=16 * 1024),
    ]


def _all_reads() -> list[dict[str, Any]]:
    reads = [read(table, "full") for table in (*TABLES, *READ_TABLES)]
    return reads + _projections() + _filters() + _time_travel() + _splits() + _formats()


READ_CASES: list[dict[str, Any]] = _all_reads()
assert len({c["id"] for c in READ_CASES}) == len(READ_CASES), "read case ids must be unique"


# --- Aggregates -------------------------------------------------------------------------------------------
# Each is read by the generator as Spark + Iceberg answers it, `df.agg(*[expr(a) for a in aggregates])` on
# the case's read: with aggregate push-down on (Spark's default; expected.json records whether Iceberg
# answered it from metadata, "pushed", and its values) and off (the values of the rows themselves).
# `stricter`: where the service refuses to answer from metadata although Iceberg 1.10.2 does, and why.


def agg(
    table: str,
    name: str,
    aggregates: list[str],
    spark_filter: str | None = None,
    filter: Any = None,
    snapshot: dict[str, Any] | None = None,
    stricter: str | None = None,
) -> dict[str, Any]:
    return {**read(table, name, None, spark_filter, filter, snapshot), "aggregates": aggregates, "stricter": stricter}


def _aggregate_cases() -> list[dict[str, Any]]:
    first = {"kind": "id", "value": "log:1"}
    return [
        agg(
            "unpartitioned",
            "counts-and-bounds",
            ["count(*)", "count(name)", "min(id)", "max(id)", "min(amount)", "max(amount)", "min(ts)", "max(ts)"],
        ),
        agg("unpartitioned", "truncated-string-bounds", ["count(*)", "min(name)"]),
        agg(
            "identity_part",
            "whole-partitions",
            ["count(*)", "min(id)", "max(amount)"],
            "category = 'a'",
            p("eq", "category", "a"),
        ),
        agg("identity_part", "null-partition", ["count(*)", "max(id)"], "category IS NULL", p("is-null", "category")),
        agg("identity_part", "row-filter", ["count(*)", "max(id)"], "id > 10", p("gt", "id", 10)),
        agg(
            "day_part",
            "whole-days",
            ["count(*)", "min(ts)"],
            "ts >= TIMESTAMP '2024-01-02 00:00:00'",
            p("gt-eq", "ts", ts("2024-01-02T00:00:00")),
        ),
        agg(
            "day_part",
            "part-of-a-day",
            ["count(*)"],
            "ts >= TIMESTAMP '2024-01-02 12:00:00'",
            p("gt-eq", "ts", ts("2024-01-02T12:00:00")),
        ),
        agg("spec_evolution", "all-specs", ["count(*)", "min(id)", "max(id)"]),
        agg("spec_evolution", "partition-of-one-spec", ["count(*)"], "category = 'a'", p("eq", "category", "a")),
        agg("schema_evolution", "promoted-and-added", ["count(*)", "min(id)", "max(id)", "count(extra)"]),
        agg("mor_position_deletes", "position-deletes", ["count(*)", "max(id)"]),
        agg("equality_deletes", "equality-deletes", ["count(*)"]),
        agg(
            "equality_deletes", "before-the-deletes", ["count(*)", "max(id)"], snapshot={"kind": "id", "value": "log:2"}
        ),
        agg("v3_dv", "deletion-vectors", ["count(*)", "max(amount)"]),
        agg("nested_nan", "nested", ["count(*)", "count(info.a)", "min(info.a)", "max(info.a)", "count(f)"]),
        agg("nested_nan", "nan", ["max(f)", "min(d)"]),
        agg(
            "all_types",
            "every-type",
            [
                "min(b)",
                "max(b)",
                "min(i)",
                "max(l)",
                "min(dec9)",
                "max(dec38)",
                "min(dt)",
                "max(dt)",
                "min(ts_ntz)",
                "max(ts)",
                "count(st.x)",
                "min(st.x)",
            ],
        ),
        agg(
            "all_types",
            "binary",
            ["max(bin)"],
            stricter="binary bounds are truncated under truncate(16) as strings are; Java checks strings only",
        ),
        agg("snapshots", "time-travel", ["count(*)", "max(id)"], snapshot=first),
        agg("snapshots", "branch", ["count(*)", "max(id)"], snapshot={"kind": "branch", "value": "branch_x"}),
        agg(
            "snapshots",
            "appends-after-first",
            ["count(*)", "max(id)"],
            snapshot={"kind": "appends", "start": "log:1", "end": None},
        ),
        agg("empty", "no-snapshot", ["count(*)", "max(id)"]),
        agg("metrics_modes", "full-bounds", ["min(s)", "max(s)", "min(bin)", "max(bin)", "count(*)"]),
        agg("metrics_modes", "counts-mode", ["count(c)", "max(c)"]),
        agg("metrics_modes", "none-mode", ["count(n)"]),
        agg("metrics_modes", "truncated-strings", ["max(t)"]),
    ]


AGGREGATE_CASES: list[dict[str, Any]] = _aggregate_cases()
assert len({c["id"] for c in AGGREGATE_CASES}) == len(AGGREGATE_CASES), "aggregate case ids must be unique"


def plain_value(value: Any, utc_wall_clock: bool = False) -> Any:
    """A Python value of a Spark row in a JSON form both sides can compare: floats' NaN and infinities as
    "NaN" / "Infinity" / "-Infinity", decimals as text, dates and timestamps in ISO form (microseconds),
    binary as upper-case hex. `utc_wall_clock`: a naive datetime is the local time of an instant (Spark's
    TIMESTAMP collected by pyspark), given as its UTC wall clock."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return value if math.isfinite(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None or utc_wall_clock:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.isoformat(timespec="microseconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex().upper()
    raise TypeError(f"no plain form for {value!r}")

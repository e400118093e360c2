"""Write the read benchmark's tables with Spark + Iceberg Java 1.10.2: real Parquet data, in three shapes.

    <java venv python> bench/make_read_table.py [--shapes narrow,wide,wide_mor] [--rows N] [--jars a.jar,b.jar]

Runs in the pyspark 3.5 venv of scripts/java_env.py (bench/read_bench.py starts it). One local[2] Spark
session writes each missing shape through Iceberg's SparkCatalog into one Hadoop warehouse, which
`scan-planner serve --warehouse WAREHOUSE` also serves:

* narrow   bench.reads, 43.2 M rows (2.29 GB) of 7 flat columns:
           id long (required), user_id long, category string (10 values), ts timestamptz (30 days from
           2024-01-01, increasing with id), amount double (2 decimals), score double, payload string (~50
           bytes: the category and 44 base64 characters of sha256(id));
* wide     bench.wide, 14.4 M rows (about 1.6 GB) of every common type, nulls included:
           id long (required), ts timestamptz (as above), region string (8 values, a tenth null),
           price decimal(12,2), total decimal(38,6), born date, digest binary (32 bytes: sha256(id)),
           info struct<code int, label string, score double>, tags list<string> (0-3 elements),
           attrs map<string, long> (0-3 entries), note string (half null, 30 characters), flag boolean;
* wide_mor bench.wide_mor: the rows of `wide`, then DELETE FROM ... WHERE id % 10 = 3 with merge-on-read:
           a position delete file beside every data file, a tenth of the rows deleted;
* counts   bench.counts, 6 M rows of 15 flat columns: id long (required), ts timestamptz (as above), i1-i3
           int (0-999), l1-l2 long, d1-d4 double ([0, 1)), s1-s3 string (10, 8 and 9 values), flag
           boolean; its selective scan is a filter no statistics decide (i1 < 500 AND d1 > 0.25: every
           file and row group holds both sides of both bounds), so a count must read its two columns.

Every value is a function of id alone (xxhash64 / sha2), so the content does not depend on the number of
Spark partitions and every scan's row count is computed from the generator without reading a table back.
Format v2, partitioned by days(ts), zstd Parquet (Iceberg's default codec), target file size 128 MiB and
row groups of 16 MiB. Since ts grows with id and each of the 2 write tasks takes a contiguous id range,
each task writes its days one after the other: one file a day, 30 files a table (narrow: 76 MB files of 5
row groups; wide: about 53 MB of 4). `write.distribution-mode=none` and the fanout writer skip the shuffle
and sort Iceberg would otherwise ask Spark for. About 3 minutes for narrow and 4 for the two wide ones on
2 busy cores; progress (bytes written so far) goes to stderr every 10 s.

Each shape has three scans (table.json's "scans"): `full` (everything), `selective` (one day and one value
of a string column: 1 file of 30 planned, a tenth of its rows match; for counts, the residual above over
every file) and `columns` (two columns of every row). The tables are cached in
$SCAN_PLANNER_CACHE/bench/reads-<sha256 of this file>/<rows>-rows/ and built
in place (Iceberg stores absolute paths): warehouse/ holds them all, <shape>.json, written last, marks one
complete and describes it (location, files, bytes, row groups, deletes, the scans with their expected row
counts). An incomplete shape is dropped and written again, under a file lock. This module imports pyspark
only inside functions, so the project's venv can import its constants and paths (bench/read_bench.py does).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import load_java_env, write_json

HERE = Path(__file__).resolve()
DAYS = 30
FIRST_DAY = dt.date(2024, 1, 1)
CATEGORIES = ("books", "food", "games", "garden", "health", "music", "sports", "tools", "toys", "travel")
REGIONS = ("apac", "emea", "latam", "na-east", "na-west", "nordics", "oceania", "south")
WORDS = ("amber", "blue", "coral", "denim", "ebony", "fern", "gold", "hazel", "indigo")
ATTRIBUTES = ("a", "b", "c", "d", "e", "f")
CATALOG = "local"  # the Spark catalog name of the Hadoop warehouse
NAMESPACE = "bench"
SELECTIVE_DAY = FIRST_DAY + dt.timedelta(days=15)
DAY_RANGE = (
    f"ts >= TIMESTAMP '{SELECTIVE_DAY} 00:00:00' AND ts < TIMESTAMP '{SELECTIVE_DAY + dt.timedelta(days=1)} 00:00:00'"
)
MOR_DELETED = "id % 10 = 3"  # the rows wide_mor's DELETE removes
MIB = 1024 * 1024
PROPERTIES = {
    "format-version": "2",
    "write.parquet.compression-codec": "zstd",
    "write.target-file-size-bytes": str(128 * MIB),
    "write.parquet.row-group-size-bytes": str(16 * MIB),
    "write.distribution-mode": "none",
    "write.spark.fanout.enabled": "true",
}
WRITE_TASKS = 2
_DAY_MICROS = 86_400_000_000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Shape:
    """One table of the benchmark: its rows (a function of spark.range), scans and what follows the write."""

    name: str
    table: str  # namespace.name, as the service names it; Spark: f"{CATALOG}.{table}"
    default_rows: int
    frame: Callable[[Any, int], Any]  # (spark, rows) -> the rows' DataFrame
    selective: str  # the selective scan's filter: the same SQL text for Spark's where() and the planner
    columns: tuple[str, str]  # the two-column scan
    deleted: str | None = None  # rows deleted after the write with merge-on-read (a SQL condition)
    properties: dict[str, str] = field(default_factory=dict)
    one_day: bool = True  # the selective scan plans one day's file (else every file)


def log(message: str) -> None:
    print(f"[make-read-table] {message}", file=sys.stderr, flush=True)


def digest() -> str:
    """The cache key: this file decides the tables' content, so a change to it builds new tables."""
    return hashlib.sha256(HERE.read_bytes()).hexdigest()[:16]


def tables_dir(rows: int | None) -> Path:
    """$SCAN_PLANNER_CACHE/bench/reads-<digest>/<rows>-rows (default-rows without --rows): one warehouse a size."""
    root: Path = load_java_env().cache_root()
    return root / "bench" / f"reads-{digest()}" / (f"{rows}-rows" if rows else "default-rows")


def marker(directory: Path, shape: str) -> Path:
    return directory / f"{shape}.json"


def read_described(directory: Path, shape: str) -> dict[str, Any] | None:
    """A complete shape's description (its marker), else None."""
    path = marker(directory, shape)
    return json.loads(path.read_text()) if path.exists() else None


def catalog_conf(warehouse: Path) -> dict[str, str]:
    """Spark settings of the Iceberg SparkCatalog CATALOG over the Hadoop warehouse (no cached tables)."""
    prefix = f"spark.sql.catalog.{CATALOG}"
    return {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "hadoop",
        f"{prefix}.warehouse": str(warehouse),
        f"{prefix}.cache-enabled": "false",
    }


# --- The rows ---------------------------------------------------------------------------------------------


def _hashed(seed: int) -> Any:
    from pyspark.sql import functions as F

    return F.abs(F.xxhash64(F.col("id"), F.lit(seed)))


def _ts(rows: int) -> Any:
    """ts of row `id` lies in [start + id * step, start + (id + 1) * step): 30 days, growing with id."""
    from pyspark.sql import functions as F

    step = DAYS * _DAY_MICROS // rows
    start = int((dt.datetime.combine(FIRST_DAY, dt.time(), dt.UTC) - _EPOCH).total_seconds()) * 1_000_000
    return F.timestamp_micros(F.lit(start) + F.col("id") * F.lit(step) + _hashed(3) % F.lit(step)).alias("ts")


def _pick(values: tuple[str, ...], seed: int) -> Any:
    from pyspark.sql import functions as F

    return F.array(*[F.lit(v) for v in values])[(_hashed(seed) % len(values)).cast("int")]


def narrow_frame(spark: Any, rows: int) -> Any:
    from pyspark.sql import functions as F

    ident = F.col("id")
    category = _pick(CATEGORIES, 2)
    return spark.range(0, rows, 1, WRITE_TASKS).select(
        ident,
        (_hashed(1) % 1_000_000).alias("user_id"),
        category.alias("category"),
        _ts(rows),
        ((_hashed(4) % 100_000) / F.lit(100.0)).alias("amount"),
        ((_hashed(5) % (1 << 53)) / F.lit(float(1 << 53))).alias("score"),
        F.concat(category, F.lit(":"), F.base64(F.unhex(F.sha2(ident.cast("string"), 256)))).alias("payload"),
    )


def wide_frame(spark: Any, rows: int) -> Any:
    from pyspark.sql import functions as F

    ident = F.col("id")
    sha = F.unhex(F.sha2(ident.cast("string"), 256))
    start = (_hashed(10) % 6 + 1).cast("int")  # tags and attrs: a slice of 0-3 items from a varying start
    length = (_hashed(11) % 4).cast("int")
    values = F.array(*[_hashed(20 + i) % 1000 for i in range(len(ATTRIBUTES))])
    return spark.range(0, rows, 1, WRITE_TASKS).select(
        ident,
        _ts(rows),
        F.when(_hashed(2) % 10 == 0, F.lit(None)).otherwise(_pick(REGIONS, 12)).alias("region"),
        ((_hashed(4) % 10_000_000) / 100).cast("decimal(12,2)").alias("price"),
        (_hashed(5).cast("decimal(38,0)") / F.lit(1_000_000)).cast("decimal(38,6)").alias("total"),
        F.date_add(F.lit(dt.date(1950, 1, 1)), (_hashed(6) % 25_000).cast("int")).alias("born"),
        sha.alias("digest"),
        F.struct(
            (_hashed(7) % 1000).cast("int").alias("code"),
            F.concat(F.lit("label-"), (_hashed(8) % 5000).cast("string")).alias("label"),
            ((_hashed(9) % 10_000) / F.lit(100.0)).alias("score"),
        ).alias("info"),
        F.slice(F.array(*[F.lit(w) for w in WORDS]), start, length).alias("tags"),
        F.map_from_arrays(
            F.slice(F.array(*[F.lit(a) for a in ATTRIBUTES]), start, length), F.slice(values, start, length)
        ).alias("attrs"),
        F.when(_hashed(13) % 2 == 0, F.lit(None)).otherwise(F.substring(F.base64(sha), 1, 30)).alias("note"),
        (_hashed(14) % 2 == 0).alias("flag"),
    )


def counts_frame(spark: Any, rows: int) -> Any:
    from pyspark.sql import functions as F

    return spark.range(0, rows, 1, WRITE_TASKS).select(
        F.col("id"),
        _ts(rows),
        *[(_hashed(30 + i) % 1000).cast("int").alias(f"i{i + 1}") for i in range(3)],
        *[(_hashed(33 + i) % 1_000_000_000).alias(f"l{i + 1}") for i in range(2)],
        *[((_hashed(35 + i) % 10_000_000) / F.lit(10_000_000.0)).alias(f"d{i + 1}") for i in range(4)],
        _pick(CATEGORIES, 40).alias("s1"),
        _pick(REGIONS, 41).alias("s2"),
        _pick(WORDS, 42).alias("s3"),
        (_hashed(43) % 2 == 0).alias("flag"),
    )


SHAPES = {
    shape.name: shape
    for shape in (
        Shape(
            "narrow",
            f"{NAMESPACE}.reads",
            43_200_000,
            narrow_frame,
            f"{DAY_RANGE} AND category = 'garden'",
            ("id", "amount"),
        ),
        Shape("wide", f"{NAMESPACE}.wide", 14_400_000, wide_frame, f"{DAY_RANGE} AND region = 'emea'", ("id", "price")),
        Shape(
            "wide_mor",
            f"{NAMESPACE}.wide_mor",
            14_400_000,
            wide_frame,
            f"{DAY_RANGE} AND region = 'emea'",
            ("id", "price"),
            deleted=MOR_DELETED,
            properties={"write.delete.mode": "merge-on-read"},
        ),
        Shape(
            "counts",
            f"{NAMESPACE}.counts",
            6_000_000,
            counts_frame,
            "i1 < 500 AND d1 > 0.25",
            ("i1", "d1"),
            one_day=False,
        ),
    )
}


# --- Writing ----------------------------------------------------------------------------------------------


def start_spark(jars: list[str], warehouse: Path) -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(f"local[{WRITE_TASKS}]")
        .appName("make_read_table")
        .config("spark.jars", ",".join(jars))
        .config("spark.driver.memory", "4g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in catalog_conf(warehouse).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*.parquet") if p.is_file())


class _Progress(threading.Thread):
    """Logs the Parquet bytes written so far every `every` seconds, until stopped."""

    def __init__(self, data: Path, expected_bytes: int, every: float = 10.0) -> None:
        super().__init__(daemon=True)
        self.data, self.expected, self.every = data, expected_bytes, every
        self.done = threading.Event()
        self.started_at = time.monotonic()

    def run(self) -> None:
        while not self.done.wait(self.every):
            try:
                written = _size(self.data)
            except OSError:  # a file renamed or removed under us: skip this report
                continue
            share = written / self.expected if self.expected else 0.0
            log(
                f"{written / 1e9:.2f} GB of about {self.expected / 1e9:.2f} GB written ({share:.0%}), "
                f"{time.monotonic() - self.started_at:.0f}s"
            )


def build(spark: Any, shape: Shape, rows: int, warehouse: Path) -> dict[str, Any]:
    """Write one shape's table into the warehouse (dropping what an interrupted build left); its description."""
    from pyspark.sql import functions as F

    started = time.monotonic()
    name = f"{CATALOG}.{shape.table}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NAMESPACE}")
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    shutil.rmtree(warehouse / Path(*shape.table.split(".")), ignore_errors=True)
    log(f"{shape.name}: writing {rows:,} rows to {name}")
    writer = shape.frame(spark, rows).writeTo(name).using("iceberg").partitionedBy(F.days("ts"))
    for key, value in {**PROPERTIES, **shape.properties}.items():
        writer = writer.tableProperty(key, value)
    progress = _Progress(warehouse / Path(*shape.table.split(".")) / "data", rows * 53)
    progress.start()
    try:
        writer.create()
        if shape.deleted is not None:
            log(f"{shape.name}: DELETE WHERE {shape.deleted} (merge-on-read: position deletes)")
            spark.sql(f"DELETE FROM {name} WHERE {shape.deleted}")
    finally:
        progress.done.set()
    written_s = time.monotonic() - started
    log(f"{shape.name}: written in {written_s:.0f}s; describing it")
    described = describe(spark, shape, rows, warehouse)
    described["build_seconds"] = round(time.monotonic() - started, 1)
    return described


def describe(spark: Any, shape: Shape, rows: int, warehouse: Path) -> dict[str, Any]:
    """<shape>.json: where the table is, its shape, and the benchmark's scans with their expected row counts."""
    name = f"{CATALOG}.{shape.table}"
    files = spark.sql(f"SELECT content, file_size_in_bytes, record_count, split_offsets FROM {name}.files").collect()
    data = [f for f in files if f.content == 0]
    deletes = [f for f in files if f.content != 0]
    row_groups = [len(f.split_offsets or [None]) for f in data]
    records = sum(f.record_count for f in data)
    if records != rows:
        raise RuntimeError(f"{shape.name}: the table's data files hold {records:,} records, {rows:,} were written")
    # every scan's rows from the generator alone (not read back through either reader)
    live = shape.frame(spark, rows)
    if shape.deleted is not None:
        live = live.where(f"NOT ({shape.deleted})")
    live.cache()
    try:
        live_rows = live.count()
        selective_rows = live.where(shape.selective).count()
    finally:
        live.unpersist()
    one_day = f" AND partition.ts_day = DATE '{SELECTIVE_DAY}'" if shape.one_day else ""
    selective_files = spark.sql(f"SELECT count(*) AS n FROM {name}.files WHERE content = 0{one_day}").collect()[0]["n"]
    table = spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    return {
        "shape": shape.name,
        "table": shape.table,
        "spark_table": name,
        "warehouse": str(warehouse),
        "location": str(table.location()),
        "metadata_location": str(table.operations().current().metadataFileLocation()),
        "rows": live_rows,
        "written_rows": rows,
        "columns": [f.name for f in spark.table(name).schema.fields],
        "days": DAYS,
        "data_files": len(data),
        "data_bytes": sum(f.file_size_in_bytes for f in data),
        "delete_files": len(deletes),
        "deleted_rows": sum(f.record_count for f in deletes),
        "row_groups": {"total": sum(row_groups), "min_per_file": min(row_groups), "max_per_file": max(row_groups)},
        "properties": {**PROPERTIES, **shape.properties},
        "spark_version": spark.version,
        "iceberg_version": str(spark._jvm.org.apache.iceberg.IcebergBuild.version()),
        "scans": {
            "full": {"filter": None, "columns": None, "rows": live_rows, "data_files": len(data)},
            "selective": {
                "filter": shape.selective,
                "columns": None,
                "rows": selective_rows,
                "data_files": selective_files,
            },
            "columns": {"filter": None, "columns": list(shape.columns), "rows": live_rows, "data_files": len(data)},
        },
    }


def ensure_tables(shapes: list[str], rows: int | None, jars: list[str]) -> dict[str, dict[str, Any]]:
    """Each shape's description, building the missing ones first (in one Spark session, under a file lock)."""
    directory = tables_dir(rows)
    described = {s: d for s in shapes if (d := read_described(directory, s)) is not None}
    missing = [s for s in shapes if s not in described]
    if not missing:
        return described
    directory.mkdir(parents=True, exist_ok=True)
    with load_java_env().file_lock(directory.with_name(directory.name + ".lock")):
        for name in list(missing):  # another run may have built some meanwhile
            if (done := read_described(directory, name)) is not None:
                described[name] = done
                missing.remove(name)
        if missing:
            started = time.monotonic()
            spark = start_spark(jars, directory / "warehouse")
            log(f"Spark {spark.version} up in {time.monotonic() - started:.1f}s; building {', '.join(missing)}")
            try:
                for name in missing:
                    shape = SHAPES[name]
                    described[name] = build(spark, shape, rows or shape.default_rows, directory / "warehouse")
                    write_json(marker(directory, name), described[name])
            finally:
                spark.stop()
    return described


def parse_shapes(text: str) -> list[str]:
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in SHAPES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown shapes {unknown} (choose from {', '.join(SHAPES)})")
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    shapes = ",".join(SHAPES)
    parser.add_argument("--shapes", type=parse_shapes, default=list(SHAPES), help=f"of {shapes} (default: all)")
    parser.add_argument("--rows", type=int, help="rows of every table (default: each shape's own)")
    parser.add_argument("--jars", help="comma-separated jars (default: from scripts/java_env.py)")
    args = parser.parse_args()
    if args.rows is not None and args.rows < DAYS:
        parser.error(f"--rows must be at least {DAYS}")
    jars = args.jars.split(",") if args.jars else list(load_java_env().ensure_java_env()["jars"])
    started = time.monotonic()
    described = ensure_tables(args.shapes, args.rows, jars)
    log(f"ready in {time.monotonic() - started:.1f}s: {', '.join(d['metadata_location'] for d in described.values())}")
    print(json.dumps(described))
    return 0


if __name__ == "__main__":
    sys.exit(main())

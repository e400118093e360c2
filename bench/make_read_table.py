"""Write the read benchmark's table with Spark + Iceberg Java 1.10.2: real Parquet data, about 2.2 GB.

    <java venv python> bench/make_read_table.py [--rows 43200000] [--jars a.jar,b.jar]

Runs in the pyspark 3.5 venv of scripts/java_env.py (bench/read_bench.py starts it). One local[2] Spark
session writes `spark.range(rows)` through Iceberg's SparkCatalog into a Hadoop warehouse, as table
bench.reads (WAREHOUSE/bench/reads, which `scan-planner serve --warehouse WAREHOUSE` also serves):

    id long (required), user_id long, category string (10 values), ts timestamptz (30 days from
    2024-01-01, increasing with id), amount double (2 decimals), score double, payload string (~50 bytes:
    the category and 44 base64 characters of sha256(id))

Every value is a function of id alone (xxhash64 / sha2), so the content does not depend on the number of
Spark partitions and the selective scan's row count can be computed from the generator without reading
the table. Format v2, partitioned by days(ts), zstd Parquet (Iceberg's default codec), target file size
128 MiB and row groups of 16 MiB. Since ts grows with id and each of the 2 write tasks takes a
contiguous id range, each task writes its days one after the other: one file of about 76 MB per day,
30 files and 2.29 GB in all, with 5 row groups each (the split offsets). `write.distribution-mode=none`
and the fanout writer skip the shuffle and sort Iceberg would otherwise ask Spark for. Under three
minutes on 2 busy cores (2m47s at a load average of 7); progress (bytes written so far) goes to stderr
every 10 s.

The table is cached in $SCAN_PLANNER_CACHE/bench/reads-<sha256 of this file>/<rows>-rows/ and built in
place (Iceberg stores absolute paths); table.json, written last, marks it complete and describes it
(location, files, bytes, row groups, the scans with their filters and expected row counts). An
incomplete directory is rebuilt from scratch, under a file lock. This module imports pyspark only inside
functions, so the project's venv can import its constants and paths (bench/read_bench.py does).
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
from pathlib import Path
from typing import Any

from common import MARKER, load_java_env, read_marker, write_json

HERE = Path(__file__).resolve()
ROWS = 43_200_000  # 1.44 M rows a day: about 2.2 GB of zstd Parquet
DAYS = 30
FIRST_DAY = dt.date(2024, 1, 1)
CATEGORIES = ("books", "food", "games", "garden", "health", "music", "sports", "tools", "toys", "travel")
CATALOG = "local"  # the Spark catalog name of the Hadoop warehouse
NAMESPACE, NAME = "bench", "reads"
TABLE = f"{NAMESPACE}.{NAME}"  # as the service names it; Spark: f"{CATALOG}.{TABLE}"
SELECTIVE_DAY = FIRST_DAY + dt.timedelta(days=15)
SELECTIVE_CATEGORY = "garden"
# One day (a partition) and one category: the same SQL text for Spark's where() and the planner's filter.
SELECTIVE_FILTER = (
    f"ts >= TIMESTAMP '{SELECTIVE_DAY} 00:00:00' AND ts < TIMESTAMP '{SELECTIVE_DAY + dt.timedelta(days=1)} 00:00:00'"
    f" AND category = '{SELECTIVE_CATEGORY}'"
)
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


def log(message: str) -> None:
    print(f"[make-read-table] {message}", file=sys.stderr, flush=True)


def digest() -> str:
    """The cache key: this file decides the table's content, so a change to it builds a new table."""
    return hashlib.sha256(HERE.read_bytes()).hexdigest()[:16]


def table_dir(rows: int) -> Path:
    """$SCAN_PLANNER_CACHE/bench/reads-<digest>/<rows>-rows: one directory per table size."""
    root: Path = load_java_env().cache_root()
    return root / "bench" / f"reads-{digest()}" / f"{rows}-rows"


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


def rows_frame(spark: Any, rows: int) -> Any:
    """The table's rows as a DataFrame over spark.range(rows): every column a function of id."""
    from pyspark.sql import functions as F

    step = DAYS * _DAY_MICROS // rows  # ts of row `id` lies in [start + id * step, start + (id + 1) * step)
    start = int((dt.datetime.combine(FIRST_DAY, dt.time(), dt.UTC) - _EPOCH).total_seconds()) * 1_000_000
    ident = F.col("id")

    def hashed(seed: int) -> Any:
        return F.abs(F.xxhash64(ident, F.lit(seed)))

    category = F.array(*[F.lit(c) for c in CATEGORIES])[(hashed(2) % len(CATEGORIES)).cast("int")]
    return spark.range(0, rows, 1, WRITE_TASKS).select(
        ident,
        (hashed(1) % 1_000_000).alias("user_id"),
        category.alias("category"),
        F.timestamp_micros(F.lit(start) + ident * F.lit(step) + hashed(3) % F.lit(step)).alias("ts"),
        ((hashed(4) % 100_000) / F.lit(100.0)).alias("amount"),
        ((hashed(5) % (1 << 53)) / F.lit(float(1 << 53))).alias("score"),
        F.concat(category, F.lit(":"), F.base64(F.unhex(F.sha2(ident.cast("string"), 256)))).alias("payload"),
    )


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


def build(directory: Path, rows: int, jars: list[str]) -> dict[str, Any]:
    """Write the table into directory/warehouse; return its description (table.json)."""
    from pyspark.sql import functions as F

    warehouse = directory / "warehouse"
    started = time.monotonic()
    spark = start_spark(jars, warehouse)
    try:
        log(f"Spark {spark.version} up in {time.monotonic() - started:.1f}s; writing {rows:,} rows")
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NAMESPACE}")
        writer = rows_frame(spark, rows).writeTo(f"{CATALOG}.{TABLE}").using("iceberg").partitionedBy(F.days("ts"))
        for key, value in PROPERTIES.items():
            writer = writer.tableProperty(key, value)
        progress = _Progress(warehouse / NAMESPACE / NAME / "data", rows * 53)
        progress.start()
        try:
            writer.create()
        finally:
            progress.done.set()
        written_s = time.monotonic() - started
        log(f"written in {written_s:.0f}s; describing it")
        described = describe(spark, rows, warehouse)
        described["build_seconds"] = round(time.monotonic() - started, 1)
        described["write_seconds"] = round(written_s, 1)
    finally:
        spark.stop()
    return described


def describe(spark: Any, rows: int, warehouse: Path) -> dict[str, Any]:
    """table.json: where the table is, its shape, and the benchmark's scans with their expected row counts."""
    name = f"{CATALOG}.{TABLE}"
    files = spark.sql(f"SELECT file_size_in_bytes, record_count, split_offsets FROM {name}.files").collect()
    row_groups = [len(f.split_offsets or [None]) for f in files]
    records = sum(f.record_count for f in files)
    if records != rows:
        raise RuntimeError(f"the table's files hold {records:,} records, {rows:,} were written")
    # the selective scan's rows, from the generator alone (not read back through either reader)
    selective = rows_frame(spark, rows).where(SELECTIVE_FILTER).count()
    selective_files = spark.sql(
        f"SELECT count(*) AS n FROM {name}.files WHERE partition.ts_day = DATE '{SELECTIVE_DAY}'"
    ).collect()[0]["n"]
    table = spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
    return {
        "table": TABLE,
        "spark_table": name,
        "warehouse": str(warehouse),
        "location": str(table.location()),
        "metadata_location": str(table.operations().current().metadataFileLocation()),
        "rows": rows,
        "columns": [f.name for f in spark.table(name).schema.fields],
        "days": DAYS,
        "categories": len(CATEGORIES),
        "data_files": len(files),
        "data_bytes": sum(f.file_size_in_bytes for f in files),
        "row_groups": {"total": sum(row_groups), "min_per_file": min(row_groups), "max_per_file": max(row_groups)},
        "properties": PROPERTIES,
        "spark_version": spark.version,
        "iceberg_version": str(spark._jvm.org.apache.iceberg.IcebergBuild.version()),
        "scans": {
            "full": {"filter": None, "rows": rows, "data_files": len(files)},
            "selective": {"filter": SELECTIVE_FILTER, "rows": selective, "data_files": selective_files},
        },
    }


def ensure_table(rows: int, jars: list[str]) -> dict[str, Any]:
    """The cached table's description, building it first if it is missing or incomplete."""
    directory = table_dir(rows)
    described = read_marker(directory)
    if described is not None:
        return described
    with load_java_env().file_lock(directory.with_name(directory.name + ".lock")):
        described = read_marker(directory)  # another run may have built it meanwhile
        if described is None:
            if directory.exists():
                log(f"removing the incomplete {directory}")
                shutil.rmtree(directory)
            log(f"building {rows:,} rows into {directory}")
            described = build(directory, rows, jars)
            write_json(directory / MARKER, described)
    return described


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=ROWS, help=f"rows in all (default {ROWS})")
    parser.add_argument("--jars", help="comma-separated jars (default: from scripts/java_env.py)")
    args = parser.parse_args()
    if args.rows < DAYS:
        parser.error(f"--rows must be at least {DAYS}")
    jars = args.jars.split(",") if args.jars else list(load_java_env().ensure_java_env()["jars"])
    started = time.monotonic()
    described = ensure_table(args.rows, jars)
    log(f"ready in {time.monotonic() - started:.1f}s: {described['metadata_location']}")
    print(json.dumps(described))
    return 0


if __name__ == "__main__":
    sys.exit(main())

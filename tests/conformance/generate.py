"""Write the reference tables with Iceberg Java 1.10.2 and record its planFiles() / planTasks() for every case.

    <java venv python> tests/conformance/generate.py --out DIR [--jars A.jar,B.jar]

Runs inside the pyspark venv that scripts/java_env.py sets up (which also supplies the jars when --jars is
not given). One local SparkSession writes the tables of reference_tables.py into DIR/warehouse (a Hadoop
catalog), then every case of cases.CASES is planned twice through the Java API (py4j) with
-Diceberg.scan.plan-in-worker-pool=false; the two plans must be identical. The result, DIR/expected.json,
holds per table its identifier, location and metadata location, and per case the case itself (snapshot
values resolved to numbers), then either Java's exception or the planFiles() tasks and the planTasks()
CombinedScanTasks, in Java's order. Then every read case of read_cases.READ_CASES is read with Spark's
Iceberg source; its rows go to DIR/reads/<case id>.parquet and expected.json's "reads" records the case,
its row count and Spark's schema (see read_expectations); "aggregates" holds Spark + Iceberg's answers to
read_cases.AGGREGATE_CASES, with aggregate push-down on and off (see aggregate_expectations). See
tests/conformance/reference.py for how the suite caches it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import CASES, TABLES  # noqa: E402
from read_cases import (  # noqa: E402
    AGGREGATE_CASES,
    GROUPING_CASES,
    PARTITION_COUNT_CASES,
    READ_CASES,
    READ_TABLES,
    SIZED_TABLES,
    plain_value,
)
from reference_tables import CATALOG, NAMESPACE, TABLE_BUILDERS, Writer  # noqa: E402

GENERATOR_VERSION = 2
PLANS_PER_CASE = 2
READ_THREADS = 3


def log(message: str) -> None:
    print(f"[gen] {message}", flush=True)


def default_jars() -> list[str]:
    spec = importlib.util.spec_from_file_location("java_env", HERE.parent.parent / "scripts" / "java_env.py")
    assert spec is not None and spec.loader is not None
    java_env = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(java_env)
    return list(java_env.ensure_java_env()["jars"])


def start_spark(jars: list[str], warehouse: Path) -> SparkSession:
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("iceberg-conformance")
        .config("spark.jars", ",".join(jars))
        .config("spark.driver.memory", "1g")
        .config("spark.driver.extraJavaOptions", "-Diceberg.scan.plan-in-worker-pool=false")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config(f"spark.sql.catalog.{CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
        .config(f"spark.sql.catalog.{CATALOG}.type", "hadoop")
        .config(f"spark.sql.catalog.{CATALOG}.warehouse", str(warehouse))
        .config(f"spark.sql.catalog.{CATALOG}.cache-enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# --- Snapshot choices -------------------------------------------------------------------------------------

_SYMBOL = re.compile(r"log:(\d+)([+-]?)")


def resolve_snapshot(table: Any, choice: dict[str, Any]) -> dict[str, Any]:
    """Turn a symbolic snapshot value (see cases.py) into the concrete id or timestamp, keeping the symbol."""
    kind, value = choice["kind"], choice.get("value")
    if kind == "appends":  # start (exclusive) and end (inclusive): "log:N", "ref:NAME", an id, or None
        return {
            **choice,
            **{key: _snapshot_id(table, choice.get(key)) for key in ("start", "end")},
            "symbol": {key: choice.get(key) for key in ("start", "end")},
        }
    if kind not in ("id", "as_of") or not isinstance(value, str):
        return dict(choice)
    match = _SYMBOL.fullmatch(value)
    if match is None:
        raise ValueError(f"unknown snapshot symbol {value!r}")
    history = [(entry.timestampMillis(), entry.snapshotId()) for entry in table.history()]
    n, suffix = int(match[1]), match[2]
    if not 1 <= n <= len(history):
        raise ValueError(f"{value!r}: the table has {len(history)} snapshots in its log")
    timestamp, snapshot_id = history[n - 1]
    if kind == "id":
        if suffix:
            raise ValueError(f"{value!r}: snapshot ids take no +/- suffix")
        resolved = snapshot_id
    elif suffix == "-":
        resolved = timestamp - 1
    elif suffix == "+":
        if n == len(history) or history[n][0] - timestamp < 2:
            raise ValueError(f"{value!r}: no millisecond strictly between snapshots {n} and {n + 1}")
        resolved = (timestamp + history[n][0]) // 2
    else:
        resolved = timestamp
    return {"kind": kind, "value": resolved, "symbol": value}


def _snapshot_id(table: Any, value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if value.startswith("ref:"):
        return table.refs().get(value.removeprefix("ref:")).snapshotId()
    return resolve_snapshot(table, {"kind": "id", "value": value})["value"]


# --- Planning ---------------------------------------------------------------------------------------------


def java_iter(iterable: Any) -> Iterator[Any]:
    iterator = iterable.iterator()
    while iterator.hasNext():
        yield iterator.next()


def drain(closeable: Any) -> list[Any]:
    """All elements of a CloseableIterable, closing it afterwards."""
    try:
        return list(java_iter(closeable))
    finally:
        closeable.close()


def delete_json(jvm: Any, d: Any) -> dict[str, Any]:
    eq_ids = d.equalityFieldIds()
    return {
        "path": d.location(),
        "content": d.content().name(),
        "format": d.format().name(),
        "equality_ids": list(eq_ids) if eq_ids is not None else None,
        "referenced_data_file": d.referencedDataFile(),
        # what DeleteFileIndex indexes by: referenced_data_file, or equal file_path bounds (v2 file-scoped)
        "referenced_data_file_location": jvm.org.apache.iceberg.util.ContentFileUtil.referencedDataFileLocation(d),
        "content_offset": d.contentOffset(),
        "content_size_in_bytes": d.contentSizeInBytes(),
        "file_size_in_bytes": d.fileSizeInBytes(),
        "record_count": d.recordCount(),
        "data_sequence_number": d.dataSequenceNumber(),
    }


def task_json(jvm: Any, task: Any) -> dict[str, Any]:
    f = task.file()
    return {
        "path": f.location(),
        "start": task.start(),
        "length": task.length(),
        "spec_id": f.specId(),
        "record_count": f.recordCount(),
        "file_size_in_bytes": f.fileSizeInBytes(),
        "data_sequence_number": f.dataSequenceNumber(),
        "residual": json.loads(jvm.org.apache.iceberg.expressions.ExpressionParser.toJson(task.residual())),
        "deletes": [delete_json(jvm, d) for d in java_iter(task.deletes())],
        "stats": stats_json(jvm, f),
    }


def stats_json(jvm: Any, f: Any) -> dict[str, Any]:
    """The file's column stats as it carries them (none unless the scan asked: includeColumnStats); bounds
    as the upper-case hex of their serialized bytes, as ContentFileParser writes them."""
    to_bytes = jvm.org.apache.iceberg.util.ByteBuffers.toByteArray
    out: dict[str, Any] = {}
    for name, getter in (
        ("value_counts", f.valueCounts),
        ("null_value_counts", f.nullValueCounts),
        ("nan_value_counts", f.nanValueCounts),
    ):
        stats = getter()
        out[name] = None if stats is None else {str(k): int(v) for k, v in stats.items()}
    for name, getter in (("lower_bounds", f.lowerBounds), ("upper_bounds", f.upperBounds)):
        stats = getter()
        out[name] = None if stats is None else {str(k): bytes(to_bytes(v)).hex().upper() for k, v in stats.items()}
    return out


def new_scan(jvm: Any, table: Any, case: dict[str, Any]) -> Any:
    scan = table.newScan()
    kind, value = case["snapshot"]["kind"], case["snapshot"].get("value")
    if kind == "appends":  # as Spark's start-snapshot-id / end-snapshot-id read options build it
        scan = table.newIncrementalAppendScan().fromSnapshotExclusive(case["snapshot"]["start"])
        if case["snapshot"]["end"] is not None:
            scan = scan.toSnapshot(case["snapshot"]["end"])
    elif kind == "id":
        scan = scan.useSnapshot(value)
    elif kind == "as_of":
        scan = scan.asOfTime(value)
    elif kind == "ref":
        scan = scan.useRef(value)
    elif kind != "current":
        raise ValueError(f"{case['id']}: unknown snapshot kind {kind!r}")
    for key, option in case["options"].items():
        scan = scan.option(key, option)
    if case.get("stats_fields"):  # what a REST plan's stats-fields asks for
        columns = jvm.java.util.ArrayList()
        for name in case["stats_fields"]:
            columns.add(name)
        scan = scan.includeColumnStats(columns)
    if case["filter"] is not None:
        parser = jvm.org.apache.iceberg.expressions.ExpressionParser
        text = json.dumps(case["filter"])  # values typed by the schema when asked (binary and fixed from hex)
        scan = scan.filter(parser.fromJson(text, table.schema()) if case.get("with_schema") else parser.fromJson(text))
    return scan.caseSensitive(case["case_sensitive"])


def java_exception(err: Py4JJavaError | CapturedException) -> Any:
    """The Java Throwable behind a py4j error; pyspark converts some (IllegalArgumentException, ...) to its own."""
    if isinstance(err, Py4JJavaError):
        return err.java_exception
    return err._origin


def plan(jvm: Any, table: Any, case: dict[str, Any]) -> dict[str, Any]:
    """Java's answer for one case: its exception, or planFiles() and planTasks() in order, and the ScanReport
    its planFiles() reported (see scan_report_json; None for scans that report none)."""
    try:
        reporter = jvm.org.apache.iceberg.metrics.InMemoryMetricsReporter()
        scan = new_scan(jvm, table, case).metricsReporter(reporter)
        files = [task_json(jvm, t) for t in drain(scan.planFiles())]
        report = scan_report_json(jvm, reporter)
        tasks = [[task_json(jvm, t) for t in java_iter(c.files())] for c in drain(scan.planTasks())]
    except (Py4JJavaError, CapturedException) as err:
        exc = java_exception(err)
        return {
            "error": {"class": exc.getClass().getName(), "message": exc.getMessage()},
            "files": [],
            "tasks": [],
            "scan_report": None,
        }
    return {"error": None, "files": files, "tasks": tasks, "scan_report": report}


def scan_report_json(jvm: Any, reporter: Any) -> dict[str, Any] | None:
    """The ScanReport as Iceberg's REST metrics endpoint takes it (ScanReportParser), without what differs
    between runs: the planning duration, and the environment in `metadata` (engine and Iceberg versions)."""
    try:
        report = reporter.scanReport()
    except (Py4JJavaError, CapturedException):  # no report (an incremental scan reports none)
        return None
    if report is None:
        return None
    out: dict[str, Any] = json.loads(jvm.org.apache.iceberg.metrics.ScanReportParser.toJson(report))
    out["metrics"].pop("total-planning-duration", None)
    out.pop("metadata", None)
    return out


def plan_cases(writer: Writer) -> list[dict[str, Any]]:
    results = []
    for case in CASES:
        resolved = {**case, "snapshot": resolve_snapshot(writer.load(case["table"]), case["snapshot"])}
        # each plan on a freshly loaded table, so nothing cached in a Table object can hide nondeterminism
        plans = [plan(writer.jvm, writer.load(case["table"]), resolved) for _ in range(PLANS_PER_CASE)]
        if any(p != plans[0] for p in plans[1:]):
            raise RuntimeError(f"{case['id']}: Java planned differently on a second run; is the worker pool off?")
        result = {**resolved, **plans[0]}
        if result["error"] is not None:
            log(f"case {case['id']}: {result['error']['class']}: {result['error']['message']}")
        else:
            log(f"case {case['id']}: {len(result['files'])} files, {len(result['tasks'])} tasks")
        results.append(result)
    return results


# --- Reads ----------------------------------------------------------------------------------------------

_READ_OPTIONS = {"id": "snapshot-id", "as_of": "as-of-timestamp", "branch": "branch", "tag": "tag"}


def spark_read(writer: Writer, case: dict[str, Any]) -> Any:
    """The case's DataFrame: Spark's Iceberg source with the snapshot and split options, filtered, projected."""
    reader = writer.spark.read.format("iceberg")
    snapshot = case["snapshot"]
    if snapshot["kind"] == "appends":  # an incremental append read
        reader = reader.option("start-snapshot-id", str(snapshot["start"]))
        if snapshot["end"] is not None:
            reader = reader.option("end-snapshot-id", str(snapshot["end"]))
    elif snapshot["kind"] != "current":
        reader = reader.option(_READ_OPTIONS[snapshot["kind"]], str(snapshot["value"]))
    if case["split_size"] is not None:
        reader = reader.option("split-size", str(case["split_size"]))
    df = reader.load(writer.ident(case["table"]))
    if case["spark_filter"] is not None:
        df = df.where(case["spark_filter"])
    return df.select(*case["columns"]) if case["columns"] is not None else df


def parquet_row_count(writer: Writer, path: Path) -> int:
    """The row count in a Parquet footer, read by parquet-mr in the driver JVM (no Spark job)."""
    jvm = writer.jvm
    conf = writer.spark._jsc.hadoopConfiguration()
    hadoop_path = jvm.org.apache.hadoop.fs.Path(str(path))
    reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(
        jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(hadoop_path, conf)
    )
    try:
        return int(reader.getRecordCount())
    finally:
        reader.close()


def read_one(writer: Writer, out: Path, index: int, case: dict[str, Any]) -> dict[str, Any]:
    """Read one case with Spark + Iceberg and write its rows, in one Parquet file, to out/reads/<id>.parquet."""
    resolved = {**case, "snapshot": resolve_snapshot(writer.load(case["table"]), case["snapshot"])}
    df = spark_read(writer, resolved)
    target = out / "reads" / f"{case['id']}.parquet"
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = out / "reads-scratch" / str(index)
    df.coalesce(1).write.parquet(str(scratch))
    (part,) = scratch.glob("part-*.parquet")
    os.replace(part, target)
    shutil.rmtree(scratch)
    rows = parquet_row_count(writer, target)
    log(f"read {case['id']}: {rows} rows")
    return {
        **resolved,
        "path": str(target.relative_to(out)),
        "rows": rows,
        "spark_schema": df.schema.json(),
        **spark_filtering(df),
        "null_free": {
            "planned": null_free_columns(writer, resolved, filtered=True),
            "snapshot": null_free_columns(writer, resolved, filtered=False),
        },
    }


_REF_KINDS = {"branch": "ref", "tag": "ref"}


def null_free_columns(writer: Writer, case: dict[str, Any], filtered: bool) -> list[str] | None:
    """The top-level columns of the read's scan schema that every file Java's planFiles() plans (with the
    read's filter, or without any) gives a null count of 0, optional or not; None when it plans no file."""
    kind = case["snapshot"]["kind"]
    scan_case = {
        "id": case["id"],
        "snapshot": {**case["snapshot"], "kind": _REF_KINDS.get(kind, kind)},
        "options": {},
        "filter": case["filter"] if filtered else None,
        "case_sensitive": True,
    }
    try:
        return _null_free(writer, case["table"], scan_case)
    except (Py4JJavaError, CapturedException):  # binary and fixed values: from their hex, typed by the schema
        return _null_free(writer, case["table"], {**scan_case, "with_schema": True})


def _null_free(writer: Writer, name: str, scan_case: dict[str, Any]) -> list[str] | None:
    scan = new_scan(writer.jvm, writer.load(name), scan_case).includeColumnStats()
    proven: set[int] | None = None
    for task in drain(scan.planFiles()):
        counts = task.file().nullValueCounts()
        zero = set() if counts is None else {int(k) for k, v in counts.items() if int(v) == 0}
        proven = zero if proven is None else proven & zero
    if proven is None:
        return None
    return [str(f.name()) for f in java_iter(scan.schema().columns()) if int(f.fieldId()) in proven]


_PUSHED = re.compile(r"\[filters=(.*?), groupedBy=")


def spark_filtering(df: Any) -> dict[str, Any]:
    """What Spark did with the read's filter: the filters its Iceberg scan received (as Spark prints them)
    and whether a Filter above the scan evaluated rows again (Iceberg keeps the ones it answers from
    partitions alone)."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    pushed = _PUSHED.search(plan)
    return {
        "spark_pushed_filters": pushed[1] if pushed else None,
        "spark_filters_rows": any(line.lstrip(" +-:*()0123456789").startswith("Filter ") for line in plan.splitlines()),
    }


def read_expectations(writer: Writer, out: Path) -> list[dict[str, Any]]:
    """Read every read case with Spark + Iceberg; the rows go to out/reads/<id>.parquet.

    Spark's Parquet writer keeps its types: timestamps as TIMESTAMP_MICROS (UTC-adjusted for Spark's
    TIMESTAMP, Iceberg's timestamptz; not for TIMESTAMP_NTZ), decimals, lists, maps and structs as such.
    The jobs are tiny, so a few run at once to overlap the driver's per-job latency.
    """
    writer.spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    with ThreadPoolExecutor(READ_THREADS) as pool:
        results = list(pool.map(lambda item: read_one(writer, out, *item), enumerate(READ_CASES)))
    shutil.rmtree(out / "reads-scratch", ignore_errors=True)
    return results


def partition_counts(writer: Writer) -> list[dict[str, Any]]:
    """Spark + Iceberg's partition count (planning only) for each PARTITION_COUNT_CASES entry."""
    out = []
    for table, shuffle, options in PARTITION_COUNT_CASES:
        writer.spark.conf.set("spark.sql.shuffle.partitions", str(shuffle))
        reader = writer.spark.read.format("iceberg")
        for key, value in options.items():
            reader = reader.option(key, value)
        count = reader.load(writer.ident(table)).rdd.getNumPartitions()
        parallelism = max(writer.spark.sparkContext.defaultParallelism, shuffle)
        out.append(
            {
                "table": table,
                "shuffle_partitions": shuffle,
                "parallelism": parallelism,
                "options": options,
                "partitions": count,
            }
        )
        log(f"partitions {table} shuffle={shuffle} {options}: {count}")
    writer.spark.conf.set("spark.sql.shuffle.partitions", "2")
    return out


PRESERVE_GROUPING = "spark.sql.iceberg.planning.preserve-data-grouping"


def task_groups(writer: Writer) -> list[dict[str, Any]]:
    """Spark + Iceberg's task groups for each GROUPING_CASES entry (planning only): each input partition's
    grouping key and tasks, as the scan planned them, and Spark's partition count."""
    jvm = writer.spark.sparkContext._jvm
    assert jvm is not None
    any_class = jvm.java.lang.Class.forName("java.lang.Object")
    out = []
    writer.spark.conf.set(PRESERVE_GROUPING, "true")
    try:
        for table, spark_filter, options in GROUPING_CASES:
            reader = writer.spark.read.format("iceberg")
            for key, value in options.items():
                reader = reader.option(key, value)
            df = reader.load(writer.ident(table))
            if spark_filter is not None:
                df = df.where(spark_filter)
            scan = df._jdf.queryExecution().executedPlan().collectLeaves().head()
            groups = []
            for partition in scan.batch().planInputPartitions():
                group = partition.taskGroup()
                key = group.groupingKey()
                groups.append(
                    {
                        "key": None if key is None else [_plain(key.get(i, any_class)) for i in range(key.size())],
                        "tasks": [[t.file().location(), t.start(), t.length()] for t in java_iter(group.tasks())],
                    }
                )
            partitions = df.rdd.getNumPartitions()
            out.append(
                {"table": table, "filter": spark_filter, "options": options, "groups": groups, "partitions": partitions}
            )
            log(f"task groups {table} {spark_filter} {options}: {len(groups)} groups, {partitions} partitions")
    finally:
        writer.spark.conf.unset(PRESERVE_GROUPING)
    return out


def _plain(value: Any) -> Any:
    """A grouping key value as JSON: strings and numbers as they are, anything else as its text."""
    return value if value is None or isinstance(value, str | int | float | bool) else str(value)


PUSH_DOWN = "spark.sql.iceberg.aggregate-push-down.enabled"


def aggregate_expectations(writer: Writer) -> list[dict[str, Any]]:
    """Each AGGREGATE_CASES entry as Spark + Iceberg answers it: with aggregate push-down on (whether
    Iceberg answered from metadata, a LocalTableScan in Spark's plan, and the values) and off (the rows'
    values). Values in read_cases.plain_value's form."""
    out = []
    for case in AGGREGATE_CASES:
        resolved = {**case, "snapshot": resolve_snapshot(writer.load(case["table"]), case["snapshot"])}
        answers = {}
        for push_down in ("true", "false"):
            writer.spark.conf.set(PUSH_DOWN, push_down)
            df = spark_read(writer, resolved).agg(*[F.expr(a) for a in case["aggregates"]])
            plan = df._jdf.queryExecution().executedPlan().toString()
            (row,) = df.collect()
            utc = [isinstance(f.dataType, TimestampType) for f in df.schema.fields]
            answers[push_down] = {
                "pushed": "LocalTableScan" in plan,
                "values": [plain_value(v, u) for v, u in zip(row, utc, strict=True)],
            }
        writer.spark.conf.unset(PUSH_DOWN)
        on, off = answers["true"], answers["false"]
        assert not off["pushed"], f"{case['id']}: pushed down with {PUSH_DOWN}=false"
        out.append({**resolved, "pushed": on["pushed"], "spark_values": on["values"], "read_values": off["values"]})
        log(f"aggregate {case['id']}: pushed={on['pushed']} {on['values']} (rows: {off['values']})")
    return out


# --- Output -----------------------------------------------------------------------------------------------


def table_json(writer: Writer, name: str) -> dict[str, Any]:
    table = writer.load(name)
    metadata = table.operations().current()
    current = table.currentSnapshot()
    return {
        "identifier": f"{NAMESPACE}.{name}",
        "location": table.location(),
        "metadata_location": metadata.metadataFileLocation(),
        "format_version": metadata.formatVersion(),
        "current_snapshot_id": current.snapshotId() if current is not None else None,
        "snapshot_count": len(list(table.snapshots())),
        "refs": sorted(metadata.refs().keySet()),
    }


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="output directory (its warehouse/ is replaced)")
    parser.add_argument("--jars", help="comma-separated jars (default: from scripts/java_env.py)")
    args = parser.parse_args()
    differ = {*TABLES, *READ_TABLES, *SIZED_TABLES} ^ set(TABLE_BUILDERS)
    if differ:
        raise SystemExit(f"cases.TABLES + read_cases.READ_TABLES and reference_tables.TABLE_BUILDERS differ: {differ}")
    out: Path = args.out.resolve()
    warehouse = out / "warehouse"
    for stale in (warehouse, out / "reads", out / "reads-scratch"):
        if stale.exists():
            shutil.rmtree(stale)
    (out / "expected.json").unlink(missing_ok=True)
    warehouse.mkdir(parents=True)

    started = time.monotonic()
    spark = start_spark(args.jars.split(",") if args.jars else default_jars(), warehouse)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    log(f"Spark {spark.version} up in {time.monotonic() - started:.1f}s")
    if jvm.java.lang.System.getProperty("iceberg.scan.plan-in-worker-pool") != "false":
        raise RuntimeError("-Diceberg.scan.plan-in-worker-pool=false did not reach the driver JVM")
    try:
        writer = Writer(spark)
        for name in (*TABLES, *READ_TABLES, *SIZED_TABLES):
            TABLE_BUILDERS[name](writer)
            log(f"table {name}: {len(list(writer.load(name).snapshots()))} snapshots")
        log(f"tables written in {time.monotonic() - started:.0f}s")
        cases = plan_cases(writer)
        log(f"plans recorded in {time.monotonic() - started:.0f}s")
        reads = read_expectations(writer, out)
        partitions = partition_counts(writer)
        groupings = task_groups(writer)
        aggregates = aggregate_expectations(writer)
        expected = {
            "generator_version": GENERATOR_VERSION,
            "iceberg_version": jvm.org.apache.iceberg.IcebergBuild.version(),
            "java_version": jvm.java.lang.System.getProperty("java.version"),
            "spark_version": spark.version,
            "determinism": {"plans_per_case": PLANS_PER_CASE, "verified": True},
            "tables": {name: table_json(writer, name) for name in TABLES},
            "cases": cases,
            "read_tables": {name: table_json(writer, name) for name in READ_TABLES},
            "reads": reads,
            "sized_tables": {name: table_json(writer, name) for name in SIZED_TABLES},
            "partition_counts": partitions,
            "task_groups": groupings,
            "aggregates": aggregates,
        }
    finally:
        spark.stop()
    write_json(out / "expected.json", expected)
    log(
        f"wrote {out / 'expected.json'}: {len(TABLES) + len(READ_TABLES)} tables, {len(cases)} cases, "
        f"{len(reads)} reads in {time.monotonic() - started:.0f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

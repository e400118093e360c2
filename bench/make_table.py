"""Write the benchmark table with Iceberg Java 1.10.2: metadata only, many data files in many manifests.

    <java venv python> bench/make_table.py [--files 200000] [--manifests 400] [--shape uniform|mixed]

Runs in the pyspark venv of scripts/java_env.py (plan_bench.py starts it). The table is format v2 with
schema (id long, category string, ts timestamp, amount double), partitioned by day(ts) and
identity(category). It has `--manifests` manifests of `--files / --manifests` data files each, written by
Iceberg's ManifestWriter and committed MANIFESTS_PER_COMMIT at a time by fast appends (appendManifest), so
that 20,000,000 files in 20,000 manifests build in minutes: one commit per manifest would rewrite a growing
manifest list and metadata.json 20,000 times. The data files do not exist: planning reads
only metadata. Each file gets realistic metadata so that planning does realistic work:

* sizes of 10-200 MB with 1-4 row groups (split offsets), so planTasks() splits and bin-packs as usual;
* full metrics: record, value and null counts, column sizes, lower/upper bounds of every column;
* `--shape mixed`: files of several writers side by side, their optional fields (sort order id, split
  offsets) present in some and absent in others, as in tables that several engines append to;
* manifest k covers day k alone (manifests can be pruned by their partition summaries), and ids are
  consecutive and disjoint per file (an id range selects a known share of the files by their bounds).

Python describes each manifest's files as JSON (the REST spec's content-file form); a short Java class,
APPEND_FILES, compiled at run time by Janino (which ships with Spark), turns them into DataFiles with
Iceberg's own ContentFileParser, writes them with ManifestFiles.write and commits written manifests with
newFastAppend().appendManifest. That is one py4j call per manifest instead of tens per file
(DataFiles.builder() call by call through py4j would take minutes). Content is
deterministic (fixed seed); only snapshot ids, timestamps and metadata file names vary between builds.

The table is cached in $SCAN_PLANNER_CACHE/bench/<sha256 of this file>/<files>-files-<manifests>-manifests/
and built in place (Iceberg stores absolute paths); table.json, written last, marks it complete and
describes it. An incomplete directory is rebuilt from scratch, under a file lock.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import shutil
import struct
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from common import MARKER, SHAPES, load_java_env, read_marker, table_dir, write_json
from jvm import started_jvm

SEED = 1729
FIRST_DAY = dt.date(2023, 1, 1)
CATEGORIES = ("books", "games", "garden", "music", "tools", "toys")
MIB = 1024 * 1024
PROPERTIES = {
    "format-version": "2",
    "commit.manifest-merge.enabled": "false",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "5",
}
FIELD_IDS = {"id": 1, "category": 2, "ts": 3, "amount": 4}
_EPOCH = dt.datetime(1970, 1, 1)
# Each manifest is written from a JSON array of content files (the loop runs in Java: one py4j call per
# manifest), and a batch of written manifests is committed by one fast append (appendManifest: a v2 table
# inherits the snapshot id and sequence number, as entries a fast append writes itself do).
APPEND_FILES = """
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.ContentFileParser;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestWriter;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.util.JsonUtil;

public class BenchAppendFiles {
    public static ManifestFile write(Table table, String json, String path) throws java.io.IOException {
        JsonNode files = (JsonNode) JsonUtil.mapper().readTree(json);
        PartitionSpec spec = table.spec();
        ManifestWriter writer = ManifestFiles.write(2, spec, table.io().newOutputFile(path), null);
        try {
            for (int i = 0; i < files.size(); i++) {
                writer.add((DataFile) ContentFileParser.fromJson((JsonNode) files.get(i), spec));
            }
        } finally {
            writer.close();
        }
        return writer.toManifestFile();
    }

    public static void commit(Table table, java.util.List manifests) {
        AppendFiles append = table.newFastAppend();
        for (int i = 0; i < manifests.size(); i++) {
            append.appendManifest((ManifestFile) manifests.get(i));
        }
        append.commit();
    }
}
"""
MANIFESTS_PER_COMMIT = 100

_DAY_MICROS = 86_400_000_000
_HOUR_MICROS = 3_600_000_000


def log(message: str) -> None:
    print(f"[make-table] {message}", file=sys.stderr, flush=True)


# --- The files' metadata ----------------------------------------------------------------------------------


def _long(value: int) -> str:
    return struct.pack("<q", value).hex()


def _double(value: float) -> str:
    return struct.pack("<d", value).hex()


def _string(value: str) -> str:
    return value.encode().hex()


def _id_map(values: dict[str, Any]) -> dict[str, list[Any]]:
    """A map keyed by field id in the content-file JSON form: {"keys": [...], "values": [...]}."""
    return {"keys": [FIELD_IDS[name] for name in values], "values": list(values.values())}


def data_file(
    rng: random.Random, location: str, index: int, day: dt.date, first_id: int, shape: str = "uniform"
) -> dict[str, Any]:
    """One data file of day `day` whose ids start at `first_id`, as Iceberg's ContentFileParser reads it.
    Shape `mixed`: files of several writers in each manifest, so their optional fields differ from file to file:
    every third has no sort order id (PyIceberg's appends record none), every fifth no split offsets."""
    category = rng.choice(CATEGORIES)
    size = rng.randint(10 * MIB, 200 * MIB)
    rows = size // rng.randint(40, 60)
    row_groups = rng.randint(1, 4)
    offsets = [4 + (size - 4) * i // row_groups for i in range(row_groups)]
    day_start = int((dt.datetime.combine(day, dt.time()) - _EPOCH).total_seconds()) * 1_000_000
    ts_low = day_start + rng.randrange(_HOUR_MICROS)
    ts_high = day_start + _DAY_MICROS - 1 - rng.randrange(_HOUR_MICROS)
    amount_nulls = rows // rng.randint(50, 500)
    described: dict[str, Any] = {
        "spec-id": 0,
        "content": "DATA",
        "file-path": f"{location}/data/ts_day={day}/category={category}/{index:08d}-bench.parquet",
        "file-format": "PARQUET",
        "partition": {"1000": day.isoformat(), "1001": category},
        "file-size-in-bytes": size,
        "record-count": rows,
        "column-sizes": _id_map(
            {"id": size * 15 // 100, "category": size * 2 // 100, "ts": size * 23 // 100, "amount": size * 60 // 100}
        ),
        "value-counts": _id_map(dict.fromkeys(FIELD_IDS, rows)),
        "null-value-counts": _id_map({"id": 0, "category": 0, "ts": 0, "amount": amount_nulls}),
        "nan-value-counts": _id_map({"amount": 0}),
        "lower-bounds": _id_map(
            {
                "id": _long(first_id),
                "category": _string(category),
                "ts": _long(ts_low),
                "amount": _double(round(rng.uniform(0, 5), 2)),
            }
        ),
        "upper-bounds": _id_map(
            {
                "id": _long(first_id + rows - 1),
                "category": _string(category),
                "ts": _long(ts_high),
                "amount": _double(round(rng.uniform(995, 1000), 2)),
            }
        ),
    }
    if shape == "uniform" or index % 5:
        described["split-offsets"] = offsets
    if shape == "uniform" or index % 3:
        described["sort-order-id"] = 0
    return described


# --- Writing through Iceberg Java -------------------------------------------------------------------------


def create_table(gateway: Any, location: str) -> Any:
    jvm = gateway.jvm
    iceberg = jvm.org.apache.iceberg
    types = iceberg.types.Types
    field = types.NestedField
    schema = iceberg.Schema(
        [
            field.required(FIELD_IDS["id"], "id", types.LongType.get()),
            field.optional(FIELD_IDS["category"], "category", types.StringType.get()),
            field.optional(FIELD_IDS["ts"], "ts", types.TimestampType.withoutZone()),
            field.optional(FIELD_IDS["amount"], "amount", types.DoubleType.get()),
        ]
    )
    spec = iceberg.PartitionSpec.builderFor(schema).day("ts").identity("category").build()
    tables = iceberg.hadoop.HadoopTables(jvm.org.apache.hadoop.conf.Configuration())
    return tables.create(schema, spec, iceberg.SortOrder.unsorted(), PROPERTIES, location)


def bench_methods(gateway: Any) -> tuple[Any, Any]:
    """APPEND_FILES compiled with Janino (it ships with Spark): its write and commit java.lang.reflect.Methods."""
    jvm = gateway.jvm
    compiler = jvm.org.codehaus.janino.SimpleCompiler()
    compiler.setParentClassLoader(jvm.java.lang.Thread.currentThread().getContextClassLoader())
    compiler.cook(APPEND_FILES)
    cls = compiler.getClassLoader().loadClass("BenchAppendFiles")

    def method(name: str, *types: str) -> Any:
        parameters = gateway.new_array(jvm.java.lang.Class, len(types))
        for i, typ in enumerate(types):
            parameters[i] = jvm.java.lang.Class.forName(typ)
        return cls.getMethod(name, parameters)

    table, string = "org.apache.iceberg.Table", "java.lang.String"
    return method("write", table, string, string), method("commit", table, "java.util.List")


def build(directory: Path, files: int, manifests: int, jars: list[str], shape: str) -> dict[str, Any]:
    """Write the table into directory/table: `manifests` manifests, MANIFESTS_PER_COMMIT per fast append;
    return its description. Python describes the next manifest's files while Java writes the last."""
    per_manifest = files // manifests
    location = str(directory / "table")
    rng = random.Random(SEED)
    started = time.monotonic()
    with started_jvm(jars) as gateway, ThreadPoolExecutor(1) as java:
        table = create_table(gateway, location)
        write, commit = bench_methods(gateway)
        log(
            f"JVM up, table created in {time.monotonic() - started:.1f}s; {manifests} manifests of {per_manifest} "
            f"files, {MANIFESTS_PER_COMMIT} per commit"
        )
        next_id, file_ids = 0, []
        written: list[Future[Any]] = []

        def write_manifest(k: int, text: str) -> Any:
            arguments = gateway.new_array(gateway.jvm.java.lang.Object, 3)
            arguments[0], arguments[1] = table, text
            arguments[2] = f"{location}/metadata/bench-{k:06d}-m0.avro"
            return write.invoke(None, arguments)

        def commit_written() -> None:
            batch = gateway.jvm.java.util.ArrayList()
            for future in written:
                batch.add(future.result())
            arguments = gateway.new_array(gateway.jvm.java.lang.Object, 2)
            arguments[0], arguments[1] = table, batch
            commit.invoke(None, arguments)
            written.clear()

        for k in range(manifests):
            day = FIRST_DAY + dt.timedelta(days=k)
            batch = []
            for j in range(per_manifest):
                batch.append(data_file(rng, location, k * per_manifest + j, day, next_id, shape))
                file_ids.append(next_id)
                next_id += batch[-1]["record-count"]
            written.append(java.submit(write_manifest, k, json.dumps(batch)))
            if len(written) == MANIFESTS_PER_COMMIT or k + 1 == manifests:
                commit_written()
            if (k + 1) % max(1, manifests // 20) == 0 or k + 1 == manifests:
                log(f"{k + 1}/{manifests} manifests, {(k + 1) * per_manifest} files, {time.monotonic() - started:.0f}s")
        table.refresh()
        metadata_location = table.operations().current().metadataFileLocation()
        snapshots = len(list(table.snapshots()))
    return {**describe(location, metadata_location, files, manifests, snapshots, file_ids, next_id), "shape": shape}


def describe(
    location: str, metadata_location: str, files: int, manifests: int, snapshots: int, file_ids: list[int], ids: int
) -> dict[str, Any]:
    """table.json: where the table is, its shape, and filters that select about 1% of it (for filter benchmarks)."""
    share = max(1, files // 100)
    first = files // 2
    last_id = file_ids[first + share] - 1 if first + share < files else ids - 1
    days = max(1, manifests // 100)
    first_day = FIRST_DAY + dt.timedelta(days=manifests // 2)
    return {
        "location": location,
        "metadata_location": metadata_location,
        "format_version": 2,
        "data_files": files,
        "data_manifests": manifests,
        "snapshots": snapshots,
        "records": ids,
        "seed": SEED,
        "one_percent": {
            "id_range": {"min": file_ids[first], "max": last_id, "files": share},
            "day_range": {"first": str(first_day), "last": str(first_day + dt.timedelta(days=days - 1))},
            "day_range_manifests": days,
        },
    }


def ensure_table(files: int, manifests: int, jars: list[str], shape: str = "uniform") -> dict[str, Any]:
    """The cached table's description, building it first if it is missing or incomplete."""
    directory = table_dir(files, manifests, shape)
    described = read_marker(directory)
    if described is not None:
        return described
    with load_java_env().file_lock(directory.with_name(directory.name + ".lock")):
        described = read_marker(directory)  # another run may have built it meanwhile
        if described is None:
            if directory.exists():
                log(f"removing the incomplete {directory}")
                shutil.rmtree(directory)
            log(f"building {files} data files in {manifests} manifests into {directory}")
            described = build(directory, files, manifests, jars, shape)
            write_json(directory / MARKER, described)
    return described


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200_000, help="data files in all (default 200000)")
    parser.add_argument("--manifests", type=int, default=400, help="data manifests (default 400)")
    parser.add_argument("--shape", choices=SHAPES, default="uniform", help="the files' optional fields (data_file)")
    parser.add_argument("--jars", help="comma-separated jars (default: from scripts/java_env.py)")
    args = parser.parse_args()
    if args.manifests < 1 or args.files < args.manifests or args.files % args.manifests:
        parser.error("--files must be a positive multiple of --manifests")
    jars = args.jars.split(",") if args.jars else list(load_java_env().ensure_java_env()["jars"])
    started = time.monotonic()
    described = ensure_table(args.files, args.manifests, jars, args.shape)
    log(f"ready in {time.monotonic() - started:.1f}s: {described['metadata_location']}")
    print(json.dumps(described))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Write a table with Iceberg Java 1.10.2, then every hostile variant of it (variants.py) as a table of its own,
and record what Java does with each: its exception when loading or planning it, or its planFiles() (data
file and delete files) and planTasks() splits.

    <java venv python> tests/hostile/java_verdicts.py --out DIR [--jars A.jar,B.jar]

DIR/warehouse/hostile/base is the table Spark + Iceberg wrote (partitioned by bucket, truncate and day;
merge-on-read position deletes; a tag t1 and a branch b1), DIR/warehouse/hostile/<case> each variant: a
metadata/v1.metadata.json (and version-hint.text) that shares the base table's files but for the one file
the case changes, written into the variant's own metadata/ directory. DIR/verdicts.json is written last and
marks DIR complete. Java loads each variant with HadoopTables (TableMetadataParser) and plans it on a freshly
loaded table; tests/hostile/test_java_verdicts.py holds the service to the result.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, cast

import fastavro
from py4j.protocol import Py4JJavaError
from pyspark.errors.exceptions.captured import CapturedException

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "conformance"))

from generate import default_jars, java_exception, java_iter, start_spark  # noqa: E402
from mutations import fuzz_cases  # noqa: E402
from variants import CASES, Case, current_snapshot  # noqa: E402

NAMESPACE = "hostile"
FUZZ_NAMESPACE = "fuzz"
FUZZ_SEED = 1
FUZZ_COUNT = 300  # the suite's share of mutations (tests/hostile/fuzz_run.py runs as many as asked)
VERDICTS_VERSION = 1


def log(message: str) -> None:
    print(f"[hostile] {message}", flush=True)


def write_base(spark: Any) -> None:
    table = f"cat.{NAMESPACE}.base"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS cat.{NAMESPACE}")
    spark.sql(f"""
        CREATE TABLE {table} (
            id bigint NOT NULL, s string, d decimal(9, 2), ts timestamp,
            nested struct<a: int, b: array<int>>, m map<string, int>)
        USING iceberg PARTITIONED BY (bucket(2, id), truncate(2, s), days(ts))
        TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read',
                       'write.update.mode' = 'merge-on-read')""")
    for batch in range(3):  # 8 rows a batch in 2 buckets of one day: files of several rows
        rows = ", ".join(
            f"({batch * 10 + i}, 's{batch}{i}', {batch}.{i}5, TIMESTAMP '2026-0{batch + 1}-01 1{i}:00:00', "
            f"named_struct('a', {i}, 'b', array({i}, {batch})), map('k{i}', {batch}))"
            for i in range(8)
        )
        spark.sql(f"INSERT INTO {table} VALUES {rows}")
    spark.sql(f"ALTER TABLE {table} CREATE TAG t1")
    spark.sql(f"DELETE FROM {table} WHERE id % 8 = 1")  # position deletes
    spark.sql(f"ALTER TABLE {table} CREATE BRANCH b1")
    spark.sql(f"INSERT INTO {table} VALUES (99, 'zz', 9.99, TIMESTAMP '2026-05-05 05:05:05', null, null)")


def latest_metadata(table_dir: Path) -> Path:
    hint = (table_dir / "metadata" / "version-hint.text").read_text().strip()
    return table_dir / "metadata" / f"v{hint}.metadata.json"


def read_avro(path: Path) -> tuple[Any, str, list[dict[str, Any]], dict[str, str]]:
    with path.open("rb") as f:
        reader = fastavro.reader(f)
        records = cast(list[dict[str, Any]], list(reader))  # a manifest (list) file holds records
        metadata = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
        return reader.writer_schema, reader.codec, records, metadata


def write_avro(path: Path, schema: Any, codec: str, records: list[dict[str, Any]], metadata: dict[str, Any]) -> int:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec, metadata=metadata)
    path.write_bytes(out.getvalue())
    return len(out.getvalue())


def write_case(base: dict[str, Any], case: Case, table_dir: Path) -> None:
    """The case's table: its metadata.json and, for a manifest case, its manifest list and manifest."""
    meta_dir = table_dir / "metadata"
    meta_dir.mkdir(parents=True)
    meta = copy.deepcopy(base)
    if case.target != "metadata":
        snapshot = current_snapshot(meta)
        source_list = Path(snapshot["manifest-list"])
        target_list = meta_dir / f"list-{case.name}.avro"
        schema, codec, records, extra = read_avro(source_list)
        if case.target == "manifest-list":
            write_avro(target_list, schema, codec, case.mutate(records), extra)
        elif case.target == "manifest-list-bytes":
            target_list.write_bytes(case.mutate(source_list.read_bytes()))
        else:
            content = 1 if case.target.startswith("delete-") else 0
            first = next(r for r in records if r["content"] == content and r["added_files_count"])
            source = Path(first["manifest_path"])
            target = meta_dir / f"manifest-{case.name}.avro"
            if case.target in ("manifest", "delete-manifest"):
                m_schema, m_codec, entries, m_extra = read_avro(source)
                length = write_avro(target, m_schema, m_codec, case.mutate(entries), m_extra)
            else:
                target.write_bytes(case.mutate(source.read_bytes()))
                length = target.stat().st_size
            first.update(manifest_path=str(target), manifest_length=length)
            write_avro(target_list, schema, codec, records, extra)
        snapshot["manifest-list"] = str(target_list)
        text = json.dumps(meta, indent=2)
    else:
        mutated = case.mutate(meta)
        text = mutated if isinstance(mutated, str) else json.dumps(mutated, indent=2)
    (meta_dir / "v1.metadata.json").write_text(text)
    (meta_dir / "version-hint.text").write_text("1")


def task_json(task: Any) -> dict[str, Any]:
    return {
        "path": str(task.file().location()),
        "start": int(task.start()),
        "length": int(task.length()),
        "deletes": sorted(str(d.location()) for d in java_iter(task.deletes())),
    }


def error_json(err: Py4JJavaError | CapturedException) -> dict[str, str | None]:
    exc = java_exception(err)
    cause = exc.getCause()
    return {
        "class": str(exc.getClass().getName()),
        "message": str(exc.getMessage())[:2000],
        "cause": None if cause is None else f"{cause.getClass().getName()}: {cause.getMessage()}",
    }


def verdict(jvm: Any, conf: Any, location: Path) -> dict[str, Any]:
    try:
        table = jvm.org.apache.iceberg.hadoop.HadoopTables(conf).load(str(location))
    except (Py4JJavaError, CapturedException) as err:
        return {"stage": "load", "error": error_json(err)}
    try:
        files = [task_json(t) for t in java_iter(table.newScan().planFiles())]
        tasks = [task_json(t) for c in java_iter(table.newScan().planTasks()) for t in java_iter(c.files())]
    except (Py4JJavaError, CapturedException) as err:
        return {"stage": "plan", "error": error_json(err)}
    except RuntimeError as err:  # a Java iterator whose hasNext() said yes and whose next() then threw
        return {
            "stage": "plan",
            "error": {"class": "java.util.NoSuchElementException", "message": str(err), "cause": None},
        }
    return {"stage": "planned", "error": None, "files": sorted(files, key=_key), "tasks": sorted(tasks, key=_key)}


def fuzz_verdict(jvm: Any, conf: Any, base: dict[str, Any], case: Case, table_dir: Path) -> dict[str, Any]:
    """Java's verdict on a mutation, or "unwritable" when the mutated records do not fit the file's schema."""
    try:
        write_case(base, case, table_dir)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, StopIteration) as exc:
        shutil.rmtree(table_dir, ignore_errors=True)
        return {"stage": "unwritable", "error": {"class": type(exc).__name__, "message": str(exc)[:200]}}
    return verdict(jvm, conf, table_dir)


def _key(task: dict[str, Any]) -> tuple[str, int]:
    return task["path"], task["start"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="output directory (its warehouse/ is replaced)")
    parser.add_argument("--jars", help="comma-separated jars (default: from scripts/java_env.py)")
    parser.add_argument("--fuzz-seed", type=int, default=FUZZ_SEED, help="the fuzzer's seed")
    parser.add_argument("--fuzz-count", type=int, default=FUZZ_COUNT, help="how many mutations to write")
    parser.add_argument("--fuzz-start", type=int, default=0, help="the number of the first mutation")
    parser.add_argument("--fuzz-only", action="store_true", help="only the mutations, not the variants")
    args = parser.parse_args()
    out: Path = args.out.resolve()
    warehouse = out / "warehouse"
    shutil.rmtree(warehouse, ignore_errors=True)
    (out / "verdicts.json").unlink(missing_ok=True)
    warehouse.mkdir(parents=True)
    started = time.monotonic()
    spark = start_spark(args.jars.split(",") if args.jars else default_jars(), warehouse)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    try:
        write_base(spark)
        base_dir = warehouse / NAMESPACE / "base"
        base = json.loads(latest_metadata(base_dir).read_text())
        log(f"base table written in {time.monotonic() - started:.0f}s")
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        verdicts = {}
        for name, case in ({} if args.fuzz_only else CASES).items():
            write_case(base, case, warehouse / NAMESPACE / name)
            verdicts[name] = verdict(jvm, conf, warehouse / NAMESPACE / name)
            error = verdicts[name]["error"]
            log(
                f"{name}: "
                + (
                    f"{verdicts[name]['stage']}: {error['class']}: {error['message'][:160]}"
                    if error
                    else f"{len(verdicts[name]['files'])} files"
                )
            )
        fuzz = {}
        for i, case in enumerate(fuzz_cases(args.fuzz_seed, args.fuzz_count, args.fuzz_start)):
            fuzz[case.name] = fuzz_verdict(jvm, conf, base, case, warehouse / FUZZ_NAMESPACE / case.name)
            if i % 500 == 499:
                log(f"fuzz: {i + 1} of {args.fuzz_count} mutations judged")
    finally:
        spark.stop()
    result = {"version": VERDICTS_VERSION, "base": str(base_dir), "verdicts": verdicts, "fuzz": fuzz}
    tmp = out / "verdicts.json.tmp"
    tmp.write_text(json.dumps(result, indent=1))
    os.replace(tmp, out / "verdicts.json")
    log(f"{len(verdicts)} verdicts in {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

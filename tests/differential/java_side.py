"""Iceberg Java's side of the differential fuzzer: a long-lived process in the pyspark venv, driven by JSON lines.

    <java venv python> tests/differential/java_side.py --warehouse DIR --jars A.jar[,B.jar]

One SparkSession (a Hadoop catalog in DIR, -Diceberg.scan.plan-in-worker-pool=false: tests/conformance/
generate.py's start_spark) serves a whole run. Each request is one JSON line on stdin; each answer one line
on stdout, prefixed with PREFIX (Spark and the JVM may print there too):

    {"cmd": "apply", "table": T, "op": {...}}   apply one history op (sql.py): {"ok": true} or
                                                {"ok": false, "error": "<first line of Spark's refusal>"}
    {"cmd": "table", "table": T}                {"metadata_location": ..., "snapshots": N}
    {"cmd": "plan", "table": T, "request": R}   {"request": R with its snapshot resolved, "answer": Java's}
                                                or {"invalid": why} when R's snapshot symbols do not resolve
    {"cmd": "read", "table": T, "request": R,   Spark + Iceberg's read of a planned request (spark_reads.py):
     "grouping": bool, "rows": {...} or None}   {"grouping": {"groups": [{"key", "tasks"}]} or {"error"},
                                                 "rows": {"columns", "rows"} or {"error"},
                                                 "restricted": {"columns", "rows"} or {"error"}} (each if
                                                 asked: "restricted" when "rows" has a "restricted" query;
                                                 an error as "<Java class>: <message>" of its root cause)
    {"cmd": "drop", "table": T}                 forget the table and delete its files
    {"cmd": "quit"}

A request R is a conformance case (tests/conformance/cases.py: snapshot, options, filter, case_sensitive,
with_schema) plus "select" (column names or None). Java's answer is generate.plan()'s shape without the
scan report: its exception, or planFiles() and planTasks() in order (task_json), plus "schema_ids": every
field id of the scan's projected schema (or {"error": ...} when scan.schema() throws after planning). Each
request is planned twice on freshly loaded tables; the two answers must agree. A read's grouping keys are
generate.task_groups' (each value JSON as generate._plain writes it, a binary one as upper-case hex); its
rows are sorted, each value in read_cases.plain_value's form (structs as objects, maps as sorted pairs).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import traceback
from pathlib import Path
from typing import Any

from py4j.java_gateway import JavaObject
from py4j.protocol import Py4JJavaError
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql.types import ArrayType, DataType, MapType, StructType, TimestampType

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "conformance"))

from generate import (  # noqa: E402
    PRESERVE_GROUPING,
    _plain,
    java_exception,
    java_iter,
    new_scan,
    resolve_snapshot,
    start_spark,
    task_json,
)
from read_cases import plain_value  # noqa: E402
from reference_tables import Writer  # noqa: E402
from spark_reads import RESTRICTED_VIEW, SPARK_OPTIONS  # noqa: E402
from sql import CATALOG, NAMESPACE, ident, statements  # noqa: E402

PREFIX = "@@differential "
BUCKETING = "spark.sql.sources.v2.bucketing.enabled"
_REFUSALS = (Py4JJavaError, CapturedException, ValueError, TypeError, KeyError, RuntimeError)


class JavaSide:
    def __init__(self, writer: Writer, warehouse: Path) -> None:
        self.writer = writer
        self.jvm = writer.jvm
        self.warehouse = warehouse
        self.writer.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NAMESPACE}")

    def apply(self, table: str, op: dict[str, Any]) -> dict[str, Any]:
        try:
            self._apply(table, op)
        except _REFUSALS as err:
            return {"ok": False, "error": _first_line(err)}
        finally:
            self.writer.spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
        return {"ok": True}

    def _apply(self, table: str, op: dict[str, Any]) -> None:
        kind = op["op"]
        t = ident(table)
        if kind == "create_branch":
            as_of = ""
            if op["as_of"] is not None:
                snapshot = resolve_snapshot(self.writer.load(table), {"kind": "id", "value": op["as_of"]})
                as_of = f" AS OF VERSION {snapshot['value']}"
            self.writer.sql(f"ALTER TABLE {t} CREATE BRANCH `{op['name']}`{as_of}")
        elif kind == "expire_snapshots":
            now = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
            self.writer.sql(
                f"CALL {CATALOG}.system.expire_snapshots(table => '{NAMESPACE}.{table}', "
                f"older_than => TIMESTAMP '{now:%Y-%m-%d %H:%M:%S.%f}', retain_last => {op['retain_last']})"
            )
        elif kind == "equality_delete":
            spec_id = self.writer.load(table).spec().specId()
            self.writer.commit_equality_deletes(table, spec_id, [op["column"]], [[v] for v in op["values"]])
        else:
            for statement in statements(op, table):
                self.writer.sql(statement)

    def table(self, table: str) -> dict[str, Any]:
        loaded = self.writer.load(table)
        return {
            "metadata_location": loaded.operations().current().metadataFileLocation(),
            "snapshots": len(list(java_iter(loaded.snapshots()))),
        }

    def plan(self, table: str, request: dict[str, Any]) -> dict[str, Any]:
        try:
            resolved = {**request, "snapshot": resolve_snapshot(self.writer.load(table), request["snapshot"])}
        except (ValueError, AttributeError, *_REFUSALS) as err:  # a symbol this history cannot resolve
            return {"invalid": _first_line(err)}
        answers = [self._plan(self.writer.load(table), resolved) for _ in range(2)]
        if answers[0] != answers[1]:
            raise RuntimeError(f"Java planned {request} differently on a second run")
        return {"request": resolved, "answer": answers[0]}

    def _plan(self, table: Any, request: dict[str, Any]) -> dict[str, Any]:
        jvm = self.jvm
        try:
            scan = new_scan(jvm, table, request)
            if request.get("select") is not None:
                columns = jvm.java.util.ArrayList()
                for column in request["select"]:
                    columns.add(column)
                scan = scan.select(columns)
            files = [task_json(jvm, t) for t in _drain(scan.planFiles())]
            tasks = [[task_json(jvm, t) for t in java_iter(c.files())] for c in _drain(scan.planTasks())]
        except (Py4JJavaError, CapturedException) as err:
            return {"error": _error(err), "files": [], "tasks": []}
        for task in (*files, *(t for c in tasks for t in c)):
            task.pop("stats")
        try:  # the projection (BaseScan.lazyColumnProjection binds the filter to the scan's own schema)
            ids: Any = sorted(int(i) for i in jvm.org.apache.iceberg.types.TypeUtil.indexById(scan.schema().asStruct()))
        except (Py4JJavaError, CapturedException) as err:
            ids = {"error": _error(err)}
        return {"error": None, "files": files, "tasks": tasks, "schema_ids": ids}

    def read(self, table: str, request: dict[str, Any], grouping: bool, rows: dict[str, Any] | None) -> dict[str, Any]:
        """Spark + Iceberg's reads of a resolved request: its task groups (unfiltered), its rows, and its rows
        under a principal's read restriction (spark_reads.restricted_query's SQL)."""
        out: dict[str, Any] = {}
        if grouping:
            out["grouping"] = self._refused_or(lambda: {"groups": self._groups(table, request)})
        if rows is not None:
            out["rows"] = self._refused_or(lambda: self._rows(table, request, rows["filter"], rows["select"]))
        if rows is not None and rows.get("restricted") is not None:  # (absent from reads recorded before)
            out["restricted"] = self._refused_or(lambda: self._restricted_rows(table, request, rows["restricted"]))
        return out

    def _refused_or(self, read: Any) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = read()
        except _REFUSALS as err:
            return {"error": _root_cause(err)}
        return answer

    def _reader(self, table: str, snapshot: dict[str, Any]) -> Any:
        """spark.read of the request's snapshot (generate.spark_read's options; a ref as a branch or tag)."""
        reader = self.writer.spark.read.format("iceberg")
        kind, value = snapshot["kind"], snapshot.get("value")
        if kind == "ref":  # (a ref the table lacks, as a shrunk history may: read as a branch, which Spark refuses)
            ref = self.writer.load(table).refs().get(value)
            kind = "branch" if ref is None or ref.isBranch() else "tag"
        option = {"id": "snapshot-id", "as_of": "as-of-timestamp", "branch": "branch", "tag": "tag"}.get(kind)
        return reader if option is None else reader.option(option, str(value))

    def _groups(self, table: str, request: dict[str, Any]) -> list[dict[str, Any]]:
        """generate.task_groups for one read: each input partition's grouping key and (path, start, length)s."""
        spark, jvm = self.writer.spark, self.jvm
        any_class = jvm.java.lang.Class.forName("java.lang.Object")
        spark.conf.set(PRESERVE_GROUPING, "true")
        spark.conf.set(BUCKETING, "true")
        try:
            reader = self._reader(table, request["snapshot"])
            for key, value in (request.get("options") or {}).items():
                reader = reader.option(SPARK_OPTIONS.get(key, key), value)
            df = reader.load(ident(table))
            scan = df._jdf.queryExecution().executedPlan().collectLeaves().head()
            if scan.getClass().getSimpleName() != "BatchScanExec":  # nothing to read (an empty relation)
                return []
            groups = []
            for partition in scan.batch().planInputPartitions():
                group = partition.taskGroup()
                key = group.groupingKey()
                groups.append(
                    {
                        "key": None
                        if key is None
                        else [self._key_value(key.get(i, any_class)) for i in range(key.size())],
                        "tasks": [[t.file().location(), t.start(), t.length()] for t in java_iter(group.tasks())],
                    }
                )
            return groups
        finally:
            spark.conf.unset(PRESERVE_GROUPING)
            spark.conf.unset(BUCKETING)

    def _key_value(self, value: Any) -> Any:
        if isinstance(value, JavaObject) and value.getClass().getName().startswith("java.nio."):
            return bytes(self.jvm.org.apache.iceberg.util.ByteBuffers.toByteArray(value)).hex().upper()
        return _plain(value)

    def _rows(self, table: str, request: dict[str, Any], where: str | None, select: list[str] | None) -> dict[str, Any]:
        df = self._reader(table, request["snapshot"]).load(ident(table))
        if where is not None:
            df = df.where(where)
        if select is not None:
            df = df.select(*select)
        return _collected(df)

    def _restricted_rows(self, table: str, request: dict[str, Any], query: str) -> dict[str, Any]:
        """The rows of `query`, SQL over RESTRICTED_VIEW: a temporary view of the request's snapshot."""
        spark = self.writer.spark
        if spark.conf.get("spark.sql.session.timeZone") != "UTC":  # (generate.start_spark sets it)
            raise RuntimeError("the restricted read truncates timestamps in the session's zone, which is not UTC")
        self._reader(table, request["snapshot"]).load(ident(table)).createOrReplaceTempView(RESTRICTED_VIEW)
        try:
            return _collected(spark.sql(query))
        finally:
            spark.catalog.dropTempView(RESTRICTED_VIEW)

    def drop(self, table: str) -> dict[str, Any]:
        self.writer.sql(f"DROP TABLE IF EXISTS {ident(table)}")
        shutil.rmtree(self.warehouse / NAMESPACE / table, ignore_errors=True)
        return {}


def _drain(closeable: Any) -> list[Any]:
    """generate.drain, but an exception thrown by next() is raised as Java's (py4j's iterator turns it into
    StopIteration): Java's DeleteFileIndex, say, throws while it finds a data file's deletes."""
    iterator = closeable.iterator()
    next_member = JavaObject.__getattr__(iterator, "next")  # the Java method, not py4j's Python next()
    try:
        out = []
        while iterator.hasNext():
            out.append(next_member())
        return out
    finally:
        closeable.close()


def _collected(df: Any) -> dict[str, Any]:
    """A DataFrame's rows: {"columns": names, "rows": each row's plain values, sorted}."""
    fields = df.schema.fields
    rows = [[_plain_row_value(v, f.dataType) for v, f in zip(row, fields, strict=True)] for row in df.collect()]
    return {"columns": [f.name for f in fields], "rows": sorted(rows, key=json.dumps)}


def _plain_row_value(value: Any, type_: DataType) -> Any:
    """A collected value as plain JSON: read_cases.plain_value's forms, a struct as an object, a map as its
    [key, value] pairs sorted."""
    if value is None:
        return None
    if isinstance(type_, StructType):
        return {f.name: _plain_row_value(v, f.dataType) for v, f in zip(value, type_.fields, strict=True)}
    if isinstance(type_, ArrayType):
        return [_plain_row_value(v, type_.elementType) for v in value]
    if isinstance(type_, MapType):
        pairs = [[_plain_row_value(k, type_.keyType), _plain_row_value(v, type_.valueType)] for k, v in value.items()]
        return sorted(pairs, key=json.dumps)
    return plain_value(value, utc_wall_clock=isinstance(type_, TimestampType))


def _error(err: Py4JJavaError | CapturedException) -> dict[str, Any]:
    exc = java_exception(err)
    return {"class": exc.getClass().getName(), "message": exc.getMessage()}


def _root_cause(err: BaseException) -> str:
    """A refused read as "<class>: <message>" of the Java exception at the bottom of its causes (Spark wraps
    Iceberg's), else its first line."""
    exc = java_exception(err) if isinstance(err, Py4JJavaError | CapturedException) else None
    if exc is None:
        return _first_line(err)
    while exc.getCause() is not None and not exc.getCause().equals(exc):
        exc = exc.getCause()
    return f"{exc.getClass().getName()}: {exc.getMessage()}".splitlines()[0][:500]


def _first_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0][:500]


def reply(message: dict[str, Any]) -> None:
    sys.stdout.write(PREFIX + json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warehouse", type=Path, required=True)
    parser.add_argument("--jars", required=True, help="comma-separated jars")
    args = parser.parse_args()
    args.warehouse.mkdir(parents=True, exist_ok=True)
    spark = start_spark(args.jars.split(","), args.warehouse)
    side = JavaSide(Writer(spark), args.warehouse)
    reply({"ready": spark.version, "iceberg": side.jvm.org.apache.iceberg.IcebergBuild.version()})
    try:
        for line in sys.stdin:
            message = json.loads(line)
            cmd = message["cmd"]
            if cmd == "quit":
                break
            try:
                if cmd == "apply":
                    reply(side.apply(message["table"], message["op"]))
                elif cmd == "table":
                    reply(side.table(message["table"]))
                elif cmd == "plan":
                    reply(side.plan(message["table"], message["request"]))
                elif cmd == "read":
                    reply(side.read(message["table"], message["request"], message["grouping"], message["rows"]))
                elif cmd == "drop":
                    reply(side.drop(message["table"]))
                else:
                    reply({"failed": f"unknown command {cmd!r}"})
            except Exception:  # the driver sees what broke and decides; the session stays up
                reply({"failed": traceback.format_exc()[-3000:]})
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
    {"cmd": "drop", "table": T}                 forget the table and delete its files
    {"cmd": "quit"}

A request R is a conformance case (tests/conformance/cases.py: snapshot, options, filter, case_sensitive,
with_schema) plus "select" (column names or None). Java's answer is generate.plan()'s shape without the
scan report: its exception, or planFiles() and planTasks() in order (task_json), plus "schema_ids": every
field id of the scan's projected schema (or {"error": ...} when scan.schema() throws after planning). Each
request is planned twice on freshly loaded tables; the two answers must agree.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "conformance"))

from generate import java_exception, java_iter, new_scan, resolve_snapshot, start_spark, task_json  # noqa: E402
from reference_tables import Writer  # noqa: E402
from sql import CATALOG, NAMESPACE, ident, statements  # noqa: E402

PREFIX = "@@differential "
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


def _error(err: Py4JJavaError | CapturedException) -> dict[str, Any]:
    exc = java_exception(err)
    return {"class": exc.getClass().getName(), "message": exc.getMessage()}


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

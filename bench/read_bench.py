"""The read benchmark: the same scans of real Iceberg tables by Spark + Iceberg Java and by plan_and_read.

    .venv/bin/python bench/read_bench.py [--engines iceberg,ours35,ours4] [--shapes narrow,wide,wide_mor,counts]
        [--repeat 3] [--rows N] [--out bench/results/reads.json] [--timeout 900] [--jvm-options arrow|default]

The tables (bench/make_read_table.py, built once and cached), written by Spark + Iceberg Java into one
Hadoop warehouse, 30 zstd Parquet files each (one a day, days(ts) partitions):
* narrow    bench.reads: 43.2 M rows of 7 flat columns, 2.29 GB;
* wide      bench.wide: 14.4 M rows of every common type (decimals, binary, date, timestamptz, struct, list,
            map, nullable strings), about 1.6 GB;
* wide_mor  bench.wide_mor: the same rows less a tenth, deleted by merge-on-read position deletes;
* counts    bench.counts: 6 M rows of 15 flat columns, measured by a count under a filter on an int and a
            double column that no statistics decide (only `selective/count`).
One run starts `scan-planner serve --warehouse` on loopback (bench/service.py), then each engine in its own
process, one after the other, with the same Spark settings (SPARK_CONF: local[2], driver memory 4g,
spark.sql.shuffle.partitions 2, UI off, UTC; --jvm-options: the Arrow flags of the PySpark guide's spark-submit, or
none, the same for every engine):

* iceberg  Spark 3.5 + Iceberg 1.10.2 (the venv of scripts/java_env.py): spark.table() through Iceberg's
           SparkCatalog over the same warehouse; Iceberg's vectorized Parquet reader in the JVM;
* ours35   plan_and_read on pyspark 3.5 (tests/spark_client/pyspark35_env.py's venv: the same Spark as
           `iceberg`, the fairest comparison);
* ours4    plan_and_read on pyspark 4.x (this venv).

Each engine times each shape's measurements (MEASUREMENTS), each once as a warm-up and then --repeat times
(the median is reported), each as a user of that engine would write it:
* full/noop        the whole table to Spark's `noop` sink, which reads every column of every row without
                   collecting anything to the driver;
* selective/noop   one day and one value of a string column (1 file of 30 planned, a tenth of its rows
                   match), to `noop`;
* selective/count  count(*) of the selective scan: Spark + Iceberg `df.where(f).count()`, ours
                   `aggregate(spark, table, ["count(*)"], filter=f)` (Spark cannot push a projection or
                   an aggregate into mapInArrow: aggregate() is how our users count);
* columns/noop     two columns of every row: Spark + Iceberg `.select(a, b)`, ours `plan_and_read(columns=
                   [a, b])`, to `noop`.
The time is the wall time from building the DataFrame (for ours: the /plan call and the RDD of tasks; for
Spark + Iceberg: the analysis) to the end of the action; CPU is the user + system time of the engine's
processes (driver, JVM, Python workers; not the service). Planning: for ours, the /plan call as the
client saw it and the service's own `planning-time-ms`; for Spark + Iceberg, Iceberg's "total planning
duration (ms)", the ScanReport metric of its BatchScan node (read from Spark's SQL status store after the
action). The rows an action delivered are read from the same store (the top plan node's "number of output
rows") or are the count; every run of every engine must deliver exactly the rows the generator put
there (<shape>.json), or the run fails (exit 1), as it does when a step fails or passes --timeout.

The results: a table on stdout, with ratios (Spark + Iceberg / ours: above 1, ours is faster), and
--out as JSON. About 15 minutes on 2 cores with the tables cached (plus about 10 to build them once).

`read_bench.py worker ENGINE ...` is one engine's process (started by the run, in that engine's venv);
it prints its samples as one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import BENCH, REPO, load_java_env, progress, write_json
from make_read_table import CATALOG, SHAPES, catalog_conf, parse_shapes, read_described, tables_dir
from plan_bench import BenchError, environment, run_json

MAKE_READ_TABLE = BENCH / "make_read_table.py"
ENGINES = ("iceberg", "ours35", "ours4")
LABELS = {"iceberg": "Spark + Iceberg Java", "ours35": "ours, pyspark 3.5", "ours4": "ours, pyspark 4"}
# (scan, action) by shape: the scan's filter, columns and rows come from <shape>.json's "scans"
_EVERY = (("full", "noop"), ("selective", "noop"), ("selective", "count"), ("columns", "noop"))
MEASUREMENTS = {
    "narrow": _EVERY,
    "wide": _EVERY,
    "wide_mor": (("full", "noop"), ("selective", "count")),
    "counts": (("selective", "count"),),
}
SPARK_CONF = {
    "spark.driver.memory": "4g",
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
}
MASTER = "local[2]"
# --jvm-options: the driver's (and, on a cluster, the executors') JVM options, the same for every engine.
# "arrow" switches off Arrow Java's null check in every get and its bounds checks, as the PySpark guide's Spark
# setup does and Iceberg's own benchmarks do; "default" leaves them on.
JVM_OPTIONS = {
    "arrow": "-Darrow.enable_null_check_for_get=false -Darrow.enable_unsafe_memory_access=true",
    "default": "",
}
SPARK_ENV_DROP = ("SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "PYSPARK_DRIVER_PYTHON", "PYSPARK_PYTHON")

Sample = dict[str, Any]


def key(shape: str, scan: str, action: str) -> str:
    return f"{shape} {scan}/{action}"


# === The worker: one engine in its own process ============================================================


def start_spark(engine: str, warehouse: str, jars: list[str], jvm_options: str = "arrow") -> Any:
    """A local SparkSession with SPARK_CONF and JVM_OPTIONS[jvm_options]; for `iceberg`, Iceberg's runtime and
    the warehouse's catalog."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable  # the Python workers: this venv (pyarrow, spark_client)
    builder = SparkSession.builder.master(MASTER).appName(f"read_bench {engine}")
    conf = dict(SPARK_CONF)
    if JVM_OPTIONS[jvm_options]:
        conf["spark.driver.extraJavaOptions"] = conf["spark.executor.extraJavaOptions"] = JVM_OPTIONS[jvm_options]
    if engine == "iceberg":
        conf["spark.jars"] = ",".join(jars)
        conf.update(catalog_conf(Path(warehouse)))
    for name, value in conf.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _number(text: str) -> float:
    return float(text.replace(",", "").split()[0])


def last_execution(spark: Any, after: int, timeout: float = 30.0) -> tuple[int, list[tuple[str, dict[str, float]]]]:
    """The newest SQL execution with an id above `after`, once complete: its plan nodes (top-down) with their
    numeric metrics. Spark's SQL status store keeps these whether or not the UI runs."""
    store = spark._jsparkSession.sharedState().statusStore()
    deadline = time.monotonic() + timeout
    while True:
        executions = store.executionsList()
        newest = executions.apply(executions.length() - 1) if executions.length() else None
        if newest is not None and newest.executionId() > after and newest.completionTime().isDefined():
            execution_id = int(newest.executionId())
            values = store.executionMetrics(execution_id)
            if values.size() > 0:
                break
        if time.monotonic() > deadline:
            raise BenchError(f"no completed SQL execution after #{after} within {timeout:.0f}s")
        time.sleep(0.05)
    nodes = store.planGraph(execution_id).allNodes()
    out = []
    for node in sorted((nodes.apply(i) for i in range(nodes.length())), key=lambda n: int(n.id())):
        metrics = {}
        for j in range(node.metrics().length()):
            metric = node.metrics().apply(j)
            value = values.get(metric.accumulatorId())
            if value.isDefined():
                with contextlib.suppress(ValueError):  # e.g. a timing's "total (min, med, max ...)" text
                    metrics[str(metric.name())] = _number(str(value.get()))
        out.append((str(node.name()), metrics))
    return execution_id, out


def newest_execution_id(spark: Any) -> int:
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    return int(executions.apply(executions.length() - 1).executionId()) if executions.length() else -1


OUTPUT_ROWS = "number of output rows"
ICEBERG_PLANNING = "total planning duration (ms)"
ICEBERG_FILES = "number of result data files"
ICEBERG_SPLITS = "number of file splits read"


def tree_cpu_seconds() -> float:
    """CPU time (user + system) of this process and its descendants (the JVM, Spark's Python workers), and of
    the children they have reaped; from /proc. The machine may be shared: this is the work, whatever the wait."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()  # from field 3 (state); the name may hold spaces
        parents[int(entry.name)] = int(fields[1])
        ticks[int(entry.name)] = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    tree, todo = set(), [os.getpid()]
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo.extend(child for child, parent in parents.items() if parent == pid and child not in tree)
    return sum(ticks.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


def run_once(spark: Any, run: Callable[[], int | None], planning: Callable[[], dict[str, Any]]) -> Sample:
    """Build the DataFrame and run the action (`run`: the count it returned, or None for noop), timed; then
    what it delivered and planned, from the status store."""
    before = newest_execution_id(spark)
    cpu_before = tree_cpu_seconds()
    started = time.perf_counter()
    counted = run()
    wall_ms = (time.perf_counter() - started) * 1000
    cpu_s = tree_cpu_seconds() - cpu_before
    _, nodes = last_execution(spark, before)
    delivered = next((m[OUTPUT_ROWS] for _, m in nodes if OUTPUT_ROWS in m), None)
    sample: Sample = {
        "wall_ms": wall_ms,
        "cpu_s": cpu_s,
        "rows": counted if counted is not None else (int(delivered) if delivered is not None else -1),
    }
    scans = [m for name, m in nodes if name.startswith("BatchScan")]
    if scans:  # Iceberg's own scan metrics
        sample["planning_ms"] = scans[0].get(ICEBERG_PLANNING)
        sample["data_files"] = scans[0].get(ICEBERG_FILES)
        sample["file_ranges"] = scans[0].get(ICEBERG_SPLITS)
    sample.update(planning())
    return sample


def _noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def _timed_client(url: str) -> Any:
    """A PlannerClient that remembers its last /plan: the client-side time and the service's metrics."""
    from spark_client import PlannerClient

    class TimedClient(PlannerClient):
        last: dict[str, Any] = {}

        def plan(self, body: Any) -> dict[str, Any]:
            started = time.perf_counter()
            plan: dict[str, Any] = super().plan(body)
            metrics = plan.get("metrics", {})
            self.last = {
                "plan_client_ms": (time.perf_counter() - started) * 1000,
                "planning_ms": metrics.get("planning-time-ms"),
                "data_files": metrics.get("scanned-data-files"),
                "tasks": plan["task-count"],  # inline plans list their splits; others are fetched by index
                "file_ranges": sum(len(task["splits"]) for task in plan["tasks"]) if "tasks" in plan else None,
            }
            return plan

    return TimedClient(url, timeout=300.0)


def actions(spark: Any, engine: str, scan: dict[str, Any], table: str, action: str, client: Any) -> Callable[[], Any]:
    """One measurement as a user of `engine` writes it: build the DataFrame, run the action; the count or None."""
    row_filter, columns = scan["filter"], scan["columns"]
    if engine == "iceberg":

        def frame() -> Any:
            df = spark.table(f"{CATALOG}.{table}")
            df = df if row_filter is None else df.where(row_filter)
            return df if columns is None else df.select(*columns)

        if action == "count":
            return lambda: int(frame().count())
        return lambda: _noop(frame())

    from spark_client import aggregate, plan_and_read

    if action == "count":
        return lambda: int(aggregate(spark, table, ["count(*)"], filter=row_filter, client=client).collect()[0][0])
    return lambda: _noop(plan_and_read(spark, table, filter=row_filter, columns=columns, client=client))


def worker(args: argparse.Namespace) -> int:
    """One engine: every measurement of every shape, a warm-up and then --repeat timed runs; one JSON line."""
    tables = json.loads(Path(args.tables_json).read_text())
    engine = args.engine
    started = time.monotonic()
    warehouse = next(iter(tables.values()))["warehouse"]
    spark = start_spark(engine, warehouse, args.jars.split(",") if args.jars else [], args.jvm_options)
    progress(engine, f"Spark {spark.version} up in {time.monotonic() - started:.1f}s")
    client = None if engine == "iceberg" else _timed_client(args.service_url)

    def planning() -> dict[str, Any]:
        if client is None:
            return {}
        last, client.last = dict(client.last), {}  # aggregate() answered from metadata plans nothing
        return last

    results: dict[str, Any] = {}
    try:
        for shape, described in tables.items():
            for scan, action in MEASUREMENTS[shape]:
                name = key(shape, scan, action)
                run = actions(spark, engine, described["scans"][scan], described["table"], action, client)
                warm_up = run_once(spark, run, planning)
                progress(engine, f"{name}: warm-up {warm_up['wall_ms'] / 1000:.2f} s, {warm_up['rows']:,} rows")
                runs = []
                for i in range(args.repeat):
                    runs.append(run_once(spark, run, planning))
                    progress(engine, f"{name}: run {i + 1}/{args.repeat} {runs[-1]['wall_ms'] / 1000:.2f} s")
                results[name] = {"warm_up": warm_up, "runs": runs}
    finally:
        if client is not None:
            client.close()
    versions = {"spark": spark.version, "python": sys.version.split()[0]}
    for package in ("pyarrow", "pandas", "numpy"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[package] = importlib.metadata.version(package)
    if engine == "iceberg":
        versions["iceberg"] = str(spark._jvm.org.apache.iceberg.IcebergBuild.version())
        versions["java"] = str(spark._jvm.java.lang.System.getProperty("java.version"))
    spark.stop()
    print(json.dumps({"engine": engine, "versions": versions, "measurements": results}))
    return 0


# === The run: the table, the service, each engine, the checks and the report ==============================


def spark_environment(java_home: str, pythonpath: str | None) -> dict[str, str]:
    """Ours, minus settings that point pyspark at another Spark or Python; Java; loopback only."""
    env = {k: v for k, v in os.environ.items() if k not in SPARK_ENV_DROP and not k.startswith("SCAN_PLANNER_")}
    env.update({"JAVA_HOME": java_home, "SPARK_LOCAL_IP": "127.0.0.1"})
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, os.environ.get("PYTHONPATH")) if p)
    return env


def ensure_tables(shapes: list[str], rows: int | None, java: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Each shape's description; make_read_table.py builds the missing tables first (minutes), then they are cached."""
    directory = tables_dir(rows)
    if all(read_described(directory, shape) is not None for shape in shapes):
        return {shape: read_described(directory, shape) for shape in shapes}
    progress("read-bench", f"building the tables {', '.join(shapes)} (minutes); cached afterwards")
    cmd = [str(java["python"]), str(MAKE_READ_TABLE), "--shapes", ",".join(shapes), "--jars", ",".join(java["jars"])]
    cmd += ["--rows", str(rows)] if rows else []
    return run_json("make_read_table", cmd, spark_environment(str(java["java_home"]), None), timeout)


def engine_command(
    engine: str, java: dict[str, Any], tables_json: Path, url: str, args: argparse.Namespace
) -> list[str]:
    """The worker's command line, in the engine's venv."""
    if engine == "iceberg":
        python = str(java["python"])
    elif engine == "ours35":
        sys.path.insert(0, str(REPO))
        from tests.spark_client.pyspark35_env import ensure_pyspark35_env

        python = str(ensure_pyspark35_env().python)
    else:
        python = sys.executable
    cmd = [python, str(Path(__file__).resolve()), "worker", engine, "--tables-json", str(tables_json)]
    cmd += ["--service-url", url, "--repeat", str(args.repeat), "--jars", ",".join(java["jars"])]
    cmd += ["--jvm-options", args.jvm_options]
    return cmd


def run_engines(args: argparse.Namespace, java: dict[str, Any], tables: dict[str, Any]) -> dict[str, Any]:
    """The service on loopback over the tables' warehouse, then each engine's worker, one after the other."""
    import tempfile

    from service import served

    warehouse = next(iter(tables.values()))["warehouse"]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="read-bench-") as directory:
        tables_json = Path(directory) / "tables.json"
        tables_json.write_text(json.dumps(tables))
        config = Path(directory) / "service.toml"
        config.write_text(f"allowed_roots = [{json.dumps(warehouse)}]\n")
        with served(["--warehouse", warehouse, "--config", str(config)], REPO) as service:
            progress("read-bench", f"service up at {service.url} over {warehouse}")
            for engine in args.engines:
                progress("read-bench", f"=== {LABELS[engine]}")
                cmd = engine_command(engine, java, tables_json, service.url, args)
                pythonpath = None if engine == "iceberg" else str(REPO)
                env = spark_environment(str(java["java_home"]), pythonpath)
                results[engine] = run_json(engine, cmd, env, args.timeout)
                results[engine]["service_peak_rss_bytes"] = service.peak_rss_bytes()
    return results


def summarize(tables: dict[str, Any], results: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Medians per engine and measurement, ratios to Spark + Iceberg, and every disagreement on row counts."""
    problems = []
    summary: dict[str, Any] = {}
    for engine, result in results.items():
        for shape, scan, action in ((t, *m) for t in tables for m in MEASUREMENTS[t]):
            name = key(shape, scan, action)
            expected = tables[shape]["scans"][scan]["rows"]
            measured = result["measurements"][name]
            seen = sorted({s["rows"] for s in [measured["warm_up"], *measured["runs"]]})
            if seen != [expected]:
                problems.append(f"{LABELS[engine]}, {name}: delivered {seen} rows, the table holds {expected:,}")
            runs = measured["runs"]
            wall = statistics.median(s["wall_ms"] for s in runs)
            planning = [s["planning_ms"] for s in runs if s.get("planning_ms") is not None]
            entry = {
                "median_wall_ms": wall,
                "wall_ms": [s["wall_ms"] for s in runs],
                "warm_up_ms": measured["warm_up"]["wall_ms"],
                "median_cpu_s": statistics.median(s["cpu_s"] for s in runs),
                "rows": expected,
                "rows_per_s": expected / (wall / 1000),
                "median_planning_ms": statistics.median(planning) if planning else None,
            }
            clients = [s["plan_client_ms"] for s in runs if "plan_client_ms" in s]
            if clients:
                entry["median_plan_client_ms"] = statistics.median(clients)
            planned = runs[-1]
            entry["data_files"] = planned.get("data_files")
            entry["file_ranges"] = planned.get("file_ranges")
            if "tasks" in planned:
                entry["tasks"] = planned["tasks"]
            summary.setdefault(name, {})[engine] = entry
    for engines in summary.values():
        if "iceberg" in engines:
            theirs = engines["iceberg"]["median_wall_ms"]
            for engine, entry in engines.items():
                if engine != "iceberg":
                    entry["ratio_iceberg_over_ours"] = theirs / entry["median_wall_ms"]
                    cpu = engines["iceberg"]["median_cpu_s"]
                    entry["cpu_ratio_iceberg_over_ours"] = (
                        cpu / entry["median_cpu_s"] if entry["median_cpu_s"] else None
                    )
    return summary, problems


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:,.2f} s" if value >= 1000 else f"{value:,.0f} ms"


def _load(report: dict[str, Any], when: str) -> str:
    return "/".join(f"{x:.1f}" for x in report["machine"][f"load_average_at_{when}"])


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _rate(rows_per_s: float) -> str:
    return f"{rows_per_s / 1e6:,.2f} M/s" if rows_per_s >= 1e6 else f"{rows_per_s / 1e3:,.0f} k/s"


def _planning(entry: dict[str, Any]) -> str:
    if "median_plan_client_ms" in entry:  # ours: the /plan call (client) and the service's planning
        return f"{_ms(entry['median_plan_client_ms'])} ({_ms(entry['median_planning_ms'])})"
    return _ms(entry["median_planning_ms"])


def render(report: dict[str, Any]) -> str:
    """The table of medians and the ratios, as printed."""
    tables, summary = report["tables"], report["summary"]
    engines = [e for e in ENGINES if e in report["results"]]
    versions = {e: report["results"][e]["versions"]["spark"] for e in engines}
    lines = [
        f"Reads on {MASTER}, driver 4g, JVM options '{report['settings'].get('jvm_options', '')}'; median of "
        f"{report['settings']['repeat']} after a warm-up; "
        f"{report['date']}, {report['machine']['cpus']} CPUs; load average {_load(report, 'start')} at the start, "
        f"{_load(report, 'end')} at the end",
    ]
    for shape, table in tables.items():
        deletes = f", {table['delete_files']} delete files ({table['deleted_rows']:,} rows)"
        deletes = deletes if table["delete_files"] else ""
        lines.append(
            f"  {shape}: {table['table']}, {table['rows']:,} rows, {len(table['columns'])} columns, "
            f"{table['data_files']} files, {table['data_bytes'] / 1e9:.2f} GB zstd Parquet, "
            f"{table['row_groups']['total']} row groups{deletes}; selective = {table['scans']['selective']['filter']}; "
            f"columns = {', '.join(table['scans']['columns']['columns'])}"
        )
    lines += [
        "",
        f"{'scan / action':26} {'engine':32} {'wall':>9} {'CPU':>8} {'rows/s':>9} {'planning':>18} {'share':>6} "
        f"{'files/ranges':>12} {'rows':>12}",
    ]
    for name, by_engine in summary.items():
        for i, engine in enumerate(engines):
            entry = by_engine[engine]
            planning = (
                entry["median_plan_client_ms"] if "median_plan_client_ms" in entry else entry["median_planning_ms"]
            )
            share = f"{planning / entry['median_wall_ms']:.1%}" if planning is not None else "-"
            label = f"{LABELS[engine]} ({versions[engine]})"
            lines.append(
                f"{name if i == 0 else '':26} {label:32} {_ms(entry['median_wall_ms']):>9} "
                f"{entry['median_cpu_s']:>6.1f} s {_rate(entry['rows_per_s']):>9} {_planning(entry):>18} {share:>6} "
                f"{_count(entry['data_files']) + '/' + _count(entry['file_ranges']):>12} {entry['rows']:>12,}"
            )
    ours = [e for e in engines if e != "iceberg"]
    if "iceberg" in engines and ours:
        lines += [
            "",
            f"{'Spark + Iceberg / ours':26} " + " ".join(f"{LABELS[e] + ': wall':>24} {'CPU':>6}" for e in ours),
        ]
        for name, by_engine in summary.items():
            cells = [
                (by_engine[e]["ratio_iceberg_over_ours"], by_engine[e]["cpu_ratio_iceberg_over_ours"]) for e in ours
            ]
            lines.append(f"{name:26} " + " ".join(f"{wall:>23.2f}x {cpu or 0:>5.2f}x" for wall, cpu in cells))
    lines += [
        "",
        "planning: ours = the /plan call seen by the client (the service's planning-time-ms); Spark + Iceberg = "
        "Iceberg's total planning duration (ScanReport, planFiles()); share = planning / wall",
        "CPU = user + system seconds of the engine's processes (driver, JVM, Python workers; not the service); "
        "files/ranges = data files and file ranges (splits) read",
        "count: Spark + Iceberg df.where(f).count(); ours aggregate(spark, t, ['count(*)'], filter=f)",
    ]
    return "\n".join(lines)


def _engines(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in ENGINES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown engines {unknown} (choose from {', '.join(ENGINES)})")
    return names


def main_run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    report: dict[str, Any] = environment(REPO)
    java_env = load_java_env()
    try:
        env = java_env.ensure_java_env()
        tables = ensure_tables(args.shapes, args.rows, env, args.timeout)
        results = run_engines(args, env, tables)
    except (BenchError, java_env.JavaEnvError, RuntimeError) as err:
        print(f"[read-bench] error: {err}", file=sys.stderr)
        return 1
    summary, problems = summarize(tables, results)
    report["machine"]["load_average_at_end"] = os.getloadavg()
    report.update(
        {
            "settings": {
                "repeat": args.repeat,
                "engines": list(args.engines),
                "shapes": list(args.shapes),
                "master": MASTER,
                "spark_conf": SPARK_CONF,
                "jvm_options": JVM_OPTIONS[args.jvm_options],
            },
            "tables": tables,
            "results": results,
            "summary": summary,
            "problems": problems,
            "elapsed_s": time.monotonic() - started,
        }
    )
    write_json(args.out, report)
    print(render(report), flush=True)
    progress("read-bench", f"done in {report['elapsed_s']:.0f}s; results in {args.out}")
    for problem in problems:
        print(f"[read-bench] MISMATCH: {problem}", file=sys.stderr)
    return 1 if problems else 0


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        parser = argparse.ArgumentParser(prog="read_bench.py worker", description="one engine's measurements")
        parser.add_argument("worker")
        parser.add_argument("engine", choices=ENGINES)
        parser.add_argument("--tables-json", required=True)
        parser.add_argument("--service-url", required=True)
        parser.add_argument("--repeat", type=int, default=3)
        parser.add_argument("--jars", default="")
        parser.add_argument("--jvm-options", choices=sorted(JVM_OPTIONS), default="arrow")
        return worker(parser.parse_args())
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", type=_engines, default=ENGINES, help=f"of {','.join(ENGINES)} (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs after the warm-up (default 3)")
    shapes = ",".join(SHAPES)
    parser.add_argument("--shapes", type=parse_shapes, default=list(SHAPES), help=f"of {shapes} (default: all)")
    parser.add_argument("--rows", type=int, help="rows of every table (default: each shape's own, see make_read_table)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds each step may take (default 900)")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "reads.json", help="the JSON results")
    parser.add_argument(
        "--jvm-options",
        choices=sorted(JVM_OPTIONS),
        default="arrow",
        help="every engine's JVM options: arrow (default: Arrow's null and bounds checks off, as the PySpark guide "
        "sets them) or default",
    )
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return main_run(args)


if __name__ == "__main__":
    sys.exit(main())

"""The planning benchmark: ours vs Iceberg Java 1.10.2 planTasks() vs PyIceberg 0.12 plan_files().

    .venv/bin/python bench/plan_bench.py [--scenarios full,ids,days] [--repeat 5] [--files 200000 --manifests 400]

Plans scans of one metadata-only table (bench/make_table.py builds and caches it), one scenario after the
other (bench/scenarios.py): `full` (no filter), `ids` (an id range selecting 1% of the files by their
column bounds; every manifest is read) and `days` (a ts range whose partition summaries rule out all but
a few manifests). Each scenario's filter is one REST JSON expression given to every implementation, and
each implementation plans each scenario in its own fresh process, one after the other:

* ours        bench/py_plan.py ours       ScanPlanner.plan(ScanRequest(row_filter=expression_from_json(f)))
* java        bench/java_plan.py          table.newScan().filter(ExpressionParser.fromJson(f)).planTasks()
* java_no_pool                            the same with -Diceberg.scan.plan-in-worker-pool=false
* pyiceberg   bench/py_plan.py pyiceberg  StaticTable.from_metadata().scan(row_filter=...).plan_files()

"cold" is the first plan in the process (imports, JIT, caches all cold; the OS page cache is warm),
"warm" the median of --repeat further plans in the same process (fewer, but at least one, once they
have taken --budget seconds: PyIceberg's). Only the planning call is timed, not the process start or
the table load. Memory is each process's peak RSS (for Java, the JVM's), read after the cold plan and
at the end of the run. The default run takes 4-5 minutes on 2 cores.

The runs must agree, per scenario: every one plans the data files the scenario selects (table.json says
how many), ours reads only the manifests the filter cannot rule out, and ours forms exactly as many
CombinedScanTasks as Java without its worker pool (with the pool, Java's manifest order and so its task
count varies from plan to plan). Otherwise the exit status is 1. The results go to --out as JSON
(default bench/results/latest.json) and to stdout as one table per scenario and a summary of ratios.
With --table-only it builds the table (or finds it cached), prints its table.json and stops; --shape mixed
plans the table of several writers (bench/make_table.py).
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from common import BENCH, REPO, SHAPES, load_java_env, progress, read_marker, table_dir, write_json
from report import ratios, render
from scenarios import NAMES, Scenario, parse_names, scenarios

PY_PLAN, JAVA_PLAN, MAKE_TABLE = BENCH / "py_plan.py", BENCH / "java_plan.py", BENCH / "make_table.py"


class BenchError(RuntimeError):
    """A step of the benchmark failed; the message says which and how."""


def run_json(name: str, cmd: list[str], env: dict[str, str], timeout: float) -> dict[str, Any]:
    """Run a step whose last stdout line is JSON; its stderr (progress) goes straight on to ours, and a failure
    names the step's last error line (an OutOfMemoryError, say) besides its command."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out: list[str] = []
    errors: collections.deque[str] = collections.deque(maxlen=200)

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            sys.stderr.write(line)
            errors.append(line)

    threads = [threading.Thread(target=pump, daemon=True)]
    threads.append(threading.Thread(target=lambda: out.append(proc.stdout.read() if proc.stdout else ""), daemon=True))
    for thread in threads:
        thread.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise BenchError(f"{name} took more than {timeout:.0f}s (--timeout): {' '.join(cmd)}") from None
    for thread in threads:
        thread.join(30)
    stdout = "".join(out).strip()
    if proc.returncode != 0 or not stdout:
        lines = [line.strip() for line in reversed(errors)]
        why = next((line for line in lines if "OutOfMemoryError" in line or "maxResultSize" in line), None)
        why = why or next((line for line in lines if "Error" in line or "Exception" in line), "")
        raise BenchError(f"{name} failed (exit {proc.returncode}){': ' + why if why else ''}: {' '.join(cmd)}")
    result: dict[str, Any] = json.loads(stdout.splitlines()[-1])
    return result


def java_environment(java_home: str) -> dict[str, str]:
    """Ours, minus settings that would point pyspark at another Spark or other submit arguments."""
    drop = {"SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "JAVA_HOME": java_home}


def python_environment(src: Path) -> dict[str, str]:
    """Ours, with `src` first on the path, so that py_plan.py imports that checkout's planner_service."""
    path = os.pathsep.join(p for p in (str(src), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def ensure_table(args: argparse.Namespace, java: dict[str, Any]) -> dict[str, Any]:
    """The table's table.json; make_table.py builds the table first if it is not cached (under a lock)."""
    shape = getattr(args, "shape", "uniform")
    described = read_marker(table_dir(args.files, args.manifests, shape))
    if described is None:
        progress("bench", f"building the table ({args.files} files, {args.manifests} manifests); cached afterwards")
        cmd = [java["python"], str(MAKE_TABLE), "--files", str(args.files), "--manifests", str(args.manifests)]
        cmd += ["--shape", shape]
        described = run_json("make_table", [*cmd, "--jars", ",".join(java["jars"])], java["env"], args.timeout)
    return described


def plan_all(
    args: argparse.Namespace, java: dict[str, Any], location: str, scenario: Scenario
) -> dict[str, dict[str, Any]]:
    """Each implementation in its own process, one at a time (they would compete for the cores)."""
    common = ["--metadata-location", location, "--repeat", str(args.repeat), "--budget", str(args.budget)]
    if scenario.filter_json is not None:
        common += ["--filter-json", json.dumps(scenario.filter_json)]
    java_cmd = [java["python"], str(JAVA_PLAN), *common, "--jars", ",".join(java["jars"])]
    python_env = python_environment(args.src.resolve())
    runs = {
        "ours": ([sys.executable, str(PY_PLAN), "ours", *common], python_env),
        "java": (java_cmd, java["env"]),
        "java_no_pool": ([*java_cmd, "--no-worker-pool"], java["env"]),
        "pyiceberg": ([sys.executable, str(PY_PLAN), "pyiceberg", *common], python_env),
    }
    results = {}
    for name, (cmd, env) in runs.items():
        progress("bench", f"--- {scenario.name}: {name}")
        results[name] = run_json(f"{scenario.name}: {name}", cmd, env, args.timeout)
    return results


def check(scenario: Scenario, results: dict[str, dict[str, Any]]) -> list[str]:
    """What the implementations disagree on, with each other or with the table (empty if nothing)."""
    problems = [
        f"{name} planned {r['files']:,} data files, the scenario selects {scenario.expected_files:,}"
        for name, r in results.items()
        if r["files"] != scenario.expected_files
    ]
    ours, java = results["ours"]["tasks"], results["java_no_pool"]["tasks"]
    if ours != java:
        problems.append(f"ours formed {ours:,} CombinedScanTasks, Java (no worker pool) {java:,}")
    read = results["ours"]["cold"]["manifests_read"]
    if read != scenario.expected_manifests:
        problems.append(f"ours read {read:,} data manifests, the filter keeps {scenario.expected_manifests:,}")
    return [f"{scenario.name}: {p}" for p in problems]


def run_scenarios(args: argparse.Namespace, java: dict[str, Any], table: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every chosen scenario, planned by every implementation, checked as soon as it is done."""
    out = {}
    for name in args.scenarios:
        scenario = scenarios(table)[name]
        progress("bench", f"=== scenario {name}: {scenario.title}")
        results = plan_all(args, java, table["metadata_location"], scenario)
        problems = check(scenario, results)
        for problem in problems:
            print(f"[bench] MISMATCH: {problem}", file=sys.stderr, flush=True)
        out[name] = {
            "title": scenario.title,
            "filter_json": scenario.filter_json,
            "expected_files": scenario.expected_files,
            "expected_manifests": scenario.expected_manifests,
            "results": results,
            "ratios": ratios(results),
            "problems": problems,
        }
    return out


def _git(src: Path, *args: str) -> str | None:
    proc = subprocess.run(["git", "-C", str(src), *args], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _proc_field(path: str, name: str) -> str:
    """The value of `name: value` in a /proc file such as /proc/cpuinfo ("" if absent)."""
    lines = Path(path).read_text().splitlines()
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith(name)), "")


def environment(src: Path) -> dict[str, Any]:
    """When, where and on which planner_service the benchmark runs."""
    memory_kb = _proc_field("/proc/meminfo", "MemTotal").split()
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "cpu": _proc_field("/proc/cpuinfo", "model name"),
            "memory_bytes": int(memory_kb[0]) * 1024 if memory_kb else None,
            "platform": platform.platform(),
            "load_average_at_start": os.getloadavg(),
        },
        "source": {
            "dir": str(src),
            "commit": _git(src, "rev-parse", "HEAD"),
            "planner_service_modified": bool(_git(src, "status", "--porcelain", "--", "planner_service")),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200_000, help="data files of the table (default 200000)")
    parser.add_argument("--manifests", type=int, default=400, help="data manifests of the table (default 400)")
    parser.add_argument("--scenarios", default=",".join(NAMES), help=f"comma-separated (default {','.join(NAMES)})")
    parser.add_argument("--repeat", type=int, default=5, help="warm plans per implementation (default 5)")
    parser.add_argument("--budget", type=float, default=30.0, help="fewer warm plans past this (default 30 s)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds each step may take (default 600)")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "latest.json", help="the JSON results")
    parser.add_argument("--src", type=Path, default=REPO, help="checkout whose planner_service to time (default: this)")
    parser.add_argument(
        "--table-only", action="store_true", help="build the table (or find it cached), print its table.json, stop"
    )
    parser.add_argument("--shape", choices=SHAPES, default="uniform", help="make_table.py's --shape (default uniform)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    try:
        args.scenarios = parse_names(args.scenarios)
    except ValueError as err:
        parser.error(str(err))
    started = time.monotonic()
    report: dict[str, Any] = environment(args.src.resolve())
    java_env = load_java_env()
    try:
        env = java_env.ensure_java_env()
        java = {**env, "env": java_environment(env["java_home"])}
        table = ensure_table(args, java)
        if args.table_only:
            print(json.dumps(table), flush=True)
            return 0
        results = run_scenarios(args, java, table)
    except (BenchError, java_env.JavaEnvError) as err:
        print(f"[bench] error: {err}", file=sys.stderr)
        return 1
    problems = [p for scenario in results.values() for p in scenario["problems"]]
    report["machine"]["load_average_at_end"] = os.getloadavg()
    report.update(
        {
            "settings": {"repeat": args.repeat, "budget_s": args.budget, "scenarios": args.scenarios},
            "table": table,
            "scenarios": results,
            "problems": problems,
            "elapsed_s": time.monotonic() - started,
        }
    )
    write_json(args.out, report)
    print(render(report), flush=True)
    progress("bench", f"done in {report['elapsed_s']:.0f}s; results in {args.out}")
    for problem in problems:
        print(f"[bench] MISMATCH: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

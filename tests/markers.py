"""What each test needs, as pytest markers, so that a run can leave out what is slow or absent:

- `java`: Iceberg Java (the conformance tables, built once with a JVM and cached, or a JVM of its own);
- `spark`: a SparkSession (pyspark 4 here, or pyspark 3.5 in a subprocess);
- `services`: real services on loopback (the planner under uvicorn, moto, the GCS and Azure emulators,
  PostgreSQL, a second planner as an upstream REST catalog), which take seconds to start and to fail;
- `long`: long budgets, which CI runs and a quick local run leaves out: the benchmarks' smoke tests (by
  module) and fuzzing at its full budget (marked where the budget is set, beside the small budget every
  run has).

`pytest -m "not java and not spark and not services and not long"` is the unit suite: every package's rules,
in seconds, with no JDK, no Spark and no server; `pytest -m "not long"` is the quick run. Markers come from a
test's fixtures and helpers (what they start, read from their source: a call that starts a service, or one
that builds Iceberg Java's answers or a Spark environment, directly or through one another) and, for what
starts a JVM by itself or runs long, from its module. With SCAN_PLANNER_TEST_TIER=unit (scripts/test.sh
--unit) a test that reaches for a JVM anyway fails, naming the marker it lacks (tests/conftest.py).
"""

from __future__ import annotations

import ast
import inspect
import os
import re
from collections.abc import MutableMapping
from functools import cache
from pathlib import Path

import pytest

JAVA_FIXTURES = {"conformance"}  # Iceberg Java's tables and recorded plans
SPARK_FIXTURES = {"spark"}
SPARK_REST_MODULES = {"test_spark_rest.py", "test_spark_rest_older.py", "test_spark_rest_more.py"}
BENCH_MODULES = {
    "test_bench_smoke.py",
    "test_scale_bench_smoke.py",
    "test_read_bench_smoke.py",
    "test_past_the_budget.py",
}
FIRST_HOUR = "test_first_hour.py"  # a fresh install as another user, then a Spark read: minutes
CONTAINER = "test_container.py"  # the image and the compose stack built and run with podman: minutes
JAVA_MODULES = {
    *BENCH_MODULES,
    FIRST_HOUR,
    "test_pyspark35.py",
    *SPARK_REST_MODULES,
    "test_iceberg_rest_server.py",
}  # start a JVM of their own
SPARK_MODULES = {
    *BENCH_MODULES,
    FIRST_HOUR,
    "test_pyspark35.py",
    *SPARK_REST_MODULES,
    "test_spark_environments.py",
    "test_doc_examples.py",
}
LONG_MODULES = {*BENCH_MODULES, FIRST_HOUR, CONTAINER}  # the benchmarks at a tiny size; a first hour; images
STARTS_A_SERVICE = ("running_service(", "emulator(", "moto_server(", "Popen(", "subprocess.run(", "HTTPServer(")
NEEDS_JAVA = ("load_or_build(", "reference.generate(", "ensure_spark_env(", "ensure_jars(")  # a JVM, Maven


NO_JVM = """#!/bin/sh
echo "the unit tier starts no JVM, but a test ran $(basename "$0"): mark it java (tests/markers.py)" >&2
exit 97
"""


def forbid_jvm(env: MutableMapping[str, str], shims: Path) -> None:
    """`java` and `mvn` in `env`'s PATH fail loudly (scripts in `shims`, first on PATH), and no JAVA_HOME
    leads past them."""
    for command in ("java", "mvn"):
        (shims / command).write_text(NO_JVM)
        (shims / command).chmod(0o755)
    env.pop("JAVA_HOME", None)
    env["PATH"] = f"{shims}{os.pathsep}{env.get('PATH', '')}"


def mark(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        module = item.path.name
        source = _source(item)
        java, java_fixtures = _starters(item.path, NEEDS_JAVA)
        if fixtures & (JAVA_FIXTURES | java_fixtures) or module in JAVA_MODULES or _calls(source, NEEDS_JAVA, java):
            item.add_marker(pytest.mark.java)
        if fixtures & SPARK_FIXTURES or module in SPARK_MODULES:
            item.add_marker(pytest.mark.spark)
        if module in LONG_MODULES:
            item.add_marker(pytest.mark.long)
        starters, service_fixtures = _starters(item.path, STARTS_A_SERVICE)
        if fixtures & service_fixtures or _calls(source, STARTS_A_SERVICE, starters):
            item.add_marker(pytest.mark.services)


def _source(item: pytest.Item) -> str:
    function = getattr(item, "function", None)
    try:
        return inspect.getsource(function) if function is not None else ""
    except (OSError, TypeError):
        return ""


def _calls(source: str, calls: tuple[str, ...], starters: frozenset[str]) -> bool:
    return any(call in source for call in calls) or any(
        re.search(rf"\b{re.escape(name)}\(", source) for name in starters
    )


@cache
def _starters(test_module: Path, calls: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str]]:
    """The functions visible to a test module (its own, its conftest files' and the test helpers it imports)
    that make one of `calls`, directly or through one another; and which of them are fixtures."""
    functions: dict[str, tuple[str, bool]] = {}  # name -> (source, is a fixture)
    for path in (test_module, *_conftests(test_module), *_helpers(test_module)):
        text = path.read_text()
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.FunctionDef):
                functions[node.name] = (ast.get_source_segment(text, node) or "", _is_fixture(node))
    starters: frozenset[str] = frozenset()
    while True:  # until no more functions are found to call a starter
        found = frozenset(name for name, (body, _) in functions.items() if _calls(body, calls, starters))
        if found == starters:
            return starters, frozenset(name for name in starters if functions[name][1])
        starters = found


def _helpers(test_module: Path) -> list[Path]:
    """The modules of tests/ that a test module imports (`from tests.x.y import ...`)."""
    root = Path(__file__).resolve().parent.parent
    out = []
    for node in ast.walk(ast.parse(test_module.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tests":
            path = root.joinpath(*node.module.split(".")).with_suffix(".py")
            if path.exists():
                out.append(path)
    return out


def _conftests(test_module: Path) -> list[Path]:
    tests = Path(__file__).resolve().parent
    found, folder = [], test_module.resolve().parent
    while tests in (folder, *folder.parents):
        if (folder / "conftest.py").exists():
            found.append(folder / "conftest.py")
        folder = folder.parent
    return found


def _is_fixture(node: ast.FunctionDef) -> bool:
    return any("fixture" in ast.unparse(decorator) for decorator in node.decorator_list)

"""What each test needs, as pytest markers, so that a run can leave out what is slow or absent:

- `java`: Iceberg Java (the conformance tables, built once with a JVM and cached, or a JVM of its own);
- `spark`: a SparkSession (pyspark 4 here, or pyspark 3.5 in a subprocess);
- `services`: real services on loopback (the planner under uvicorn, moto, the GCS and Azure emulators,
  PostgreSQL, a second planner as an upstream REST catalog), which take seconds to start and to fail.

`pytest -m "not java and not spark and not services"` is the unit suite: every package's rules, in seconds,
with no JDK, no Spark and no server. Markers come from a test's fixtures (what they start, read from their
source) and, for what starts a JVM by itself, from its module.
"""

from __future__ import annotations

import ast
import inspect
from functools import cache
from pathlib import Path

import pytest

JAVA_FIXTURES = {"conformance"}  # Iceberg Java's tables and recorded plans
SPARK_FIXTURES = {"spark"}
JAVA_MODULES = {"test_bench_smoke.py", "test_pyspark35.py"}  # start a JVM of their own
SPARK_MODULES = {"test_bench_smoke.py", "test_pyspark35.py", "test_spark_environments.py", "test_readme_pyspark.py"}
STARTS_A_SERVICE = ("running_service(", "emulator(", "Popen(", "subprocess.run(", "ThreadingHTTPServer(")


def mark(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        module = item.path.name
        if fixtures & JAVA_FIXTURES or module in JAVA_MODULES:
            item.add_marker(pytest.mark.java)
        if fixtures & SPARK_FIXTURES or module in SPARK_MODULES:
            item.add_marker(pytest.mark.spark)
        if fixtures & _service_fixtures(item.path) or _starts_a_service(item):
            item.add_marker(pytest.mark.services)


def _starts_a_service(item: pytest.Item) -> bool:
    function = getattr(item, "function", None)
    try:
        source = inspect.getsource(function) if function is not None else ""
    except (OSError, TypeError):
        return False
    return any(call in source for call in STARTS_A_SERVICE)


@cache
def _service_fixtures(test_module: Path) -> frozenset[str]:
    """The fixtures visible to a test module (its own and its conftest files') that start a service."""
    names: set[str] = set()
    for path in (test_module, *_conftests(test_module)):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and _is_fixture(node):
                body = ast.get_source_segment(path.read_text(), node) or ""
                if any(call in body for call in STARTS_A_SERVICE):
                    names.add(node.name)
    return frozenset(names)


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

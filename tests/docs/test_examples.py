"""Every code example of the README and the site runs as printed, or says why not and which test checks what
it shows: shell examples against a demo service (curl answering 2xx, `scan-planner` exiting 0), TOML
examples as settings the service accepts, JSON examples as JSON. The Python examples run in a Spark session
(tests/spark_client/test_doc_examples.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from planner_service.settings import Settings
from tests.docs.examples import PROSE, REPO, RUNNABLE, Example, all_examples, for_service, runnable

# every curl of an example must succeed (a 4xx or 5xx fails it), and its shell stops at the first failure
_PRELUDE = """set -euo pipefail
curl() { command curl --fail-with-body "$@"; }
"""
# ... or, for an example that shows errors, each answer must be a 4xx (never a 5xx, never a success)
_ERRORS_PRELUDE = """set -euo pipefail
curl() {
  local out status
  out=$(command curl -w '\\n%{http_code}' "$@")
  status=${out##*$'\\n'}
  [[ $status == 4?? ]] || { echo "answered $status, not a 4xx" >&2; return 1; }
  printf '%s\\n' "${out%$'\\n'*}"
}
"""


def test_every_block_has_a_language() -> None:
    unlabelled = [e.where for e in all_examples() if e.language not in RUNNABLE | PROSE]
    assert unlabelled == [], f"give these blocks a language ({sorted(RUNNABLE | PROSE)}; text for output)"


def test_an_example_not_run_names_the_test_that_checks_it() -> None:
    for example in all_examples():
        if example.not_run is None:
            continue
        assert example.language in RUNNABLE, f"{example.where}: only runnable blocks are marked not run"
        named = example.checked_by + [p for p in ("scripts/test.sh",) if p in example.not_run]
        assert named, f"{example.where}: say which test (tests/...py) checks what it shows"
        missing = [path for path in named if not (REPO / path).exists()]
        assert missing == [], f"{example.where} names tests that are not there: {missing}"


def test_the_toml_examples_are_settings_the_service_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("SCAN_PLANNER_"):
            monkeypatch.delenv(name)
    examples = runnable("toml")
    assert examples, "the site has settings examples"
    for example in (e for page in examples.values() for e in page):
        data = tomllib.loads(example.code)
        Settings(**data)  # every key known, every value of its shape (a ValidationError names it)


def test_the_json_examples_parse() -> None:
    for example in (e for page in runnable("json").values() for e in page):
        json.loads(example.code)


def _shell_pages() -> list[object]:
    params: list[object] = []
    for page, examples in runnable("bash").items():
        spark = any("spark-submit" in e.code for e in examples)
        params.append(pytest.param(page, id=page, marks=[pytest.mark.spark] if spark else []))
    return params


@pytest.mark.skipif(shutil.which("jq") is None, reason="the examples pipe answers through jq")
@pytest.mark.parametrize("page", _shell_pages())
def test_the_shell_examples_run(page: str, demo_service: str, demo_home: Path) -> None:
    for example in runnable("bash")[page]:
        _run_shell(example, demo_service, demo_home)


def _run_shell(example: Example, url: str, home: Path) -> None:
    """As a user runs it: in the checkout, the venv not activated (nothing of it on PATH: an example names
    `.venv/bin/...`), no Spark or planner settings of the test's own."""
    venv = str(Path(sys.executable).parent)
    drop = {"SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "PYSPARK_DRIVER_PYTHON", "PYSPARK_PYTHON"}
    drop |= {"VIRTUAL_ENV"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("SCAN_PLANNER_")}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and os.path.realpath(p) != os.path.realpath(venv)]
    env.update(PATH=os.pathsep.join(path), SCAN_PLANNER_HOME=str(home))
    prelude = _ERRORS_PRELUDE if example.shows_errors else _PRELUDE
    script = prelude + for_service(example.code, url, home)
    run = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{example.where} failed:\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
    if example.shows_errors:  # every answer was a 4xx (the prelude checks), and it said why
        assert run.stdout.strip(), f"{example.where} printed nothing:\n{run.stderr}"
    if "spark-submit" in example.code:  # what the PySpark guide says the job prints, and what it leaves
        assert re.search(r"demo\.events: \d+ partitions \(one per planned task\), 300 rows", run.stdout), run.stdout
        assert "Arrow Java checks" not in run.stderr  # the example sets the Arrow JVM options
        assert (REPO / "dist" / "spark_client.zip").exists() and list((REPO / "dist").glob("scan_planner-*.whl"))

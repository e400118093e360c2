"""The Python examples of the README and the site run as printed against the demo service, page by page in
this process's Spark session (each page's examples in one namespace, as a reader runs them in order); and the
first read of the README and Get started as a user runs it: a script run by the venv's python by its path,
no venv activated, a `python3` without pyarrow first on PATH."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

from tests.docs.examples import REPO, for_service, runnable

pytest.importorskip("pyspark")


@pytest.mark.parametrize("page", sorted(runnable("python")))
def test_the_python_examples_run(
    page: str, spark: Any, demo_service: str, demo_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCAN_PLANNER_URL", demo_service)  # (as the README's shell exports it)
    namespace: dict[str, Any] = {}
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            for example in runnable("python")[page]:
                code = for_service(example.code, demo_service, demo_home)
                exec(compile(code, example.where, "exec"), namespace)
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    if "spark" in namespace:
        assert namespace["spark"] is spark  # getOrCreate() found the session
    _check_what_it_printed(page, out.getvalue())


def _check_what_it_printed(page: str, printed: str) -> None:
    """What the guides say their examples print, where they say it."""
    flat = printed.replace(" ", "")
    if page == "docs/guides/pyspark.md":
        assert "|id|amount|" in flat
        assert re.search(r"^300 \d+$", printed, re.MULTILINE)  # the tag's rows; the small splits' partitions
        assert "|count(*)|min(id)|max(ts)|" in flat  # aggregate's one row
        scanned = re.search(r"^tasks [1-9]\d* eu rows (\d+)\nread (\d+)$", printed, re.MULTILINE)  # a Scan, twice
        assert scanned and scanned[1] == scanned[2] and int(scanned[1]) > 0, printed
        assert "BatchScan scan-planner" in printed and not re.search(r"\bFilter\b", printed)
        assert printed.strip().splitlines()[-1] == "34 1"  # eu ids below 100, one task
    if page in ("README.md", "docs/get-started.md"):
        assert re.search(r"^\d+ rows in [1-9]\d* partitions$", printed, re.MULTILINE), printed


@pytest.mark.parametrize("page", ["README.md", "docs/get-started.md"])
def test_the_first_read_runs_as_a_user_runs_it(page: str, demo_service: str, demo_home: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare"  # the system's python3 as a fresh machine has it: no pyarrow, no pandas
    venv.EnvBuilder(with_pip=False).create(bare)
    script = tmp_path / "first_read.py"
    script.write_text("\n".join(for_service(e.code, demo_service, demo_home) for e in runnable("python")[page]))
    drop = {"SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "PYSPARK_DRIVER_PYTHON", "PYSPARK_PYTHON"}
    env = {k: v for k, v in os.environ.items() if k not in drop and k != "VIRTUAL_ENV"}
    env["PATH"] = f"{bare / 'bin'}:{env.get('PATH', '')}"
    env["SCAN_PLANNER_URL"] = demo_service  # (as the README's shell exports it)
    python = Path(sys.executable).parent / "python"  # .venv/bin/python, as the README says
    run = subprocess.run([str(python), str(script)], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    _check_what_it_printed(page, run.stdout)

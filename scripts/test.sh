#!/usr/bin/env bash
# Run every check: lint (ruff), types (mypy), then the whole test suite (pytest).
# Installs what it needs first; the Iceberg Java reference tables are built once and cached
# under ${SCAN_PLANNER_CACHE:-~/.cache/scan-planner}.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "[test] ruff" >&2
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "[test] mypy" >&2
.venv/bin/mypy
echo "[test] pytest" >&2
.venv/bin/python -m pytest "$@"

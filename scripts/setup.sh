#!/usr/bin/env bash
# Create (or update) the project's virtual environment at .venv with the service, client and dev tools.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PYTHON --version)" >&2
  "$PYTHON" -m venv .venv
fi
# the compiled loops (planner_service/csrc) are built by pip: they need a C compiler and Python's headers
if ! command -v cc >/dev/null 2>&1; then
  echo "[setup] installing a C compiler (gcc): pip builds planner_service/csrc" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev >/dev/null
fi
if ! "$PYTHON" -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  echo "[setup] installing Python's headers (python3-dev): pip builds planner_service/csrc" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-dev >/dev/null
fi
stamp=.venv/.installed-$(cat pyproject.toml planner_service/csrc/* | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "[setup] installing scan-planner and dev tools into .venv" >&2
  .venv/bin/python -m pip install --quiet --upgrade pip 2>/dev/null || true
  log=$(mktemp)
  if ! .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]' >"$log" 2>&1; then
    cat "$log" >&2
    echo "[setup] pip install failed: check that PyPI is reachable, then run scripts/setup.sh again" >&2
    exit 1
  fi
  rm -f "$log"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
if ! command -v java >/dev/null 2>&1; then
  echo "[setup] installing Java 17 (needed by the Iceberg Java conformance suite)" >&2
  apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  echo "[setup] installing PostgreSQL (the SQL-catalog tests run a server on loopback)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
if ! command -v haproxy >/dev/null 2>&1 && [ ! -x /usr/sbin/haproxy ]; then
  echo "[setup] installing HAProxy (the replica tests run two services behind it on loopback)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null
fi
if ! command -v chromedriver >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1; then
  echo "[setup] installing Chromium and chromium-driver (the plan explorer's tests run the page in it)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi
if ! command -v go >/dev/null 2>&1; then
  # tests/clients builds a reader against iceberg-go; go.mod's toolchain comes from the Go module proxy
  echo "[setup] installing Go (the iceberg-go client of the tests is built with it)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null
fi
if ! command -v mvn >/dev/null 2>&1; then
  echo "[setup] installing Maven (scripts/java_env.py fetches Iceberg's jars from Maven Central with it)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven >/dev/null
fi
AZURITE_VERSION=3.37.0  # Azure's storage emulator (npm), for the Azure tests on loopback
if [ ! -x .venv/azurite/node_modules/.bin/azurite-blob ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "[setup] installing Node.js and npm (Azurite, the Azure storage emulator of the tests)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  fi
  echo "[setup] installing Azurite $AZURITE_VERSION into .venv/azurite" >&2
  npm install --silent --no-audit --no-fund --prefix .venv/azurite "azurite@$AZURITE_VERSION" >/dev/null
fi
OIDC_PROVIDER_VERSION=8.8.1  # panva's OpenID Connect provider (npm), the token issuer of the tests (tests/oidc)
if ! grep -qs "\"version\": \"$OIDC_PROVIDER_VERSION\"" .venv/oidc-provider/node_modules/oidc-provider/package.json; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "[setup] installing Node.js and npm (oidc-provider, the OpenID Connect provider of the tests)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  fi
  echo "[setup] installing oidc-provider $OIDC_PROVIDER_VERSION into .venv/oidc-provider" >&2
  npm install --silent --no-audit --no-fund --prefix .venv/oidc-provider "oidc-provider@$OIDC_PROVIDER_VERSION" >/dev/null
fi
echo "[setup] ready: .venv/bin/scan-planner" >&2

#!/usr/bin/env bash
# What a test tier needs beside scripts/setup.sh's (scripts/test.sh runs this first):
#   bash scripts/setup_tests.sh unit    the dev tools in .venv (pytest, ruff, mypy, ...): nothing of the system
#   bash scripts/setup_tests.sh quick   also Java 17 and Maven (Iceberg Java, its jars), PostgreSQL, HAProxy,
#                                       Chromium, Go and Node.js with Azurite and oidc-provider
#   bash scripts/setup_tests.sh all     the same as quick (the long tier adds benchmarks, no new tool)
# Debian packages need root (scripts/system_packages.sh waits for a package lock another apt holds).
set -euo pipefail
cd "$(dirname "$0")/.."
tier=${1:-all}
SCAN_PLANNER_EXTRAS=dev bash scripts/setup.sh
[ "$tier" = unit ] && exit 0
source scripts/system_packages.sh
if ! command -v java >/dev/null 2>&1; then
  apt_install "the Iceberg Java conformance suite" openjdk-17-jre-headless
fi
if ! command -v mvn >/dev/null 2>&1; then
  apt_install "scripts/java_env.py fetches Iceberg's jars from Maven Central with it" maven
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  apt_install "the SQL-catalog tests run a server on loopback" postgresql
fi
if ! command -v haproxy >/dev/null 2>&1 && [ ! -x /usr/sbin/haproxy ]; then
  apt_install "the replica tests run two services behind it on loopback" haproxy
fi
if ! command -v chromedriver >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1; then
  apt_install "the plan explorer's tests run the page in it" chromium chromium-driver
fi
if ! command -v go >/dev/null 2>&1; then
  # tests/clients builds a reader against iceberg-go; go.mod's toolchain comes from the Go module proxy
  apt_install "the iceberg-go client of the tests is built with it" golang-go
fi
npm_tool() {  # npm_tool DIR PACKAGE VERSION WHY
  if grep -qs "\"version\": \"$3\"" "$1/node_modules/$2/package.json"; then
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    apt_install "$4" nodejs npm
  fi
  echo "[setup] installing $2 $3 into $1 ($4)" >&2
  npm install --silent --no-audit --no-fund --prefix "$1" "$2@$3" >/dev/null
}
npm_tool .venv/azurite azurite 3.37.0 "Azure's storage emulator of the Azure tests"
npm_tool .venv/oidc-provider oidc-provider 8.8.1 "the OpenID Connect provider of the tests (tests/oidc)"
echo "[setup] the $tier tier's tools are ready" >&2

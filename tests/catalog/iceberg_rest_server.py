"""Apache Iceberg's own REST catalog server, for tests: RESTCatalogServer from iceberg-open-api's test fixtures
(the server of Iceberg's REST compatibility kit and of the apache/iceberg-rest-fixture image), run as a JVM on a
free port with the jars that scripts/java_env.py resolves from Maven Central.

Behind it is a JDBC catalog on a SQLite file of its own (removed afterwards) with HadoopFileIO on the local file
system, over the warehouse directory given; it asks for no authentication. It is configured only through
environment variables: CATALOG_<PROPERTY> sets a catalog property (`__` reads as `-`, `_` as `.`), and the port
is CATALOG_REST_PORT (the property `rest.port`; a bare REST_PORT is not read).

Jetty listens on every interface (RESTCatalogServer has no host setting), so other machines can reach it while
it runs; the tests speak to it on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.conformance.reference import load_java_env
from tests.processes import free_port, stop, wait_for_port

START_TIMEOUT = 60.0  # the JVM starts in 2-3 s; the first run also resolves the jars (about a minute)
JVM_OPTIONS = ("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")  # a small, fast-starting JVM


class IcebergRestServerError(RuntimeError):
    """Iceberg's REST catalog server could not be set up or started; the message names the step."""


@contextlib.contextmanager
def iceberg_rest_server(warehouse: Path, iceberg: str | None = None) -> Iterator[str]:
    """Iceberg's REST catalog server over `warehouse` (created if missing) while the block runs; yields its
    base URI (http://127.0.0.1:<port>, the REST paths under /v1). `iceberg` picks the release (by default
    java_env.REST_SERVER_ICEBERG)."""
    java_env = load_java_env()
    try:
        java_home = str(java_env.ensure_java())
        release = iceberg or str(java_env.REST_SERVER_ICEBERG)
        classpath = [str(jar) for jar in java_env.rest_catalog_server_classpath(release)]
    except java_env.JavaEnvError as exc:
        raise IcebergRestServerError(f"setting up Java and the server's jars failed: {exc}") from None
    warehouse.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="iceberg-rest-server-") as scratch:
        log_path = Path(scratch) / "server.log"
        environment = {key: value for key, value in os.environ.items() if not key.startswith("CATALOG_")}
        environment.update(
            {
                "JAVA_HOME": java_home,
                "CATALOG_CATALOG__IMPL": "org.apache.iceberg.jdbc.JdbcCatalog",
                "CATALOG_URI": f"jdbc:sqlite:{Path(scratch) / 'catalog.db'}",
                "CATALOG_WAREHOUSE": warehouse.resolve().as_uri(),
                "CATALOG_IO__IMPL": "org.apache.iceberg.hadoop.HadoopFileIO",
                "CATALOG_REST_PORT": str(port),
            }
        )
        command = [
            str(Path(java_home) / "bin" / "java"),
            *JVM_OPTIONS,
            "-cp",
            os.pathsep.join(classpath),
            java_env.REST_SERVER_MAIN,
        ]
        with open(log_path, "wb") as log:
            try:
                proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)
            except OSError as exc:
                raise IcebergRestServerError(f"starting the JVM ({command[0]}) failed: {exc}") from None
            try:
                uri = _await_start(proc, port, log_path)
                yield uri
            finally:
                stop(proc)


def _await_start(proc: subprocess.Popen[bytes], port: int, log_path: Path) -> str:
    """Wait until this JVM's Jetty has opened `port` (its log says so: Jetty sets SO_REUSEPORT, so a port
    that answers may be another process's), then until GET /v1/config answers; return the base URI."""
    deadline = time.monotonic() + START_TIMEOUT
    started = re.compile(rf"Started (?:oejs\.)?ServerConnector@\S+\{{.*\}}\{{.*:{port}\}}")

    def failure(step: str) -> IcebergRestServerError:
        tail = log_path.read_text(errors="replace")[-4000:]
        return IcebergRestServerError(f"Iceberg's REST catalog server on port {port}: {step}; its log:\n{tail}")

    while not started.search(log_path.read_text(errors="replace")):
        if proc.poll() is not None:
            raise failure(f"the JVM exited with {proc.returncode} before Jetty listened")
        if time.monotonic() > deadline:
            raise failure(f"Jetty did not report listening within {START_TIMEOUT:.0f}s")
        time.sleep(0.1)
    try:
        wait_for_port(port, proc, timeout=max(deadline - time.monotonic(), 1.0))
    except (RuntimeError, TimeoutError) as exc:
        raise failure(f"waiting for 127.0.0.1:{port} failed ({exc})") from None
    uri = f"http://127.0.0.1:{port}"
    try:
        answer = httpx.get(f"{uri}/v1/config", timeout=10)
        answer.raise_for_status()
        answer.json()["overrides"]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise failure(f"GET /v1/config did not answer a catalog configuration ({exc!r})") from None
    return uri


def _check(answer: httpx.Response, what: str) -> dict[str, Any]:
    if answer.is_error:
        raise IcebergRestServerError(f"{what}: HTTP {answer.status_code} {answer.text[:1000]}")
    body: dict[str, Any] = answer.json()
    return body


def create_namespace(uri: str, namespace: str) -> None:
    """Create a (one-level) namespace unless it exists."""
    answer = httpx.post(f"{uri}/v1/namespaces", json={"namespace": [namespace], "properties": {}}, timeout=30)
    if answer.status_code != 409:  # AlreadyExistsException
        _check(answer, f"creating namespace {namespace}")


def create_table(uri: str, namespace: str, name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Create an empty table (a metadata.json, no snapshot) through the server; its LoadTableResult."""
    return _check(
        httpx.post(f"{uri}/v1/namespaces/{namespace}/tables", json={"name": name, "schema": schema}, timeout=30),
        f"creating table {namespace}.{name}",
    )


def register_table(uri: str, namespace: str, name: str, metadata_location: str) -> dict[str, Any]:
    """Register an existing table's metadata.json (a path or URI the server's HadoopFileIO reads) as
    `namespace`.`name`, creating the namespace if missing: `POST /v1/namespaces/{namespace}/register`;
    its LoadTableResult."""
    create_namespace(uri, namespace)
    return _check(
        httpx.post(
            f"{uri}/v1/namespaces/{namespace}/register",
            json={"name": name, "metadata-location": metadata_location},
            timeout=30,
        ),
        f"registering {metadata_location} as {namespace}.{name}",
    )

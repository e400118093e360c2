"""Answers a slow client has not read yet hold memory, and the plans' memory budget counts it (issue 46): on a
real uvicorn, a client that asks for a whole plan and then stops reading keeps its answer's bytes in
`scan_planner_plan_memory_bytes{held_by="answers"}`, a second plan that does not fit beside them waits and
gets 503 with Retry-After (instead of adding to what the process holds until a container's limit kills it),
and once the first answer has been read to its end, whole and valid, the memory is free and plans run again.
A client that takes nothing for `send_timeout_seconds` is dropped and its answer's memory released.
bench/memory_limit_bench.py --slow-readers --uncompressed shows the same under a 400 MiB cgroup limit."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from tests.conftest import running_service

FILES = 2500
DEEP = "/".join(f"{k}-" + "d" * 190 for k in range(15))  # a table 3,000 characters deep: 9 MB of paths in
TABLE = "db.many"  # an answer, more than the sockets buffer (Linux autotunes a send buffer up to 4 MB)


@pytest.fixture(scope="module")
def many_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQL catalog with one table of FILES data files (PyIceberg: identity partitions of FILES ids) at a
    location DEEP below the warehouse."""
    root = tmp_path_factory.mktemp("many-files")
    catalog = SqlCatalog("many", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse")
    catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "name", StringType()))
    spec = PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "id"))
    table = catalog.create_table(TABLE, schema, location=f"file://{root}/warehouse/{DEEP}", partition_spec=spec)
    table.append(pa.table({"id": pa.array(range(FILES), pa.int64()), "name": [f"n{i}" for i in range(FILES)]}))
    return root


@contextlib.contextmanager
def _serving(many_files: Path, name: str, log_path: Path | None = None, **extra: object) -> Iterator[str]:
    config = many_files / f"{name}.json"
    settings = {
        "catalog_uri": str(many_files / "catalog.db"),
        "catalog_name": "many",
        "plan_memory_bytes": 2 * 1024 * 1024,  # less than a held answer of this table
        "plan_queue_seconds": 1,
        **extra,
    }
    config.write_text(json.dumps(settings))
    with running_service("--config", str(config), "--log-level", "warning", log_path=log_path) as url:
        yield url


@pytest.fixture(scope="module")
def service(many_files: Path) -> Iterator[str]:
    with _serving(many_files, "patient") as url:
        yield url


def _held_by(url: str, holder: str) -> float:
    text = httpx.get(f"{url}/metrics").text
    found = re.search(rf'scan_planner_plan_memory_bytes\{{held_by="{holder}"\}} (\S+)', text)
    assert found is not None, text[:500]
    return float(found.group(1))


def _slow_client(url: str, body: dict[str, object]) -> tuple[socket.socket, bytes]:
    """A connection that asks for `body`'s plan, uncompressed, and reads no more than the answer's start
    (returned)."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # (before connecting: a small window)
    sock.connect((host, int(port)))
    payload = json.dumps(body).encode()
    head = (
        f"POST /plan HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    )
    sock.sendall(head.encode() + b"Accept-Encoding: identity\r\nConnection: close\r\n\r\n" + payload)
    start = sock.recv(1024)
    assert start.startswith(b"HTTP/1.1 200"), start
    return sock, start


def _rest(sock: socket.socket, start: bytes) -> bytes:
    chunks = [start]
    while chunk := sock.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def test_an_unread_answer_holds_the_budget_until_it_is_read(service: str) -> None:
    assert _held_by(service, "answers") == 0
    slow, start = _slow_client(service, {"table": TABLE})
    try:
        deadline = time.monotonic() + 30
        while _held_by(service, "answers") == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        held = _held_by(service, "answers")
        assert held > FILES * 300, "the unread answer's plan and rendered chunks are counted"
        time.sleep(1)
        assert _held_by(service, "answers") == held, "still held: the client has not read it"

        waiting = httpx.post(f"{service}/plan", json={"table": TABLE, "filter": "id > 10"}, timeout=30)
        assert waiting.status_code == 503, waiting.text[:300]
        assert int(waiting.headers["Retry-After"]) >= 1
        assert "retry later" in waiting.json()["error"]["message"]

        answer = _rest(slow, start)
    finally:
        slow.close()
    head, body = answer.split(b"\r\n\r\n", 1)
    assert b"transfer-encoding: chunked" in head.lower()
    plan = json.loads(_dechunked(body))
    assert len(plan["files"]) == FILES
    deadline = time.monotonic() + 10
    while _held_by(service, "answers") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _held_by(service, "answers") == 0
    after = httpx.post(f"{service}/plan", json={"table": TABLE, "filter": "id > 10"}, timeout=30)
    assert after.status_code == 200, after.text[:300]


def test_a_client_gone_before_reading_releases_its_answer(service: str) -> None:
    slow, _ = _slow_client(service, {"table": TABLE, "filter": "id >= 0"})
    deadline = time.monotonic() + 30
    while _held_by(service, "answers") == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _held_by(service, "answers") > 0
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # (a reset)
    slow.close()
    deadline = time.monotonic() + 30
    while _held_by(service, "answers") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _held_by(service, "answers") == 0


def test_a_client_that_stops_reading_is_dropped(many_files: Path) -> None:
    log = many_files / "impatient.log"
    with _serving(many_files, "impatient", log_path=log, send_timeout_seconds=2) as url:
        slow, start = _slow_client(url, {"table": TABLE, "filter": "id >= 1"})
        try:
            began = time.monotonic()
            while _held_by(url, "answers") == 0 and time.monotonic() < began + 30:
                time.sleep(0.1)
            assert _held_by(url, "answers") > 0
            while _held_by(url, "answers") and time.monotonic() < began + 30:
                time.sleep(0.1)
            assert _held_by(url, "answers") == 0, "released without the client reading or going"
            assert time.monotonic() - began >= 1.5, "not before the client had send_timeout_seconds to read"
            try:
                answer = _rest(slow, start)
            except ConnectionResetError:
                answer = start
        finally:
            slow.close()
        assert b'"files"' not in answer[-100:] and not answer.endswith(b"0\r\n\r\n"), "the answer was cut"
        after = httpx.post(f"{url}/plan", json={"table": TABLE, "filter": "id > 10"}, timeout=30)
        assert after.status_code == 200, after.text[:300]
    dropped = [json.loads(line) for line in log.read_text().splitlines() if "stopped reading" in line]
    assert dropped and dropped[0]["send-timeout-seconds"] == 2 and dropped[0]["path"] == "/plan", log.read_text()


def _dechunked(body: bytes) -> bytes:
    """An HTTP/1.1 chunked body's content."""
    out: list[bytes] = []
    rest = body
    while True:
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            return b"".join(out)
        out.append(rest[:size])
        rest = rest[size + 2 :]

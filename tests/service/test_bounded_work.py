"""No input costs unbounded time or memory (issue 45), through a real service on loopback:

- a split size that would cut the plan's files into more ranges than its memory budget holds is refused
  before anything is cut (400, naming the option and the smallest size that fits); the ranges a split size
  makes are also weighed by admission (tests/api/test_admission.py);
- a lookback of Java's whole int range plans (packing is O(ranges log lookback), not quadratic);
- a client whose headers do not finish, drip a line at a time, or never start is answered 408 and cut off
  after header_timeout_seconds; a body dripping a byte at a time, after body_timeout_seconds, however short
  its gaps; past max_connections, 503; HAProxy in front refuses slow headers itself (timeout http-request).

Cancellation and the plan deadline inside the compiled loops: tests/splitting/test_bin_packing.py and
tests/splitting/test_splits.py."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.balancer import balanced
from tests.conformance.reference import Conformance
from tests.conftest import running_service

HEADER_SECONDS = 1.5
BODY_SECONDS = 1.5


@pytest.fixture(scope="module")
def tight_service(conformance: Conformance) -> Iterator[str]:
    """The service over the conformance tables with short deadlines, few connections and a small plan memory
    budget (8 KiB: 64 ranges beyond one a file)."""
    env = {
        "SCAN_PLANNER_HEADER_TIMEOUT_SECONDS": str(HEADER_SECONDS),
        "SCAN_PLANNER_BODY_TIMEOUT_SECONDS": str(BODY_SECONDS),
        "SCAN_PLANNER_MAX_CONNECTIONS": "6",
        "SCAN_PLANNER_PLAN_MEMORY_BYTES": "8192",
    }
    with running_service("--warehouse", str(conformance.dir / "warehouse"), env=env) as url:
        yield url


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


def _answer(conn: socket.socket, limit: float = 10) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    started, data = time.perf_counter(), b""
    conn.settimeout(limit)
    while chunk := conn.recv(4096):
        data += chunk
    return data, time.perf_counter() - started


def _one_response(conn: socket.socket) -> bytes:
    """One whole response (its headers and Content-Length bytes of body) off a kept-alive connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += conn.recv(4096)
    assert len(body) == length, "more than one response"
    return head + b"\r\n\r\n" + body


def test_a_split_size_finer_than_the_budget_is_refused_before_it_is_cut(tight_service: str) -> None:
    """Avro data files have no split offsets (Parquet's row groups would cut them whatever the size): a split
    size of one byte would make a range per byte."""
    refused = httpx.post(f"{tight_service}/plan", json={"table": "db.avro_format", "options": {"split-size": 1}})
    assert refused.status_code == 400, refused.text[:500]
    message = refused.json()["error"]["message"]
    assert "Split size 1 bytes" in message and "plan_memory_bytes" in message and "at least" in message, message
    fine = httpx.post(f"{tight_service}/plan", json={"table": "db.avro_format", "options": {"split-size": 1 << 20}})
    assert fine.status_code == 200, fine.text[:500]


def test_a_lookback_of_javas_whole_int_range_plans(tight_service: str) -> None:
    options = {"lookback": 2**31 - 1, "file-open-cost": 0}
    answer = httpx.post(f"{tight_service}/plan", json={"table": "db.many_manifests", "options": options}, timeout=30)
    assert answer.status_code == 200, answer.text[:500]
    assert answer.json()["split-options"]["lookback"] == 2**31 - 1


@pytest.mark.parametrize(
    "sent",
    [
        b"",  # connects and sends nothing
        b"POST /plan HTTP/1.1\r\nHost: 127.0.0.1\r\n",  # headers that never finish
    ],
    ids=["nothing", "unfinished-headers"],
)
def test_headers_that_do_not_come_are_answered_408(tight_service: str, sent: bytes) -> None:
    with socket.create_connection(_address(tight_service), timeout=10) as conn:
        conn.sendall(sent)
        answer, waited = _answer(conn)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"header_timeout_seconds" in answer
    assert HEADER_SECONDS * 0.8 < waited < HEADER_SECONDS + 5


def test_headers_dripping_a_line_at_a_time_are_cut_off(tight_service: str) -> None:
    with socket.create_connection(_address(tight_service), timeout=10) as conn:
        conn.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.perf_counter()
        try:
            for i in range(40):  # a header every 0.25 s: each gap short, the whole far past the deadline
                conn.sendall(f"X-Drip-{i}: 1\r\n".encode())
                time.sleep(0.25)
        except OSError:
            pass  # closed by the service
        answer, _ = _answer(conn)
        waited = time.perf_counter() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert waited < HEADER_SECONDS + 5


def test_a_kept_alive_connections_next_request_has_its_own_deadline(tight_service: str) -> None:
    with socket.create_connection(_address(tight_service), timeout=10) as conn:
        conn.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        first = _one_response(conn)
        assert first.startswith(b"HTTP/1.1 200"), first[:200]
        conn.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
        answer, waited = _answer(conn)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert waited < HEADER_SECONDS + 5


def test_a_body_dripping_a_byte_at_a_time_is_answered_408(tight_service: str) -> None:
    body = b'{"table": "db.unpartitioned", "select": ["id"], "filter": "id > 0"}'
    with socket.create_connection(_address(tight_service), timeout=10) as conn:
        conn.sendall(
            b"POST /plan HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        started = time.perf_counter()
        for byte in body:  # a byte every 0.2 s: no gap near the deadline, the whole body far past it
            if select.select([conn], [], [], 0.2)[0]:
                break  # answered
            conn.sendall(bytes([byte]))
        answer = _one_response(conn)
        waited = time.perf_counter() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"Request body not received within" in answer
    assert waited < BODY_SECONDS + 5


def test_past_max_connections_requests_are_answered_503(tight_service: str) -> None:
    held = [socket.create_connection(_address(tight_service), timeout=10) for _ in range(6)]
    try:
        busy = httpx.get(f"{tight_service}/health", timeout=10)
        assert busy.status_code == 503, busy.text
    finally:
        for conn in held:
            conn.close()
    deadline = time.monotonic() + 10
    while (status := httpx.get(f"{tight_service}/health", timeout=10).status_code) != 200:
        assert time.monotonic() < deadline, status
        time.sleep(0.1)


def test_the_balancer_refuses_slow_headers_itself(demo_service: str, tmp_path: Path) -> None:
    """deploy/haproxy.cfg's `timeout http-request`: HAProxy answers a client whose headers do not come 408
    after 10 s, without holding a connection to a replica meanwhile."""
    with balanced([demo_service]) as url, socket.create_connection(_address(url), timeout=30) as conn:
        conn.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        answer, waited = _answer(conn, limit=30)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert 8 < waited < 20

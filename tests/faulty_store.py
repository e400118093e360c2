"""A fault-injecting HTTP proxy in front of an S3 emulator (moto), for the tests and bench/fault_bench.py.

Two ways to break the store:
- `faults` maps a key fragment to what every request for it gets instead (a fault that lasts until cleared):
  ("status", http status, S3 error code), ("cut", bytes sent before the connection closes),
  ("short", bytes) (a GET's body cut to that many bytes behind a Content-Length that matches it, the
  object's HEAD intact: a read cut short that HTTP cannot see), ("hang", seconds).
- `chaos(share, kinds, seed)`: each GET or HEAD of an object is, with probability `share`, answered with one
  of `kinds` (CHAOS_KINDS by default) chosen at random: transient faults, as a store under load gives them.
`counts` holds what was asked and injected: "requests", and one count per kind injected.
"""

from __future__ import annotations

import http.client
import http.server
import random
import threading
import time
from collections import Counter
from typing import Any

S3_ERROR = '<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message></Error>'
# transient faults: throttling, an internal error, a connection reset before the answer, a body cut short
# behind a matching Content-Length, a slow answer (under the S3 request timeout)
CHAOS_KINDS: tuple[tuple[Any, ...], ...] = (
    ("status", 503, "SlowDown"),
    ("status", 500, "InternalError"),
    ("reset",),
    ("short", 0.5),
    ("slow", 0.3),
)


def kind_name(fault: tuple[Any, ...]) -> str:
    return f"{fault[0]} {fault[2]}" if fault[0] == "status" else str(fault[0])


class FaultyStore:
    """The proxy (a threaded HTTP server on a free loopback port; `url`), forwarding to `target` (host:port)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.faults: dict[str, tuple[Any, ...]] = {}
        self.hits: dict[str, int] = {}
        self.counts: Counter[str] = Counter()
        self._share, self._kinds, self._rng, self._only = 0.0, CHAOS_KINDS, random.Random(0), ""
        self._lock = threading.Lock()
        store = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fault = store._fault_for(self.command, self.path)
                if fault is not None:
                    if fault[0] == "status":
                        self._answer(fault[1], S3_ERROR.format(code=fault[2], message=fault[2]).encode())
                        return
                    if fault[0] == "hang":
                        time.sleep(fault[1])
                        self.close_connection = True
                        return
                    if fault[0] == "reset":
                        self.close_connection = True  # (no answer at all: the client sees the connection drop)
                        return
                    if fault[0] == "slow":
                        time.sleep(fault[1])
                status, headers, data = store.forward(self.command, self.path, self.headers, body)
                if fault is not None and self.command == "GET" and fault[0] in ("cut", "short") and status < 300:
                    kept = data[: _cut(fault[1], len(data))]
                    self.send_response(status)
                    for name, value in headers:
                        if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                            self.send_header(name, value)
                    # "cut": the whole length promised, the connection closed early; "short": a length that matches
                    self.send_header("Content-Length", str(len(data) if fault[0] == "cut" else len(kept)))
                    self.end_headers()
                    self.wfile.write(kept)
                    self.close_connection = fault[0] == "cut"
                    return
                self.send_response(status)
                dropped = ("transfer-encoding", "connection") + (() if self.command == "HEAD" else ("content-length",))
                for name, value in headers:  # (a HEAD's Content-Length is the object's, kept)
                    if name.lower() not in dropped:
                        self.send_header(name, value)
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def chaos(
        self, share: float, kinds: tuple[tuple[Any, ...], ...] = CHAOS_KINDS, seed: int = 0, only: str = ""
    ) -> None:
        """From now on, a `share` of object reads (GET, HEAD) get one of `kinds` at random (0: none); with
        `only`, just the reads of keys that hold it (".parquet": the data files)."""
        with self._lock:
            self._share, self._kinds, self._rng, self._only = share, kinds, random.Random(seed), only

    def _fault_for(self, method: str, path: str) -> tuple[Any, ...] | None:
        with self._lock:
            self.counts["requests"] += 1
            fault = next((f for key, f in list(self.faults.items()) if key in path), None)
            if fault is not None:
                self.hits[path] = self.hits.get(path, 0) + 1
            elif method in ("GET", "HEAD") and self._only in path and self._share and self._rng.random() < self._share:
                fault = self._rng.choice(self._kinds)
                if method == "HEAD" and fault[0] == "short":
                    fault = None  # (a HEAD has no body to cut)
            if fault is not None:
                self.counts[kind_name(fault)] += 1
            return fault

    def forward(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        host, port = self.target.rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            connection.request(method, path, body=body or None, headers=dict(headers.items()))
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def __enter__(self) -> FaultyStore:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _cut(kept: float, length: int) -> int:
    """Bytes kept of a body: a count, or a share of it (a float below 1)."""
    return int(length * kept) if isinstance(kept, float) and kept < 1 else min(int(kept), length)

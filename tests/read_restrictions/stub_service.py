"""A tiny planning service on loopback (the standard library's HTTP server, in a thread) that serves one
restricted plan as the scan planner will: POST /plan inline, or by id when the request's inline-task-limit
is 0 (then GET /plans/{id}/tasks/{i}; only the plan's filter is the request's, a JSON one, when it has
one: tasks fetched by id are read with the served plan's), and POST /aggregate with every aggregate inexact because read
restrictions apply. It answers 403 to a request whose X-Iceberg-Client-Capabilities does not include
read-restrictions, and records every request's method, path and that header."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from planner_client import CAPABILITIES_HEADER
from spark_client.partitions import expand_tasks

PLAN_ID = "restricted-plan"
_DRIVER_ONLY = ("tasks", "files", "residuals", "delete-files")


@dataclass
class StubService:
    """The served plan (the /plan response's wire form) and what was asked of it."""

    plan: dict[str, Any]
    url: str = ""
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)  # method, path, capabilities
    filters: list[Any] = field(default_factory=list)  # each POST /plan's filter
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, method: str, path: str, capabilities: str | None, body: Any) -> tuple[int, Any]:
        with self.lock:
            self.requests.append((method, path, capabilities))
        if "read-restrictions" not in [c.strip() for c in (capabilities or "").split(",")]:
            message = "Reads of db.t are restricted: send X-Iceberg-Client-Capabilities: read-restrictions"
            return 403, {"error": {"message": message, "type": "ForbiddenException", "code": 403}}
        if method == "POST" and path == "/plan":
            with self.lock:
                self.filters.append(body.get("filter"))
            # the plan's filter is the request's (a JSON one; the files are not pruned by it here)
            plan = {**self.plan, "filter": body["filter"]} if isinstance(body.get("filter"), dict) else self.plan
            if body.get("inline-task-limit") == 0:
                head = {k: v for k, v in plan.items() if k not in _DRIVER_ONLY}
                return 200, {**head, "plan-id": PLAN_ID}
            return 200, plan
        if method == "GET" and path.startswith(f"/plans/{PLAN_ID}/tasks/"):
            payload = expand_tasks(self.plan)[int(path.rsplit("/", 1)[1])]
            return 200, {"plan": payload["plan"], "tasks": [payload["task"]]}
        if method == "POST" and path == "/aggregate":
            reason = "read restrictions apply"
            aggregates = [
                {"name": name, "type": self._type(name), "value": None, "exact": False, "reason": reason}
                for name in body["aggregates"]
            ]
            return 200, {"table": body["table"], "exact": False, "data-files": 0, "aggregates": aggregates}
        return 404, {"error": {"message": f"no route {method} {path}", "type": "NotFound", "code": 404}}

    def _type(self, aggregate: str) -> Any:
        """An aggregate's Iceberg type: a count's long, else its (top-level) column's."""
        column = aggregate[aggregate.index("(") + 1 : -1]
        fields = {f["name"]: f["type"] for f in self.plan["schema"]["fields"]}
        return "long" if aggregate.startswith("count") else fields[column]


@contextmanager
def stub_service(plan: dict[str, Any]) -> Iterator[StubService]:
    """The service serving `plan` on a free loopback port, until the block ends."""
    service = StubService(plan)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._answer(None)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            self._answer(json.loads(self.rfile.read(length) or b"null"))

        def _answer(self, body: Any) -> None:
            status, answer = service.answer(self.command, self.path, self.headers.get(CAPABILITIES_HEADER), body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # (quiet)
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    service.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="stub-planner", daemon=True)
    thread.start()
    try:
        yield service
    finally:
        server.shutdown()
        server.server_close()
        thread.join()

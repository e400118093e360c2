"""A hostile upstream REST catalog: answers nested 200,000 levels deep, table metadata whose schema nests
335 structs (under the JSON depth limit, over the type depth limit), answers that are no JSON object. The
service (a real uvicorn on loopback, pointed at a real HTTP server on loopback) answers each with a clear
error naming the catalog, never a 500, and stays healthy.

A JSON answer that cannot be parsed within the depth limit is a 502 (the upstream answered badly); table
metadata that parses but is not valid (a schema nested past the type depth limit) is a 422, as from a file.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import running_service
from tests.hostile.variants import nested_structs

DEEP = 200_000


def _deep_array() -> str:
    return "[" * DEEP + "]" * DEEP


def _metadata_with_deep_schema() -> str:
    schema = '{"type": "struct", "schema-id": 0, "fields": [' + nested_structs(335, 1) + "]}"
    return (
        '{"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1", "location": "/nowhere",'
        ' "last-sequence-number": 0, "last-updated-ms": 1, "last-column-id": 400, "current-schema-id": 0,'
        f' "schemas": [{schema}], "default-spec-id": 0, "partition-specs": [{{"spec-id": 0, "fields": []}}],'
        ' "last-partition-id": 999, "default-sort-order-id": 0, "sort-orders": [{"order-id": 0, "fields": []}]}'
    )


ANSWERS = {
    "/v1/config": json.dumps({"defaults": {}, "overrides": {}}),
    "/v1/namespaces": _deep_array(),
    "/v1/namespaces/db/tables": '{"identifiers": ' + _deep_array() + "}",
    "/v1/namespaces/db/tables/deep_answer": '{"metadata-location": "/nowhere/v1.metadata.json", "metadata": '
    + _deep_array()
    + "}",
    "/v1/namespaces/db/tables/deep_schema": '{"metadata-location": "/nowhere/v1.metadata.json", "metadata": '
    + _metadata_with_deep_schema()
    + "}",
    "/v1/namespaces/db/tables/not_an_object": "[1, 2, 3]",
}


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = ANSWERS.get(self.path.split("?")[0])
        self.send_response(200 if body is not None else 404)
        data = (body or '{"error": {"message": "no such thing", "type": "NotFound", "code": 404}}').encode()
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def hostile_catalog() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def service(hostile_catalog: str) -> Iterator[str]:
    with running_service("--rest-catalog-uri", hostile_catalog) as url:
        yield url


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "words"),
    [
        ("POST", "/plan", {"table": "db.deep_answer"}, 502, "nests deeper than 1,024 levels"),
        ("POST", "/plan", {"table": "db.deep_schema"}, 422, "nests deeper than"),
        ("POST", "/plan", {"table": "db.not_an_object"}, 502, "with no object"),
        ("GET", "/v1/namespaces", None, 502, "nests deeper than 1,024 levels"),
        ("GET", "/v1/namespaces/db/tables", None, 502, "nests deeper than 1,024 levels"),
        ("GET", "/v1/namespaces/db/tables/deep_answer", None, 502, "nests deeper than 1,024 levels"),
        ("GET", "/v1/namespaces/db/tables/deep_schema", None, 422, "nests deeper than"),
    ],
)
def test_hostile_answers_are_named_errors(
    service: str, hostile_catalog: str, method: str, path: str, body: object, status: int, words: str
) -> None:
    with httpx.Client(base_url=service, timeout=60) as client:
        response = client.request(method, path, json=body)
        assert response.status_code == status, response.text[:500]
        message = response.json()["error"]["message"]
        assert words in message, message
        assert client.get("/health").status_code == 200

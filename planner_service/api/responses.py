"""JSON responses through orjson; `?pretty` indents them for people reading with curl."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from planner_service.json_text import dumps


def json_bytes(body: Any, pretty: bool = False) -> bytes:
    return dumps(body, indent=pretty)


def json_response(body: Any, status_code: int = 200, pretty: bool = False) -> Response:
    return Response(json_bytes(body, pretty), status_code=status_code, media_type="application/json")

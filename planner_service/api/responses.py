"""JSON responses through orjson; `?pretty` indents them for people reading with curl."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response


def json_bytes(body: Any, pretty: bool = False) -> bytes:
    option = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE if pretty else 0
    return orjson.dumps(body, option=option)


def json_response(body: Any, status_code: int = 200, pretty: bool = False) -> Response:
    return Response(json_bytes(body, pretty), status_code=status_code, media_type="application/json")

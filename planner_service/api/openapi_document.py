"""The service's OpenAPI document (/openapi.json, /docs), as FastAPI makes it from the routes, with what FastAPI
cannot know set right: no route answers 422 for a malformed request (api/errors.py answers 400, documented by
api/documented.py), so FastAPI's generic 422 is dropped where a route does not answer 422 itself; and the
security schemes (a bearer token, got at the OAuth2 token endpoint), so that a client, or a fuzzer, knows
where credentials come from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

TOKEN_URL = "/v1/oauth/tokens"
_FASTAPI_422 = "#/components/schemas/HTTPValidationError"

SECURITY_SCHEMES = {
    "bearer": {"type": "http", "scheme": "bearer", "description": "a token of /v1/oauth/tokens, or the service's own"},
    "oauth2": {
        "type": "oauth2",
        "description": "the client credentials grant (RFC 6749), or a token exchange (RFC 8693)",
        "flows": {"clientCredentials": {"tokenUrl": TOKEN_URL, "scopes": {}}},
    },
}

# POST /v1/oauth/tokens reads a form (RFC 6749 section 4.4.2; RFC 8693 section 2.1)
TOKEN_REQUEST = {
    "requestBody": {
        "required": True,
        "content": {
            "application/x-www-form-urlencoded": {
                "schema": {
                    "title": "TokenRequest",
                    "type": "object",
                    "description": "client credentials (or HTTP Basic), or a token to exchange",
                    "properties": {
                        "grant_type": {
                            "type": "string",
                            "enum": ["client_credentials", "urn:ietf:params:oauth:grant-type:token-exchange"],
                            "description": "client_credentials, or a token exchange",
                        },
                        "client_id": {"type": "string", "description": "client credentials: the client"},
                        "client_secret": {"type": "string", "description": "client credentials: its secret"},
                        "subject_token": {"type": "string", "description": "a token exchange: the token to renew"},
                        "subject_token_type": {"type": "string", "description": "a token exchange: its type"},
                        "scope": {"type": "string", "description": "accepted and ignored"},
                    },
                    "required": ["grant_type"],
                }
            }
        },
    }
}


def install_openapi(app: FastAPI) -> None:
    """Make `app.openapi()` (what /openapi.json serves) FastAPI's document set right, made once."""
    generate: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = set_right(generate())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def set_right(doc: dict[str, Any]) -> dict[str, Any]:
    for operations in doc.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            schema = responses.get("422", {}).get("content", {}).get("application/json", {}).get("schema", {})
            if schema.get("$ref") == _FASTAPI_422:
                del responses["422"]
    components = doc.setdefault("components", {})
    schemas = components.get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    components["securitySchemes"] = SECURITY_SCHEMES
    return doc

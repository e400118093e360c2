"""Secrets in the service's settings never show in its repr (a log line, a traceback's locals)."""

from __future__ import annotations

import re
from typing import Any

from planner_service.settings import Settings

SECRET = re.compile(r"token|secret|credential|password|_key$|signing")
NOT_SECRET = {"s3_access_key_id", "token_ttl_seconds", "rest_catalog_oauth2_server_uri"}
ALSO_SECRET = {"oauth_clients"}  # client id -> secret


def _secret_value(name: str, annotation: Any) -> Any:
    text = f"HIDDEN-{name}"
    if "list" in str(annotation):
        return [text]
    if "dict" in str(annotation):
        return {"client": text}
    return text


def test_no_secret_field_shows_in_the_settings_repr() -> None:
    fields = {
        name: info
        for name, info in Settings.model_fields.items()
        if (SECRET.search(name) or name in ALSO_SECRET)
        and name not in NOT_SECRET
        and str(info.annotation).startswith(("str", "list", "dict", "typing.Optional[str]", "str | None"))
    }
    assert {"auth_tokens", "oauth_clients", "token_signing_key", "s3_secret_access_key"} <= set(fields)
    settings = Settings(**{name: _secret_value(name, info.annotation) for name, info in fields.items()})
    shown = repr(settings) + str(settings)
    assert "HIDDEN" not in shown, [name for name in fields if f"HIDDEN-{name}" in shown]

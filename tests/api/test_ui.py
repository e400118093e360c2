"""Where a token comes from, in the words of a 401 and of the plan explorer's token field (the page is served
with them, `data-token-sources` on its root element): only the kinds of authentication configured (static
tokens, this service's OAuth token endpoint, an OpenID provider, the upstream catalog), never a token, a
client or a secret. (The page itself, in a browser: tests/ui/test_explorer.py.)"""

from __future__ import annotations

import httpx
import pytest

from planner_service.access.control import access_control
from planner_service.access.oidc import OidcConfig, OidcVerifier
from planner_service.settings import Settings

KEY = b"a signing key of the test's own"
WORDS = {  # a kind of authentication -> what its words name
    "static": "static tokens (auth_tokens",
    "oauth": "POST /v1/oauth/tokens",
    "oidc": "OpenID provider https://id.example",
    "delegated": "upstream catalog http://upstream.example",
}


@pytest.mark.parametrize(
    ("settings", "kinds"),
    [
        ({}, []),
        ({"auth_tokens": ["a-static-token"]}, ["static"]),
        ({"auth_tokens": {"etl": "a-static-token"}}, ["static"]),
        ({"oauth_clients": {"spark": "s3cret"}}, ["oauth"]),
        ({"auth_tokens": ["a-static-token"], "oauth_clients": {"spark": "s3cret"}}, ["static", "oauth"]),
        ({"rest_catalog_delegation": True, "rest_catalog_uri": "http://upstream.example"}, ["delegated"]),
    ],
)
def test_the_words_name_the_kinds_configured_and_no_secret(settings: dict[str, object], kinds: list[str]) -> None:
    control = access_control(Settings.model_validate(settings), KEY)
    hint = control.token_hint
    for kind, words in WORDS.items():
        assert (words in hint) == (kind in kinds), (kind, hint)
    assert "a-static-token" not in hint and "s3cret" not in hint and "etl" not in hint
    assert len(control.token_sources) == len(kinds)


def test_an_openid_provider_is_a_kind_of_its_own() -> None:
    settings = Settings(oidc_issuer="https://id.example", oidc_audience="scan-planner")
    verifier = OidcVerifier(OidcConfig("https://id.example", "scan-planner"))  # (not started: nothing fetched)
    try:
        hint = access_control(settings, KEY, verifier).token_hint
        assert WORDS["oidc"] in hint and WORDS["static"] not in hint and WORDS["oauth"] not in hint
    finally:
        verifier.close()


def test_without_authentication_the_page_names_no_source(conformance_service: str) -> None:
    for path in ("/ui", "/ui/index.html"):
        page = httpx.get(f"{conformance_service}{path}", timeout=30)
        assert page.status_code == 200 and '<html lang="en" data-token-sources="">' in page.text
        assert page.headers["content-length"] == str(len(page.content))

"""A real OpenID Connect provider on loopback for the authentication tests: panva's oidc-provider (npm, installed
by scripts/setup_tests.sh into .venv/oidc-provider) run by tests/oidc/provider.mjs under Node.js.

Its clients get JWT access tokens by the client-credentials grant (client_secret_post or client_secret_basic),
signed RS256 with a `kid`, for one audience, with the client's groups in a `groups` claim; a request with only
`scope=catalog` (what PyIceberg and Iceberg Java send) gets them. Its signing keys are RSA keys generated here
(by Node.js) and kept in a JWKS file: `rotate()` restarts it on the same port with a new signing key, the old
keys still published or not; `stop()` makes it unreachable and `start(garbage_jwks=True)` makes its JWKS
endpoint answer something that is not a JWKS.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from tests.processes import free_port, stop, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "oidc" / "provider.mjs"
MODULES = ROOT / ".venv" / "oidc-provider" / "node_modules"


def _node() -> str:
    node = shutil.which("node")
    if node is None or not (MODULES / "oidc-provider" / "package.json").exists():
        raise RuntimeError(f"Node.js or oidc-provider (at {MODULES}) is missing: run scripts/setup_tests.sh")
    return node


def new_key() -> dict[str, str]:
    """A new private RSA JWK (2048 bits, alg RS256, use sig), its kid the RFC 7638 thumbprint."""
    out = subprocess.run([_node(), str(SCRIPT), "keygen"], capture_output=True, check=True, timeout=30)
    key: dict[str, str] = json.loads(out.stdout)
    return key


def decode_jwt(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A JWT's header and claims, not verified."""

    def part(segment: str) -> dict[str, Any]:
        decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
        return decoded

    header, claims, _ = token.split(".")
    return part(header), part(claims)


class OidcProvider:
    """The provider process, on one loopback port for its whole life (across restarts)."""

    def __init__(
        self, directory: Path, clients: dict[str, tuple[str, list[str]]], audience: str, ttl_seconds: int
    ) -> None:
        self.directory = directory
        self.audience = audience
        self.ttl_seconds = ttl_seconds
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.token_endpoint = f"{self.issuer}/token"
        self.jwks_uri = f"{self.issuer}/jwks"
        self.discovery_uri = f"{self.issuer}/.well-known/openid-configuration"
        self._clients_file = directory / "clients.json"
        self._clients_file.write_text(
            json.dumps(
                [
                    {"client_id": cid, "client_secret": secret, "groups": groups}
                    for cid, (secret, groups) in clients.items()
                ]
            )
        )
        self._jwks_file = directory / "jwks.json"
        self._log = directory / "provider.log"
        self._keys: list[dict[str, str]] = [new_key()]
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def signing_key(self) -> dict[str, str]:
        """The private JWK it signs with now (for tests that sign tokens of their own with it)."""
        return dict(self._keys[0])

    @property
    def kids(self) -> list[str]:
        """The kids of the published keys, the signing key's first."""
        return [key["kid"] for key in self._keys]

    def start(self, *, garbage_jwks: bool = False) -> None:
        """Start it with the current keys; `garbage_jwks`: its jwks_uri answers 200 with a body that is not JSON."""
        if self._proc is not None:
            raise RuntimeError("the OIDC provider is already running")
        self._jwks_file.write_text(json.dumps({"keys": self._keys}))
        argv = [_node(), str(SCRIPT), "--port", str(self.port), "--clients", str(self._clients_file)]
        argv += ["--jwks", str(self._jwks_file), "--audience", self.audience, "--ttl", str(self.ttl_seconds)]
        argv += ["--modules", str(MODULES), *(["--garbage-jwks"] if garbage_jwks else [])]
        with open(self._log, "ab") as log:
            self._proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_port(self.port, self._proc, timeout=15)
        except (RuntimeError, TimeoutError) as exc:
            self.stop()
            raise RuntimeError(f"the OIDC provider did not start: {exc}; its log:\n{self.log()[-3000:]}") from None

    def stop(self) -> None:
        """Stop it (its port then refuses connections: an unreachable provider)."""
        if self._proc is not None:
            stop(self._proc)
            self._proc = None

    def restart(self, *, garbage_jwks: bool = False) -> None:
        self.stop()
        self.start(garbage_jwks=garbage_jwks)

    def rotate(self, keep_old: bool = True) -> str:
        """Restart it on the same port with a new signing key, the keys published so far still published after
        it (`keep_old`) or not; the new key's kid."""
        key = new_key()
        self._keys = [key, *self._keys] if keep_old else [key]
        self.restart()
        return key["kid"]

    def request_token(
        self, client_id: str, secret: str, scope: str | None = "catalog", *, basic: bool = False
    ) -> httpx.Response:
        """The token endpoint's answer to a client-credentials request, the client authenticated by form fields
        (client_secret_post, as PyIceberg does) or by HTTP Basic (client_secret_basic)."""
        form = {"grant_type": "client_credentials", **({"scope": scope} if scope is not None else {})}
        headers = {}
        if basic:  # RFC 6749 2.3.1: each part form-urlencoded before base64
            pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form |= {"client_id": client_id, "client_secret": secret}
        return httpx.post(self.token_endpoint, data=form, headers=headers, timeout=10)

    def token(self, client_id: str, secret: str, scope: str | None = "catalog", *, basic: bool = False) -> str:
        """A JWT access token for the client (client credentials)."""
        response = self.request_token(client_id, secret, scope, basic=basic)
        if response.status_code != 200:
            raise RuntimeError(f"token request for {client_id} refused: {response.status_code} {response.text}")
        token: str = response.json()["access_token"]
        return token

    def jwks(self) -> dict[str, Any]:
        """The public keys it publishes at jwks_uri."""
        response = httpx.get(self.jwks_uri, timeout=10)
        response.raise_for_status()
        keys: dict[str, Any] = response.json()
        return keys

    def requests(self, method: str, path: str) -> int:
        """How many requests for `path` it has answered since it was first started (e.g. "GET", "/jwks")."""
        return sum(1 for line in self.log().splitlines() if line.startswith(f"request {method} {path} "))

    def log(self) -> str:
        return self._log.read_text(errors="replace") if self._log.exists() else ""


@contextlib.contextmanager
def oidc_provider(
    clients: dict[str, tuple[str, list[str]]], audience: str = "scan-planner", ttl_seconds: int = 3600
) -> Iterator[OidcProvider]:
    """An OIDC provider running on loopback while the block runs; `clients`: client_id -> (secret, groups)."""
    with tempfile.TemporaryDirectory(prefix="oidc-provider-") as directory:
        provider = OidcProvider(Path(directory), clients, audience, ttl_seconds)
        provider.start()
        try:
            yield provider
        finally:
            provider.stop()

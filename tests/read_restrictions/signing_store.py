"""moto's S3 on loopback, behind the check S3 makes of a presigned URL: its SigV4 signature, recomputed with
the secret of the key it names, and its expiry. A presigned GET that fails either is refused 403 with S3's
error (SignatureDoesNotMatch; AccessDenied "Request has expired"); every other request goes to moto as it
is (which refuses an anonymous read of a private object, 403).

moto (5.x) serves a presigned URL without checking either, so a URL edited to name another object, or read
after it expired, would read: the tests of presigned files need a store that refuses them, as S3 does.

    python -m tests.read_restrictions.signing_store PORT KEY:SECRET [KEY:SECRET ...]
"""

from __future__ import annotations

import contextlib
import hmac
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from tests.processes import free_port, stop, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
_ERROR = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{}</Code><Message>{}</Message></Error>'
_MISMATCH = "The request signature we calculated does not match the signature you provided."


@contextlib.contextmanager
def signing_store(keys: dict[str, str]) -> Iterator[str]:
    """The store (moto behind the check) while the block runs, knowing `keys` (key id -> secret); its URL."""
    port = free_port()
    argv = [sys.executable, "-m", "tests.read_restrictions.signing_store", str(port)]
    argv += [f"{key}:{secret}" for key, secret in keys.items()]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def refusal(environ: dict[str, Any], keys: dict[str, str], now: datetime) -> tuple[str, str] | None:
    """(S3's error code, its message) for a presigned request that S3 refuses; None for one it takes and for
    a request that is not presigned."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI") or ""
    path, _, query = raw.partition("?")
    pairs = query.split("&") if query else []
    params = {name: unquote(value) for name, _, value in (pair.partition("=") for pair in pairs)}
    if "X-Amz-Signature" not in params:
        return None
    try:
        key_id, _, region, service, _ = params["X-Amz-Credential"].split("/")
        signed_at = datetime.strptime(params["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        lifetime = timedelta(seconds=int(params["X-Amz-Expires"]))
    except (KeyError, ValueError):
        return "AuthorizationQueryParametersError", "The presigned URL's query parameters are malformed."
    secret = keys.get(key_id)
    if secret is None:
        return "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records."
    if now > signed_at + lifetime:
        return "AccessDenied", "Request has expired"
    from botocore.auth import S3SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    unsigned = "&".join(pair for pair in pairs if not pair.startswith("X-Amz-Signature="))
    request = AWSRequest(method=environ["REQUEST_METHOD"], url=f"http://{environ['HTTP_HOST']}{path}?{unsigned}")
    request.context["timestamp"] = params["X-Amz-Date"]
    auth = S3SigV4QueryAuth(Credentials(key_id, secret), service, region)
    expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
    if not hmac.compare_digest(expected, params["X-Amz-Signature"]):
        return "SignatureDoesNotMatch", _MISMATCH
    return None


class PresignedCheck:
    """The WSGI app: `app` (moto's) behind refusal()."""

    def __init__(self, app: Callable[..., Iterable[bytes]], keys: dict[str, str]) -> None:
        self.app, self.keys = app, keys

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        refused = refusal(environ, self.keys, datetime.now(UTC))
        if refused is None:
            return self.app(environ, start_response)
        body = _ERROR.format(*refused).encode()
        start_response("403 Forbidden", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
        return [body]


def main(argv: list[str]) -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import run_simple

    port, keys = int(argv[0]), dict(pair.split(":", 1) for pair in argv[1:])
    os.environ["MOTO_PORT"] = str(port)  # (as moto_server sets it: moto's own URLs name this port)
    app = PresignedCheck(DomainDispatcherApplication(create_backend_app), keys)
    run_simple("127.0.0.1", port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main(sys.argv[1:])

"""The key that signs tokens and plan ids: `token_signing_key`, else a random one the service keeps in its
home, shared by the workers and replicas of one host."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import secrets
import time
from pathlib import Path

from planner_service.settings import Settings

log = logging.getLogger(__name__)

KEY_FILE = "signing-key"


def signing_key(settings: Settings) -> bytes:
    """The key that signs tokens and plan ids: `token_signing_key`, else a random one kept in the service's
    home (made once, readable by its owner only), else (no home to write) one for this process alone. The
    file appears whole (written under another name, then linked to its own: the first process to link
    wins), so workers and replicas starting together all read the one key."""
    if settings.token_signing_key:
        return hashlib.sha256(settings.token_signing_key.encode()).digest()
    home = Path(os.environ.get("SCAN_PLANNER_HOME", Path.home() / ".local" / "share" / "scan-planner"))
    path = home / KEY_FILE
    try:
        home.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            _write_key_once(path)
        return _read_key(path)
    except (OSError, ValueError) as exc:
        log.warning(
            "no signing key kept: tokens and plan ids end with this process",
            extra={"path": str(path), "error": str(exc), "fix": "set token_signing_key or SCAN_PLANNER_HOME"},
        )
        return secrets.token_bytes(32)


def _write_key_once(path: Path) -> None:
    partial = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
        with contextlib.suppress(FileExistsError):  # (another process linked its key first: that one holds)
            os.link(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _read_key(path: Path) -> bytes:
    """The key in `path`; a file still empty (written by an earlier release as it was made) is waited for a
    moment before it is called broken."""
    for _ in range(50):
        text = path.read_text().strip()
        if len(text) >= 32:
            return bytes.fromhex(text)
        time.sleep(0.02)
    raise OSError(f"{path} holds no key")

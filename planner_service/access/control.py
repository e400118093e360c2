"""The access control in force: the authenticator (who a token names) and the grants policy, made from the
settings and swapped whole when the settings file changes (or on SIGHUP), so that no request sees half a
policy: each request takes the AccessControl in force once, when it is authenticated, and decides everything
with it. A settings file that does not load, or an OpenID provider whose keys do not parse, leaves the one in
force as it was (logged, counted)."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from planner_service.access.oidc import OidcConfig, OidcVerifier
from planner_service.access.policy import Policy
from planner_service.access.principals import Principal
from planner_service.access.tokens import Authenticator, token_digest
from planner_service.errors import PlannerError
from planner_service.settings import RELOADED_FIELDS, Settings, load_settings

log = logging.getLogger(__name__)

KEY_FILE = "signing-key"


@dataclass(frozen=True)
class AccessControl:
    """`authenticator` None: authentication off (every caller anonymous); `policy` None: no grants policy
    (every caller may do everything); `delegated`: tokens are the upstream catalog's to judge, and one this
    service does not know is still a principal (`bearer-<digest>`, rest_catalog_delegation)."""

    authenticator: Authenticator | None
    policy: Policy | None
    delegated: bool = False
    token_sources: tuple[str, ...] = ()  # where the tokens it takes come from, in words (token_sources())

    @property
    def token_hint(self) -> str:
        """What a 401 says to do: where a token comes from, for the authentication configured."""
        if not self.token_sources:
            return "authentication is off"
        return "send `Authorization: Bearer <token>` with " + "; or ".join(self.token_sources)

    @property
    def enabled(self) -> bool:
        return self.authenticator is not None or self.delegated

    def needs_fetch(self, token: str) -> bool:
        return self.authenticator is not None and self.authenticator.needs_fetch(token)

    def authenticate(self, token: str) -> Principal | None:
        found = self.authenticator.authenticate(token) if self.authenticator is not None else None
        if found is None and self.delegated:
            return Principal(f"bearer-{token_digest(token).hex()[:16]}", "delegated", frozenset(), token)
        return found


def access_control(settings: Settings, key: bytes, oidc: OidcVerifier | None = None) -> AccessControl:
    """The access control `settings` describe (OidcConfigError when its provider's keys do not parse)."""
    if oidc is None and settings.oidc_issuer:
        assert settings.oidc_audience is not None
        oidc = OidcVerifier(
            OidcConfig(
                issuer=settings.oidc_issuer,
                audience=settings.oidc_audience,
                jwks_uri=settings.oidc_jwks_uri,
                principal_claim=settings.oidc_principal_claim,
                groups_claim=settings.oidc_groups_claim,
                refresh_seconds=settings.oidc_jwks_refresh_seconds,
            )
        )
        oidc.start()
    authenticator = None
    if settings.auth_tokens or settings.oauth_clients or oidc is not None:
        authenticator = Authenticator.of(
            settings.auth_tokens,
            settings.oauth_clients,
            settings.principal_groups,
            key,
            settings.token_ttl_seconds,
            oidc,
        )
    policy = Policy(settings.access_rules) if settings.access_rules is not None else None
    delegated = settings.rest_catalog_delegation and authenticator is None
    return AccessControl(authenticator, policy, delegated, token_sources(settings))


def token_sources(settings: Settings) -> tuple[str, ...]:
    """Where the bearer tokens this service takes come from, in words, one for each kind configured (a
    service of static tokens alone does not send its callers to a token endpoint that refuses them): the
    words of a 401 and of the explorer's token field."""
    sources = []
    if settings.auth_tokens:
        sources.append("one of the service's static tokens (auth_tokens in its settings)")
    if settings.oauth_clients:
        sources.append(
            "an access token from POST /v1/oauth/tokens (grant_type=client_credentials, with an OAuth client's id "
            "and secret)"
        )
    if settings.oidc_issuer:
        sources.append(f"a token from the OpenID provider {settings.oidc_issuer} (audience {settings.oidc_audience})")
    if settings.rest_catalog_delegation:
        sources.append(f"a token of the upstream catalog {settings.rest_catalog_uri}")
    return tuple(sources)


def describe_access(settings: Settings) -> list[str]:
    """What the service's start says of its access control: who may call it, what decides, where the audit
    goes (a line each)."""
    kinds = []
    if settings.auth_tokens:
        kinds.append(f"static tokens ({len(settings.auth_tokens)})")
    if settings.oauth_clients:
        kinds.append(f"OAuth clients ({len(settings.oauth_clients)}; tokens at POST /v1/oauth/tokens)")
    if settings.oidc_issuer:
        kinds.append(f"the OpenID provider {settings.oidc_issuer}")
    if settings.rest_catalog_delegation:
        kinds.append(f"delegated to the upstream catalog {settings.rest_catalog_uri}")
    source = f" (from {settings.config_file}, reloaded when it changes)" if settings.config_file else ""
    audit = (
        os.path.abspath(settings.audit_log) if settings.audit_log else "the service log (logger planner_service.audit)"
    )
    rules = settings.access_rules
    lines = [
        f"authentication: on, by {', '.join(kinds)}" if kinds else "authentication: off (every caller is anonymous)",
        "grants policy: off (every caller may do everything)"
        if rules is None
        else f"grants policy: {len(rules)} rule{'' if len(rules) == 1 else 's'}{source}; what no rule gives is denied",
        f"audit: {audit}",
    ]
    return lines


class AccessHolder:
    """The AccessControl in force (`current`), replaced whole by reload()."""

    def __init__(self, settings: Settings, key: bytes) -> None:
        self.settings, self.key = settings, key
        self.current = access_control(settings, key)
        self._oidc_config = _oidc_fields(settings)
        self._file_digest = _digest(settings.config_file)
        self.reloads = {"ok": 0, "failed": 0}

    def changed(self) -> bool:
        """Whether the settings file's contents differ from those last loaded."""
        return self.settings.config_file is not None and _digest(self.settings.config_file) != self._file_digest

    def reload(self) -> bool:
        """Load the settings file again and put its access control in force; on any error keep the one in
        force (logged). True when the new one is in force."""
        path = self.settings.config_file
        digest = _digest(path)
        try:
            fresh = load_settings(path)
            wanted = self.settings.model_copy(update={f: getattr(fresh, f) for f in RELOADED_FIELDS})
            if wanted.auth_enabled != self.settings.auth_enabled:
                raise PlannerError("turning authentication on or off needs a restart")
            same_provider = _oidc_fields(wanted) == self._oidc_config
            current = self.current.authenticator
            oidc = current.oidc if same_provider and current is not None else None
            control = access_control(wanted, self.key, oidc)
        except Exception as exc:  # any error at all keeps the policy in force (and the watcher alive)
            self._file_digest = digest  # (not tried again until the file changes)
            self.reloads["failed"] += 1
            message = exc.message if isinstance(exc, PlannerError) else f"{type(exc).__name__}: {exc}"
            log.error("access policy not reloaded: the one in force is kept", extra={"file": path, "error": message})
            return False
        self.settings, self.current, self._file_digest = wanted, control, digest
        self._oidc_config = _oidc_fields(wanted)
        self.reloads["ok"] += 1
        rules = len(wanted.access_rules) if wanted.access_rules is not None else None
        log.info("access policy reloaded", extra={"file": path, "rules": rules})
        return True


def _oidc_fields(settings: Settings) -> tuple[object, ...]:
    return tuple(getattr(settings, f) for f in RELOADED_FIELDS if f.startswith("oidc_"))


def _digest(path: str | None) -> bytes | None:
    if path is None:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).digest()
    except OSError:
        return None


async def watch_settings_file(holder: AccessHolder, seconds: float) -> None:
    """Reload when the settings file's contents change (checked every `seconds`) or on SIGHUP; runs until
    cancelled. The reload itself (reading, an OpenID provider's keys) runs in a worker thread."""
    import asyncio
    import signal

    import anyio.to_thread

    wake = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # (not the main thread's loop)
        loop.add_signal_handler(signal.SIGHUP, wake.set)
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), seconds if seconds > 0 else None)
        asked = wake.is_set()
        wake.clear()
        try:
            if asked or await anyio.to_thread.run_sync(holder.changed):
                await anyio.to_thread.run_sync(holder.reload)
        except Exception:  # (never the end of reloads: the next change, or SIGHUP, is heard)
            log.exception("checking the settings file failed; watching on")

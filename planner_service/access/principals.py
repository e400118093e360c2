"""A principal: who a request is from, as its credential says, and the groups it belongs to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

PrincipalKind = Literal["anonymous", "static", "client", "oidc", "delegated"]


@dataclass(frozen=True)
class Principal:
    """`name` is what the policy's rules match (a static token's name, an OAuth client's id, a JWT's
    principal claim); `token` is the bearer token it came with, kept only to pass on to an upstream catalog
    that decides for itself (rest_catalog_delegation)."""

    name: str
    kind: PrincipalKind
    groups: frozenset[str] = frozenset()
    token: str | None = field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        return self.name

    @property
    def key(self) -> str:
        """The principal as what it owns is bound to (plan ids): its kind and name, so that an OpenID subject
        named like a static principal never opens that principal's ids."""
        return f"{self.kind}:{self.name}"


ANONYMOUS = Principal("anonymous", "anonymous")  # authentication off

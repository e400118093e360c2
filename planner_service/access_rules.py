"""The rules of the settings file's `access_rules` as the settings read them: each rule's shape and checks,
the privileges and what each implies, and location patterns written as the locations they are matched
against. The policy that decides with them is access/policy.py (the access wing, above the catalogs); this
is what the settings need to load and refuse a file, below everything."""

from __future__ import annotations

import os
import posixpath
import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from iceberg_io import InvalidLocation, parse_location
from read_restrictions import ACTIONS


class Privilege(StrEnum):
    LIST = "list"
    READ_METADATA = "read-metadata"
    PLAN = "plan"
    CREDENTIALS = "credentials"
    METRICS = "metrics"


IMPLIED: dict[Privilege, frozenset[Privilege]] = {
    Privilege.LIST: frozenset({Privilege.LIST}),
    Privilege.READ_METADATA: frozenset({Privilege.READ_METADATA, Privilege.LIST}),
    Privilege.PLAN: frozenset({Privilege.PLAN, Privilege.READ_METADATA, Privilege.LIST}),
    Privilege.CREDENTIALS: frozenset({Privilege.CREDENTIALS, Privilege.READ_METADATA, Privilege.LIST}),
    Privilege.METRICS: frozenset({Privilege.METRICS}),
}
EVERY_PRIVILEGE = frozenset(Privilege)
SERVICE_PRIVILEGES = frozenset({Privilege.METRICS})
NOTHING: frozenset[Privilege] = frozenset()


class AccessRule(BaseModel):
    """One rule of the policy (a `[[access_rules]]` table of the settings file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    principals: list[str] = Field(default_factory=list, description="globs over principal names")
    groups: list[str] = Field(default_factory=list, description="globs over the principal's groups")
    tables: list[str] = Field(default_factory=list, description="globs over `namespace.name`")
    namespaces: list[str] = Field(default_factory=list, description="globs over the table's namespace")
    locations: list[str] = Field(default_factory=list, description="globs over metadata locations")
    privileges: list[Privilege] = Field(description="what the rule gives; [] denies")
    row_filter: str | None = Field(
        None, description="read restrictions: the rows its principals may read, in the service's filter syntax"
    )
    column_masks: dict[str, str] = Field(
        default_factory=dict, description="read restrictions: column -> the spec's mask action (mask-alphanum, ...)"
    )
    description: str | None = Field(None, description="why the rule exists (audit and docs)")

    @model_validator(mode="after")
    def _checked(self) -> AccessRule:
        if not self.principals and not self.groups:
            raise ValueError('an access rule needs `principals` or `groups` (use principals = ["*"] for everyone)')
        if Privilege.METRICS in self.privileges and (self.tables or self.namespaces or self.locations):
            raise ValueError(
                "`metrics` is a privilege of the service: give it in a rule without tables, namespaces or locations"
            )
        for pattern in self.locations:
            location_pattern(pattern)  # (raises ValueError naming what is wrong with it)
        for pattern in self.tables:
            if pattern != "*" and "." not in pattern.strip("."):
                raise ValueError(f"table pattern {pattern!r}: write namespace.table (`*` for any part)")
        if self.restricts:
            if not set(self.privileges) - {Privilege.METRICS}:
                raise ValueError("row_filter and column_masks restrict reads: give them in a rule that gives some")
            for column, action in self.column_masks.items():
                if action not in ACTIONS:
                    raise ValueError(f"column_masks: {column} = {action!r} is not one of {', '.join(ACTIONS)}")
        return self

    @property
    def restricts(self) -> bool:
        """Whether it restricts its principals' reads (a row filter, column masks)."""
        return self.row_filter is not None or bool(self.column_masks)


_GLOB = re.compile(r"[*?\[]")


def location_pattern(pattern: str) -> str:
    """A `locations` glob as the locations it is matched against are written: a URI of the store (`s3a:`
    is `s3:`, a local path `file:///...`), a local path's directories before the first glob character
    normalised and resolved (links too), as the service resolves a requested location."""
    if pattern == "*":
        return pattern
    glob = _GLOB.search(pattern)
    head, tail = (pattern[: glob.start()], pattern[glob.start() :]) if glob else (pattern, "")
    directory, cut, rest = head.rpartition("/") if glob else (head, "/", "")
    if not cut:
        raise ValueError(f"location pattern {pattern!r} names no directory: give a full path or URI before any glob")
    try:
        parsed = parse_location(directory or "/")
    except InvalidLocation as exc:
        raise ValueError(f"location pattern {pattern!r}: {exc}") from None
    if parsed.scheme == "file":
        if not parsed.path.startswith("/"):
            raise ValueError(f"location pattern {pattern!r} is not absolute: give a full path or URI")
        parsed = type(parsed)("file", os.path.realpath(parsed.path))
    elif any(part in (".", "..") for part in directory.partition("://")[2].split("/")):
        raise ValueError(f"location pattern {pattern!r} has '.' or '..' segments, which no location read has")
    return posixpath.join(parsed.uri, rest + tail) if rest or tail else parsed.uri

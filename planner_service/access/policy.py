"""The grants policy: rules in the settings file (`[[access_rules]]`) that give principals privileges on
tables. Without a policy (no `access_rules` at all) every authenticated caller may do everything; once the
setting exists, what no rule gives is denied.

Each rule matches callers (`principals` and `groups`: globs over the principal's name and its groups; a rule
without either matches nobody) and objects (`tables`: globs over `namespace.name`; `namespaces`: globs over a
table's dotted namespace; `locations`: globs over the metadata locations planned by `metadata-location`; a
rule without any of the three matches every table and location). Locations are decided as storage reads
them: the service resolves a requested location first (scheme aliases, `file:` URIs, percent-encoding, `.`,
`..` and `//` in local paths, symbolic links) and each pattern is resolved alike when the policy is made
(its directories up to the first glob character), so no other spelling of a path decides differently; a
`*` in a location matches any characters, `/` included, as in an IAM resource. As in Trino's file-based access control,
the first rule (in file order) that matches a caller and an object decides: its privileges are all the
caller has there, and a rule with `privileges = []` denies.

Privileges, modelled on Polaris's (docs/guides/access-control.md maps them):
- list: see the table's name (listings, existence);
- read-metadata: load the table (LoadTable, snapshots, refs, history), aggregate from its metadata; implies
  list;
- plan: plan it, explore its plans, and fetch the tasks (native and REST plans); implies read-metadata;
- credentials: receive vended storage credentials for it; implies read-metadata;
- metrics: read /metrics (a privilege of the service, given by rules without tables, namespaces or locations).

A rule that gives only `metrics` is passed over when a table is decided, and one that gives only table
privileges when the service is; a rule that denies (`privileges = []`) decides both.

A rule may restrict what its principals read of the tables it decides (`row_filter`, `column_masks`: read
restrictions, access/restrictions.py): the rule that decides a table decides its restriction too.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from planner_service.access.principals import Principal
from planner_service.access.restrictions import Restriction
from planner_service.access_rules import (
    EVERY_PRIVILEGE,
    IMPLIED,
    NOTHING,
    SERVICE_PRIVILEGES,
    AccessRule,
    Privilege,
    location_pattern,
)

__all__ = [
    "EVERY_PRIVILEGE",
    "IMPLIED",
    "NOTHING",
    "SERVICE_PRIVILEGES",
    "AccessRule",
    "Policy",
    "Privilege",
    "location_pattern",
]


def _globs(patterns: Sequence[str]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


def _table_globs(patterns: Sequence[str]) -> tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] | None:
    """Each `namespace.name` pattern as its namespace's glob and its name's, matched apart (the last dot
    divides them; `*` alone is every table)."""
    if not patterns:
        return None
    pairs = []
    for pattern in patterns:
        namespace, _, name = ("*", ".", "*") if pattern == "*" else pattern.rpartition(".")
        pairs.append((re.compile(fnmatch.translate(namespace)), re.compile(fnmatch.translate(name))))
    return tuple(pairs)


def _location_globs(patterns: Sequence[str]) -> re.Pattern[str] | None:
    return _globs([location_pattern(p) for p in patterns])


@dataclass(frozen=True)
class _Compiled:
    principals: re.Pattern[str] | None
    groups: re.Pattern[str] | None
    tables: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] | None  # (namespace, name) of each pattern
    namespaces: re.Pattern[str] | None
    locations: re.Pattern[str] | None
    grants: frozenset[Privilege]
    index: int
    restriction: Restriction | None = None

    @property
    def for_tables(self) -> bool:
        return not self.grants or bool(self.grants - SERVICE_PRIVILEGES)

    @property
    def for_service(self) -> bool:
        return self.any_object and (not self.grants or bool(self.grants & SERVICE_PRIVILEGES))

    @classmethod
    def of(cls, rule: AccessRule, index: int) -> _Compiled:
        grants = frozenset(p for privilege in rule.privileges for p in IMPLIED[privilege])
        try:
            restriction = Restriction.of(index + 1, rule.row_filter, rule.column_masks)
        except ValueError as exc:
            raise ValueError(f"access rule {index + 1}: {exc}") from None
        return cls(
            _globs(rule.principals),
            _globs(rule.groups),
            _table_globs(rule.tables),
            _globs(rule.namespaces),
            _location_globs(rule.locations),
            grants,
            index,
            restriction,
        )

    def matches_caller(self, principal: Principal) -> bool:
        """Every matcher given matches (as Trino's `user` and `group`): its name, and one of its groups."""
        if self.principals is not None and not self.principals.match(principal.name):
            return False
        return self.groups is None or any(self.groups.match(g) for g in principal.groups)

    @property
    def any_object(self) -> bool:
        return self.tables is None and self.namespaces is None and self.locations is None

    def matches_table(self, namespace: Sequence[str], name: str) -> bool:
        """A rule for every object matches; one with only `locations` matches no table by name; otherwise
        every matcher given matches (as Trino's `schema` and `table`), the namespace and the name apart."""
        if self.any_object:
            return True
        if self.tables is None and self.namespaces is None:
            return False
        dotted = ".".join(namespace)
        if self.namespaces is not None and not self.namespaces.match(dotted):
            return False
        return self.tables is None or any(ns.match(dotted) and n.match(name) for ns, n in self.tables)

    def matches_location(self, location: str) -> bool:
        return self.any_object or (self.locations is not None and bool(self.locations.match(location)))


MAX_DECISIONS = 65_536  # decisions kept per policy (all forgotten at once beyond)


class Policy:
    """The rules, compiled; immutable (a reload makes a new Policy), so its decisions are kept: a caller
    asking about the same table again costs a dictionary lookup, however many rules there are."""

    def __init__(self, rules: Iterable[AccessRule]) -> None:
        self.rules = tuple(rules)
        self._compiled = tuple(_Compiled.of(rule, i) for i, rule in enumerate(self.rules))
        self._decided: dict[
            tuple[str, frozenset[str], tuple[str, ...], str], tuple[frozenset[Privilege], Restriction | None]
        ] = {}
        self.restricts = any(c.restriction is not None for c in self._compiled)

    def on_table(self, principal: Principal, namespace: Sequence[str], name: str) -> frozenset[Privilege]:
        """What `principal` may do on table `namespace.name`: the first matching rule's privileges."""
        return self._decision(principal, namespace, name)[0]

    def restriction(self, principal: Principal, namespace: Sequence[str], name: str) -> Restriction | None:
        """What the rule deciding table `namespace.name` for `principal` restricts of its reads (None: none)."""
        return self._decision(principal, namespace, name)[1]

    def _decision(
        self, principal: Principal, namespace: Sequence[str], name: str
    ) -> tuple[frozenset[Privilege], Restriction | None]:
        key = (principal.name, principal.groups, tuple(namespace), name)
        decided = self._decided.get(key)
        if decided is None:
            rule = self._deciding(principal, namespace, name)
            decided = (rule.grants - SERVICE_PRIVILEGES, rule.restriction) if rule is not None else (NOTHING, None)
            if len(self._decided) >= MAX_DECISIONS:
                self._decided.clear()
            self._decided[key] = decided
        return decided

    def _deciding(self, principal: Principal, namespace: Sequence[str], name: str) -> _Compiled | None:
        for rule in self._compiled:
            if rule.for_tables and rule.matches_caller(principal) and rule.matches_table(namespace, name):
                return rule
        return None

    def by_name(self, principal: Principal, namespace: Sequence[str], name: str) -> frozenset[Privilege] | None:
        """What a rule naming the table (by `tables` or `namespaces`) gives `principal` on it, when such a rule
        decides the table; None when a rule for every object decides it, or none does. A plan of the table by
        its metadata location gets no more than this (a deny by name covers its files)."""
        rule = self._deciding(principal, namespace, name)
        return None if rule is None or rule.any_object else rule.grants - SERVICE_PRIVILEGES

    def on_location(self, principal: Principal, location: str) -> frozenset[Privilege]:
        """What `principal` may do on the table whose metadata file is `location` (a plan by location): the
        location as storage reads it (a URI; local paths resolved), which the rules' patterns were made like."""
        rule = self._deciding_location(principal, location)
        if rule is None:
            return NOTHING
        return (
            rule.grants - SERVICE_PRIVILEGES - {Privilege.CREDENTIALS}
        )  # never vended for a location nobody vouches for

    def restriction_at(self, principal: Principal, location: str) -> Restriction | None:
        """What the rule deciding the metadata location `location` for `principal` restricts of its reads."""
        rule = self._deciding_location(principal, location)
        return rule.restriction if rule is not None else None

    def _deciding_location(self, principal: Principal, location: str) -> _Compiled | None:
        for rule in self._compiled:
            if rule.for_tables and rule.matches_caller(principal) and rule.matches_location(location):
                return rule
        return None

    def on_service(self, principal: Principal) -> frozenset[Privilege]:
        """The service-level privileges (metrics): the first rule without objects that matches the caller."""
        for rule in self._compiled:
            if rule.for_service and rule.matches_caller(principal):
                return rule.grants & SERVICE_PRIVILEGES
        return NOTHING

"""One request's access: its principal and the policy in force when it was authenticated, asked at every
door before anything of a table is read or answered.

A table the principal may not list is answered exactly as a table that does not exist (the same status,
error type and message), so that nothing tells it the table is there; one it may list but lacks the
privilege for is a 403 naming the principal and the privilege (as Polaris words it).

A table whose reads the policy restricts for the principal (a rule's row filter or column masks) is planned
and aggregated under its restrictions only for a client that declares it enforces them (`enforces`: the
`read-restrictions` capability of X-Iceberg-Client-Capabilities), and by its name only; no storage
credentials are vended for it, to anyone (a plan's answers carry presigned URLs of exactly its files instead,
io/presigning.py). Any other client gets its metadata alone (LoadTable, with its
read-restrictions) and a 403 saying why for the rest, so that nothing is ever served as if it were
unrestricted."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NoReturn

from planner_service.access.audit import audit
from planner_service.access.policy import EVERY_PRIVILEGE, Policy, Privilege
from planner_service.access.principals import ANONYMOUS, Principal
from planner_service.access.restrictions import Restriction
from planner_service.catalog.base import TableIdentifier, missing_location, missing_table
from planner_service.catalog.router import CatalogRouter
from planner_service.errors import ForbiddenError, NoSuchTableError
from planner_service.io.locations import Location
from planner_service.io.roots import Roots

_READS = frozenset({Privilege.PLAN, Privilege.CREDENTIALS})  # what reads a restricted table's rows or files
CAPABILITIES_HEADER = "x-iceberg-client-capabilities"  # Iceberg's ClientCapability values, comma-separated
ENFORCES_CAPABILITY = "read-restrictions"  # a client that enforces read restrictions (apache/iceberg #16394)
_OPERATIONS = {  # how a denial names what was asked
    Privilege.LIST: "LIST_TABLE",
    Privilege.READ_METADATA: "LOAD_TABLE",
    Privilege.PLAN: "PLAN_TABLE_SCAN",
    Privilege.CREDENTIALS: "LOAD_TABLE_WITH_READ_DELEGATION",
    Privilege.METRICS: "READ_METRICS",
}


@dataclass(frozen=True)
class TableAccess:
    principal: Principal = ANONYMOUS
    policy: Policy | None = None  # None: no policy, everything allowed
    enforces: bool = False  # the client declared that it enforces read restrictions (ENFORCES_CAPABILITY)

    def on_table(self, identifier: TableIdentifier) -> frozenset[Privilege]:
        if self.policy is None:
            return EVERY_PRIVILEGE
        return self.policy.on_table(self.principal, identifier.namespace, identifier.name)

    def on_location(self, location: Location, names: Sequence[TableIdentifier] = ()) -> frozenset[Privilege]:
        """A table by metadata location, as storage reads it (io/roots.Roots.resolve), known to the catalogs
        by `names`: what the location's rules give, capped by what rules naming the table give (a deny on a
        table covers its metadata files); never credentials (nobody vouches for the location)."""
        if self.policy is None:
            return EVERY_PRIVILEGE - {Privilege.CREDENTIALS}
        granted = self.policy.on_location(self.principal, location.uri)
        for name in names:
            by_name = self.policy.by_name(self.principal, name.namespace, name.name)
            if by_name is not None:
                granted &= by_name
        return granted

    def may(self, identifier: TableIdentifier, privilege: Privilege) -> bool:
        if privilege in _READS and self.restriction(identifier) is not None and not self._served(privilege):
            return False
        return privilege in self.on_table(identifier)

    def _served(self, privilege: Privilege) -> bool:
        """Whether a restricted table's `privilege` is served to this client: plans to one that enforces
        restrictions; credentials to nobody (they would read every row and value)."""
        return privilege is not Privilege.CREDENTIALS and self.enforces

    @property
    def restricts(self) -> bool:
        """Whether the policy restricts anybody's reads (else no table is restricted for anyone)."""
        return self.policy is not None and self.policy.restricts

    def restriction(self, identifier: TableIdentifier) -> Restriction | None:
        """What the policy restricts of the principal's reads of the table (None: nothing)."""
        if self.policy is None or not self.policy.restricts:
            return None
        return self.policy.restriction(self.principal, identifier.namespace, identifier.name)

    def require(self, identifier: TableIdentifier, privilege: Privilege) -> frozenset[Privilege]:
        """The principal's privileges on the table, when they include `privilege`; else the error of a
        missing table (it may not list it) or a 403 (a plan or credentials of a table whose reads are
        restricted for it, too)."""
        granted = self.on_table(identifier)
        if privilege not in granted:
            self._deny(str(identifier), privilege, Privilege.LIST in granted)
            if Privilege.LIST not in granted:
                raise missing_table(identifier)
            raise self._forbidden(f"table {identifier}", privilege)
        if privilege in _READS:
            self.refuse_restricted(identifier, privilege)
        return granted

    def refuse_restricted(self, identifier: TableIdentifier, privilege: Privilege = Privilege.PLAN) -> None:
        """403 when the policy restricts the principal's reads of the table and `privilege` is not served
        under restrictions to this client (credentials, never; plans and aggregates, to a client that does
        not enforce them)."""
        restriction = self.restriction(identifier)
        if restriction is not None and not self._served(privilege):
            self._deny(str(identifier), privilege, True)
            raise self._restricted(f"table {identifier}", restriction, privilege)

    def require_location(
        self,
        sent: str,
        privilege: Privilege,
        roots: Roots,
        catalog: CatalogRouter,
        upstream: Callable[[TableIdentifier], object] | None = None,
    ) -> frozenset[Privilege]:
        """The privileges on the table of the metadata file `sent`, when they include `privilege`; else the
        error of a missing table or a 403, in the words of the location as sent. Decided on the location as
        storage reads it (roots.resolve: every spelling of one file alike) and on every name the catalogs give
        the table in its directory (a deny by name is a deny by location); the audit records the location
        read. With `upstream` (rest_catalog_delegation: the upstream decides who reads a table, and it knows
        tables by name), the location is planned only when the upstream loads, for this caller, every table it
        named there, or when it lies under a root the service was configured with, never because another
        caller loaded it."""
        location = roots.resolve(sent)
        wanted = self.policy is not None or upstream is not None
        names = catalog.tables_at(roots.table_directory(location)) if wanted else []
        granted = self.on_location(location, names)
        if privilege not in granted:
            self._deny(location.uri, privilege, Privilege.LIST in granted)
            if Privilege.LIST not in granted:
                raise missing_location(sent)
            raise self._forbidden(f"metadata location {sent}", privilege)
        if self.policy is not None and self.policy.restricts:
            restrictions = [self.policy.restriction_at(self.principal, location.uri)]
            restrictions += [self.policy.restriction(self.principal, n.namespace, n.name) for n in names]
            if (restriction := next((r for r in restrictions if r is not None), None)) is not None:
                self._deny(location.uri, privilege, True)
                raise self._restricted(f"metadata location {sent}", restriction, None)
        if upstream is not None:
            if not names and not roots.configured(location):
                self._deny_location(sent, location, privilege)
            for name in names:
                try:
                    upstream(name)
                except (NoSuchTableError, ForbiddenError):
                    self._deny_location(sent, location, privilege)
        return granted

    def _deny_location(self, sent: str, location: Location, privilege: Privilege) -> NoReturn:
        """Answer a location one may not plan as a missing table (audited)."""
        self._deny(location.uri, privilege, False)
        raise missing_location(sent)

    def require_service(self, privilege: Privilege) -> None:
        """A privilege of the service (metrics). A delegated principal (a token only the upstream catalog
        judges, rest_catalog_delegation) has it only when a rule gives it: any string is such a token."""
        if self.policy is None:
            granted = self.principal.kind != "delegated"
        else:
            granted = privilege in self.policy.on_service(self.principal)
        if not granted:
            self._deny(None, privilege, True)
            raise self._forbidden("this service", privilege)

    def visible(self, identifiers: Iterable[TableIdentifier]) -> list[TableIdentifier]:
        """The tables the principal may list, in the order given."""
        if self.policy is None:
            return list(identifiers)
        return [t for t in identifiers if Privilege.LIST in self.on_table(t)]

    def audit_plan(self, table: str, snapshot_id: int | None, files_planned: int) -> None:
        """The audit line of a plan answered: who, which table and snapshot, how many files."""
        audit(
            "plan",
            self.principal.name,
            Privilege.PLAN.value,
            "allowed",
            table,
            snapshot=snapshot_id,
            files_planned=files_planned,
        )

    def audit_not_modified(self, table: str) -> None:
        """The audit line of a plan answered 304 (the caller holds it already, as its ETag says)."""
        audit("plan", self.principal.name, Privilege.PLAN.value, "not-modified", table)

    def audit_credentials(self, table: str, outcome: str) -> None:
        """The audit line of credentials vended, passed on, withheld or refused."""
        audit("credentials", self.principal.name, Privilege.CREDENTIALS.value, outcome, table)

    def audit_presigned(self, table: str, files: int) -> None:
        """The audit line of an answer that carries presigned URLs of `files` files (a restricted plan's: what
        the plan privilege gives such a principal instead of credentials)."""
        audit("credentials", self.principal.name, Privilege.PLAN.value, "presigned", table, files=files)

    def _restricted(self, what: str, restriction: Restriction, privilege: Privilege | None) -> ForbiddenError:
        """The 403 of a read not served under the restriction (`privilege` None: by metadata location)."""
        kinds = [
            k
            for k, present in (("a row filter", restriction.row_filter), ("column masks", restriction.column_masks))
            if present
        ]
        head = (
            f"Reads of {what} are restricted for principal '{self.principal.name}' by access rule "
            f"{restriction.rule} ({' and '.join(kinds)})"
        )
        if privilege is None:
            why = "a restricted table is planned by its catalog name only, never by a metadata location"
        elif privilege is Privilege.CREDENTIALS:
            why = "no storage credentials are vended for it (they would read every row and value)"
        else:
            why = (
                "this client did not declare that it enforces read restrictions (the header "
                f"X-Iceberg-Client-Capabilities: {ENFORCES_CAPABILITY}), so nothing of the table's rows is planned "
                "or aggregated for it; read it with scan-planner's PySpark client (plan_and_read, the data "
                "source), which enforces them. LoadTable answers its metadata, with its read-restrictions"
            )
        return ForbiddenError(f"{head}: {why}")

    def _forbidden(self, what: str, privilege: Privilege) -> ForbiddenError:
        return ForbiddenError(
            f"Principal '{self.principal.name}' is not authorized for op {_OPERATIONS[privilege]} on {what} "
            f"(it needs the {privilege.value} privilege)"
        )

    def _deny(self, table: str | None, privilege: Privilege, visible: bool) -> None:
        audit("denied", self.principal.name, privilege.value, "denied", table, answered=403 if visible else 404)

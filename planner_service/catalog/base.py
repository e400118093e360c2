"""What every catalog shares: table identifiers, loaded tables, and reading a metadata.json."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from planner_service.errors import (
    MAX_COMPARED_NAMES,
    BadRequestError,
    NoSuchTableError,
    did_you_mean,
    nearest_names,
    quoted,
)
from planner_service.io.fileio import FileIO, FileNotFound
from planner_service.io.locations import Location
from planner_service.metadata.table_metadata import TableMetadata, parse_table_metadata


@dataclass(frozen=True, order=True)
class TableIdentifier:
    namespace: tuple[str, ...]
    name: str

    @classmethod
    def parse(cls, text: str) -> TableIdentifier:
        parts = [p for p in text.split(".")]
        if len(parts) < 2 or any(not p for p in parts):
            raise BadRequestError(f"Invalid table name {quoted(text)}: expected 'namespace.table'")
        return cls.of(tuple(parts[:-1]), parts[-1])

    @classmethod
    def of(cls, namespace: tuple[str, ...], name: str) -> TableIdentifier:
        """An identifier from a client: each level checked as a name (check_name)."""
        for level in namespace:
            check_name(level, "namespace level")
        return cls(namespace, check_name(name, "table name"))

    def __str__(self) -> str:
        return ".".join((*self.namespace, self.name))


MAX_NAME_BYTES = 255  # a name longer than a file name cannot be a directory of a warehouse
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f/\\]")


def check_name(name: str, what: str) -> str:
    """`name` when it can name a namespace level or table anywhere (a directory of a warehouse, a row of
    a SQL catalog): not empty, `.` or `..`, at most MAX_NAME_BYTES bytes of UTF-8, without control
    characters or path separators. Otherwise a 400 that quotes at most 80 characters of it."""
    problem = None
    if name in ("", ".", ".."):
        problem = "not a name"
    elif len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        problem = f"longer than {MAX_NAME_BYTES} bytes"
    elif _FORBIDDEN.search(name):
        problem = "control characters and path separators (/ and \\) are not allowed"
    if problem is not None:
        raise BadRequestError(f"Invalid {what} {quoted(name)}: {problem}")
    return name


@dataclass(frozen=True)
class LoadedTable:
    name: str  # the identifier, or the metadata location for tables loaded by location
    metadata_location: str
    metadata: TableMetadata
    vouched: bool = False  # a catalog named it (credentials are vended only for such tables)
    vended: list[dict[str, Any]] | None = None  # what an upstream catalog vended to the caller (delegation)

    @property
    def identifier(self) -> TableIdentifier | None:
        """The catalog name it was loaded by; None for a table loaded by its metadata location."""
        return TableIdentifier.parse(self.name) if self.vouched else None


class Catalog(Protocol):
    def load_table(self, identifier: TableIdentifier) -> LoadedTable: ...

    def list_namespaces(self) -> list[tuple[str, ...]]: ...

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]: ...

    def tables_at(self, directory: Location) -> list[TableIdentifier]:
        """The names this catalog gives the table in `directory` (io/roots.table_directory), as far as it
        knows: a plan by metadata location is decided on them too."""
        ...


def missing_table(identifier: TableIdentifier, listable: Iterable[TableIdentifier] = ()) -> NoSuchTableError:
    """The one error of a table no catalog has (and of one the caller may not see: the same words), with the
    nearest of `listable`, the tables the caller may list: a function of the name asked and of what the
    caller sees alone, so that a table it may not see is answered exactly as one that is not there."""
    return NoSuchTableError(f"Table does not exist: {identifier}{_did_you_mean_table(identifier, listable)}")


def _did_you_mean_table(identifier: TableIdentifier, listable: Iterable[TableIdentifier]) -> str:
    """' (did you mean ns.t?)': the tables named nearest to `identifier` in its namespace, or, when the caller
    sees no such namespace, in the namespaces named nearest to it (a typo in either part, or in both)."""
    by_namespace: dict[str, list[str]] = {}
    for table in itertools.islice(listable, MAX_COMPARED_NAMES):
        by_namespace.setdefault(".".join(table.namespace), []).append(table.name)
    namespace = ".".join(identifier.namespace)
    if namespace in by_namespace:
        near = [f"{namespace}.{name}" for name in nearest_names(identifier.name, by_namespace[namespace])]
    else:
        near = []
        for ns in nearest_names(namespace, by_namespace):
            names = by_namespace[ns]
            same = [identifier.name] if identifier.name in names else []
            near += [f"{ns}.{name}" for name in same + nearest_names(identifier.name, names)]
    return did_you_mean(near[:3])


def missing_location(location: str) -> NoSuchTableError:
    """The one error of a metadata location that holds no table (or one the caller may not see)."""
    return NoSuchTableError(f"Table does not exist: metadata file not found at {location}")


def read_metadata(io: FileIO, location: str, table_name: str | None = None) -> TableMetadata:
    """Read and parse one metadata.json (kept by location: a metadata file never changes once written);
    a missing file means a missing table."""
    try:
        return io.read_parsed(location, "table-metadata", lambda data: parse_table_metadata(data, location))
    except FileNotFound:
        if table_name:
            raise NoSuchTableError(
                f"Table {table_name} does not exist: metadata file not found at {location}"
            ) from None
        raise missing_location(location) from None


def load_by_metadata_location(io: FileIO, location: str) -> LoadedTable:
    return LoadedTable(location, location, read_metadata(io, location))

"""What every catalog shares: table identifiers, loaded tables, and reading a metadata.json."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from planner_service.errors import BadRequestError, NoSuchTableError
from planner_service.io.fileio import FileIO, FileNotFound
from planner_service.metadata.table_metadata import TableMetadata, parse_table_metadata


@dataclass(frozen=True, order=True)
class TableIdentifier:
    namespace: tuple[str, ...]
    name: str

    @classmethod
    def parse(cls, text: str) -> TableIdentifier:
        parts = [p for p in text.split(".")]
        if len(parts) < 2 or any(not p for p in parts):
            raise BadRequestError(f"Invalid table name '{text}': expected 'namespace.table'")
        return cls(tuple(parts[:-1]), parts[-1])

    def __str__(self) -> str:
        return ".".join((*self.namespace, self.name))


@dataclass(frozen=True)
class LoadedTable:
    name: str  # the identifier, or the metadata location for tables loaded by location
    metadata_location: str
    metadata: TableMetadata


class Catalog(Protocol):
    def load_table(self, identifier: TableIdentifier) -> LoadedTable: ...

    def list_namespaces(self) -> list[tuple[str, ...]]: ...

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]: ...


def read_metadata(io: FileIO, location: str, table_name: str | None = None) -> TableMetadata:
    """Read and parse one metadata.json (kept by location: a metadata file never changes once written);
    a missing file means a missing table."""
    try:
        return io.read_parsed(location, "table-metadata", lambda data: parse_table_metadata(data, location))
    except FileNotFound:
        what = f"Table {table_name}" if table_name else "Table"
        raise NoSuchTableError(f"{what} does not exist: metadata file not found at {location}") from None


def load_by_metadata_location(io: FileIO, location: str) -> LoadedTable:
    return LoadedTable(location, location, read_metadata(io, location))

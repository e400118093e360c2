"""One catalog over the configured sources: explicit table locations, a SQL catalog, an upstream REST
catalog, a warehouse of Hadoop-style tables (or the embedded demo). A name resolves in that order; listings
are their union."""

from __future__ import annotations

from collections.abc import Sequence

from planner_service.catalog.base import (
    Catalog,
    LoadedTable,
    TableIdentifier,
    load_by_metadata_location,
    missing_table,
)
from planner_service.catalog.hadoop import HadoopCatalog
from planner_service.catalog.rest import RestCatalog, RestCatalogConfig
from planner_service.catalog.sql import SqlCatalog
from planner_service.errors import NoSuchNamespaceError, NoSuchTableError
from planner_service.io.fileio import FileIO
from planner_service.io.locations import Location
from planner_service.io.roots import table_directory


class ExplicitTables:
    """Tables named in the settings: `{"ns.name": "<metadata.json location>"}`."""

    def __init__(self, io: FileIO, tables: dict[str, str]) -> None:
        self.io = io
        self._tables = {TableIdentifier.parse(name): location for name, location in tables.items()}
        self._directories: dict[Location, list[TableIdentifier]] = {}
        for identifier, location in self._tables.items():
            self._directories.setdefault(table_directory(location), []).append(identifier)

    def tables_at(self, directory: Location) -> list[TableIdentifier]:
        return list(self._directories.get(directory, ()))

    def load_table(self, identifier: TableIdentifier) -> LoadedTable:
        location = self._tables.get(identifier)
        if location is None:
            raise NoSuchTableError(f"Table does not exist: {identifier}")
        loaded = load_by_metadata_location(self.io, location)
        return LoadedTable(str(identifier), loaded.metadata_location, loaded.metadata, vouched=True)

    def list_namespaces(self) -> list[tuple[str, ...]]:
        return sorted({t.namespace for t in self._tables})

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]:
        found = sorted(t for t in self._tables if t.namespace == namespace)
        if not found:
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(namespace)}")
        return found


class CatalogRouter:
    """Resolves names through `sources` in order; the first that has the table wins."""

    def __init__(self, sources: Sequence[Catalog]) -> None:
        self.sources = list(sources)

    @classmethod
    def of(
        cls,
        io: FileIO,
        tables: dict[str, str] | None = None,
        catalog_uri: str | None = None,
        catalog_name: str = "default",
        warehouse: str | None = None,
        rest: RestCatalogConfig | None = None,
    ) -> CatalogRouter:
        sources: list[Catalog] = []
        if tables:
            sources.append(ExplicitTables(io, tables))
        if catalog_uri:
            sources.append(SqlCatalog(io, catalog_uri, catalog_name))
        if rest is not None:
            sources.append(RestCatalog(io, rest))
        if warehouse:
            sources.append(HadoopCatalog(io, warehouse))
        return cls(sources)

    def load_table(self, identifier: TableIdentifier) -> LoadedTable:
        """The first source's that has it; none: missing_table, the same words whichever sources were asked
        (a table a caller may not see is answered with them too)."""
        for source in self.sources:
            try:
                return source.load_table(identifier)
            except NoSuchTableError:
                continue
        raise missing_table(identifier)

    def list_namespaces(self) -> list[tuple[str, ...]]:
        return sorted({ns for source in self.sources for ns in source.list_namespaces()})

    def tables_at(self, directory: Location) -> list[TableIdentifier]:
        """Every name any source gives the table in `directory`."""
        return sorted({t for source in self.sources for t in source.tables_at(directory)})

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]:
        found: set[TableIdentifier] = set()
        exists = False
        for source in self.sources:
            try:
                found.update(source.list_tables(namespace))
                exists = True
            except NoSuchNamespaceError:
                continue
        if not exists:
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(namespace)}")
        return sorted(found)

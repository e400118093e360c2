"""Hadoop-style tables: a table directory with metadata/version-hint.text and vN.metadata.json files,
and a warehouse directory holding them as WAREHOUSE/ns/name (Iceberg's HadoopCatalog layout)."""

from __future__ import annotations

import re
from dataclasses import replace

from iceberg_io import join
from planner_service.catalog.base import LoadedTable, TableIdentifier, read_metadata
from planner_service.errors import LocationNotAllowedError, NoSuchNamespaceError, NoSuchTableError
from planner_service.io.fileio import FileIO, FileNotFound
from planner_service.io.locations import Location
from planner_service.io.roots import table_directory

_VERSION_FILE = re.compile(r"v(\d+)(\.gz)?\.metadata\.json(\.gz)?")


def current_metadata_location(io: FileIO, table_location: str) -> str | None:
    """version-hint.text names the version; without it (or if it is stale), the highest vN wins."""
    metadata_dir = join(table_location, "metadata")
    names = io.list_names(metadata_dir)
    versions = {int(m.group(1)): n for n in names if (m := _VERSION_FILE.fullmatch(n))}
    if "version-hint.text" in names:
        try:
            hinted = int(io.read(join(metadata_dir, "version-hint.text")).decode().strip())
        except (FileNotFound, ValueError):
            hinted = -1
        # Java HadoopTableOperations: a newer version than the hint may have been committed since
        while hinted + 1 in versions:
            hinted += 1
        if hinted in versions:
            return join(metadata_dir, versions[hinted])
    if not versions:
        return None
    return join(metadata_dir, versions[max(versions)])


def load_table_directory(io: FileIO, table_location: str, name: str | None = None) -> LoadedTable:
    location = current_metadata_location(io, table_location)
    if location is None:
        raise NoSuchTableError(f"Table {name or table_location} does not exist: no metadata under {table_location}")
    return LoadedTable(name or table_location, location, read_metadata(io, location, name))


class HadoopCatalog:
    """Tables at WAREHOUSE/<namespace levels>/<name>."""

    def __init__(self, io: FileIO, warehouse: str) -> None:
        self.io = io
        self.warehouse = warehouse.rstrip("/")
        self._root = table_directory(join(self.warehouse, "metadata", "x"))  # the warehouse, resolved

    def tables_at(self, directory: Location) -> list[TableIdentifier]:
        """The name a directory under the warehouse has as a table (ns.../name), whether or not it is one."""
        if not directory.within(self._root) or directory == self._root:
            return []
        parts = directory.path[len(self._root.path.rstrip("/")) + 1 :].split("/")
        return [TableIdentifier(tuple(parts[:-1]), parts[-1])] if len(parts) >= 2 else []

    def load_table(self, identifier: TableIdentifier) -> LoadedTable:
        location = join(self.warehouse, *identifier.namespace, identifier.name)
        if current_metadata_location(self.io, location) is None:
            raise NoSuchTableError(f"Table does not exist: {identifier}")
        return replace(load_table_directory(self.io, location, str(identifier)), vouched=True)

    def list_namespaces(self) -> list[tuple[str, ...]]:
        """As Java's HadoopCatalog lists them: the warehouse's directories that are not tables (a README or
        any other file beside them is no namespace)."""
        names = self.io.list_names(self.warehouse, directories_only=True)
        return [(name,) for name in names if not self._is_table(join(self.warehouse, name))]

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]:
        """The namespace directory's subdirectories that hold table metadata (HadoopCatalog.isTableDir)."""
        location = join(self.warehouse, *namespace)
        if not self.io.is_directory(location):
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(namespace)}")
        names = self.io.list_names(location, directories_only=True)
        return [TableIdentifier(namespace, n) for n in names if self._is_table(join(location, n))]

    def _is_table(self, location: str) -> bool:
        """A directory with table metadata; a link that leads outside the roots is not listed."""
        try:
            return current_metadata_location(self.io, location) is not None
        except LocationNotAllowedError:
            return False

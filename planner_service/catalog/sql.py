"""A SQL catalog: the `iceberg_tables` table shared by Iceberg Java's JdbcCatalog and PyIceberg's SqlCatalog."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from planner_service.catalog.base import LoadedTable, TableIdentifier, read_metadata
from planner_service.errors import NoSuchNamespaceError, NoSuchTableError, StorageError
from planner_service.io.fileio import FileIO
from planner_service.io.locations import Location
from planner_service.io.roots import REFRESH_SECONDS, table_directory

if TYPE_CHECKING:
    import sqlalchemy as sa


class SqlCatalog:
    def __init__(self, io: FileIO, uri: str, catalog_name: str = "default") -> None:
        """`uri` is a SQLAlchemy URL (sqlite:///path.db, postgresql://...) or a path to a sqlite file."""
        if "://" not in uri:
            uri = f"sqlite:///{uri}"
        import sqlalchemy as sa  # here: a service without a SQL catalog does not load it (~26 MB)

        self.io = io
        self.catalog_name = catalog_name
        self._engine = sa.create_engine(uri)
        self._directories: tuple[float, dict[Location, list[TableIdentifier]]] = (float("-inf"), {})
        self._lock = threading.Lock()
        io.roots.follow(self.metadata_locations)

    def _query(self, sql: str, **params: object) -> list[sa.Row[tuple[object, ...]]]:
        import sqlalchemy as sa

        try:
            with self._engine.connect() as conn:
                return list(conn.execute(sa.text(sql), params))
        except sa.exc.SQLAlchemyError as exc:
            raise StorageError(f"SQL catalog query failed: {exc.__class__.__name__}: {exc}") from None

    def load_table(self, identifier: TableIdentifier) -> LoadedTable:
        rows = self._query(
            "SELECT metadata_location FROM iceberg_tables "
            "WHERE catalog_name = :c AND table_namespace = :ns AND table_name = :t",
            c=self.catalog_name,
            ns=".".join(identifier.namespace),
            t=identifier.name,
        )
        if not rows or rows[0][0] is None:
            raise NoSuchTableError(f"Table does not exist: {identifier}")
        location = str(rows[0][0])
        self.io.roots.trust(location)  # the catalog vouches for the table: its directory may be read
        return LoadedTable(str(identifier), location, read_metadata(self.io, location, str(identifier)), vouched=True)

    def metadata_locations(self) -> list[str]:
        """Every table's current metadata location (the roots of a service that follows its catalog)."""
        rows = self._query(
            "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = :c AND metadata_location IS NOT NULL",
            c=self.catalog_name,
        )
        return [str(r[0]) for r in rows]

    def tables_at(self, directory: Location) -> list[TableIdentifier]:
        """The tables whose current metadata file lies in `directory` (the catalog asked at most every
        REFRESH_SECONDS)."""
        with self._lock:
            asked, known = self._directories
            if time.monotonic() - asked > REFRESH_SECONDS:
                rows = self._query(
                    "SELECT table_namespace, table_name, metadata_location FROM iceberg_tables "
                    "WHERE catalog_name = :c AND metadata_location IS NOT NULL",
                    c=self.catalog_name,
                )
                known = {}
                for row in rows:
                    namespace, name, location = (str(value) for value in row)
                    found = TableIdentifier(tuple(namespace.split(".")), name)
                    known.setdefault(table_directory(location), []).append(found)
                self._directories = (time.monotonic(), known)
        return list(known.get(directory, ()))

    def list_namespaces(self) -> list[tuple[str, ...]]:
        rows = self._query(
            "SELECT DISTINCT table_namespace FROM iceberg_tables WHERE catalog_name = :c", c=self.catalog_name
        )
        return sorted(tuple(str(r[0]).split(".")) for r in rows)

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]:
        rows = self._query(
            "SELECT table_name FROM iceberg_tables WHERE catalog_name = :c AND table_namespace = :ns",
            c=self.catalog_name,
            ns=".".join(namespace),
        )
        if not rows and namespace not in self.list_namespaces():
            raise NoSuchNamespaceError(f"Namespace does not exist: {'.'.join(namespace)}")
        return sorted(TableIdentifier(namespace, str(r[0])) for r in rows)


def sql_catalog_hint(warehouse: Path) -> str | None:
    """What to say when `--warehouse` names a directory that holds a sqlite SQL catalog (as the demo warehouse
    and PyIceberg's SqlCatalog make): its tables are the catalog's, not Hadoop-style directories, so every
    one of them would answer 404 as a warehouse. None when it holds none."""
    for candidate in sorted(warehouse.glob("*.db")) if warehouse.is_dir() else ():
        try:
            with contextlib.closing(sqlite3.connect(f"file:{candidate}?mode=ro", uri=True)) as db:
                names = [row[0] for row in db.execute("SELECT DISTINCT catalog_name FROM iceberg_tables")]
        except sqlite3.Error:
            continue
        name = f" --catalog-name {names[0]}" if len(names) == 1 else f" --catalog-name <one of {', '.join(names)}>"
        return (
            f"{warehouse} holds a SQL catalog ({candidate.name}), not Hadoop-style tables "
            f"(<namespace>/<table>/metadata/version-hint.text): served with --warehouse, its tables answer 404. "
            f"Serve it with: scan-planner serve --catalog-uri {candidate}{name if names else ''}"
        )
    return None

"""Hadoop-style table directories follow Iceberg Java's HadoopTableOperations: version-hint.text names the
version, a newer vN+1 committed after the hint wins, and without a hint the highest vN is current."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from planner_service.catalog.base import TableIdentifier
from planner_service.catalog.hadoop import HadoopCatalog, current_metadata_location, load_table_directory
from planner_service.errors import CorruptMetadataError, NoSuchNamespaceError, NoSuchTableError
from planner_service.io.fileio import FileIO


def _metadata(location: str, last_updated: int) -> dict[str, object]:
    return {
        "format-version": 2,
        "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": location,
        "last-sequence-number": 0,
        "last-updated-ms": last_updated,
        "last-column-id": 1,
        "current-schema-id": 0,
        "schemas": [
            {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": True, "type": "long"}]}
        ],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {},
        "current-snapshot-id": -1,
        "snapshots": [],
        "snapshot-log": [],
        "metadata-log": [],
    }


def _table(root: Path, versions: list[int], hint: int | None, gz: frozenset[int] = frozenset()) -> Path:
    meta = root / "metadata"
    meta.mkdir(parents=True)
    for v in versions:
        body = json.dumps(_metadata(str(root), v)).encode()
        if v in gz:
            (meta / f"v{v}.gz.metadata.json").write_bytes(gzip.compress(body))
        else:
            (meta / f"v{v}.metadata.json").write_bytes(body)
    if hint is not None:
        (meta / "version-hint.text").write_text(f"{hint}\n")
    return root


def test_version_hint_then_newer_versions(tmp_path: Path) -> None:
    t = _table(tmp_path / "t", [1, 2, 3], hint=2)
    assert str(current_metadata_location(FileIO(), str(t))).endswith("v3.metadata.json")


def test_without_hint_highest_version_wins_including_gzip(tmp_path: Path) -> None:
    t = _table(tmp_path / "t", [1, 2, 10], hint=None, gz=frozenset({10}))
    loaded = load_table_directory(FileIO(), str(t))
    assert loaded.metadata_location.endswith("v10.gz.metadata.json")
    assert loaded.metadata.last_updated_ms == 10


def test_warehouse_catalog(tmp_path: Path) -> None:
    _table(tmp_path / "db" / "events", [1], hint=1)
    catalog = HadoopCatalog(FileIO(), str(tmp_path))
    assert catalog.list_namespaces() == [("db",)]
    assert catalog.list_tables(("db",)) == [TableIdentifier(("db",), "events")]
    assert catalog.load_table(TableIdentifier.parse("db.events")).metadata.format_version == 2
    with pytest.raises(NoSuchTableError, match=r"db\.nope"):
        catalog.load_table(TableIdentifier.parse("db.nope"))
    with pytest.raises(NoSuchNamespaceError, match="nope"):
        catalog.list_tables(("nope",))


def test_only_directories_are_namespaces_and_tables(tmp_path: Path) -> None:
    """As Java's HadoopCatalog lists a warehouse (isNamespace / isTableDir: directories only): regular files
    beside the namespaces, or beside the tables, are neither, and a file is no namespace to list."""
    _table(tmp_path / "db" / "events", [1], hint=1)
    (tmp_path / "README.md").write_text("# the warehouse\n")
    (tmp_path / "tables.json").write_text("{}")
    (tmp_path / "db" / "notes.txt").write_text("not a table")
    (tmp_path / "db" / "empty").mkdir()  # a directory without metadata: not a table
    catalog = HadoopCatalog(FileIO(), str(tmp_path))
    assert catalog.list_namespaces() == [("db",)]
    assert catalog.list_tables(("db",)) == [TableIdentifier(("db",), "events")]
    with pytest.raises(NoSuchNamespaceError, match="README"):
        catalog.list_tables(("README.md",))


def test_corrupt_metadata_names_the_file(tmp_path: Path) -> None:
    t = _table(tmp_path / "t", [1], hint=1)
    (t / "metadata" / "v1.metadata.json").write_text("{not json")
    with pytest.raises(CorruptMetadataError, match=r"v1\.metadata\.json"):
        load_table_directory(FileIO(), str(t))

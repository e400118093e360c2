"""Roots: what a service may read, checked by full resolved paths."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from planner_service.errors import LocationNotAllowedError
from planner_service.io.roots import Roots, table_root
from planner_service.service.runtime import service_roots
from planner_service.settings import load_settings


def test_table_root_is_the_parent_of_the_metadata_directory() -> None:
    assert table_root("s3://b/wh/db/t/metadata/v3.metadata.json") == "s3://b/wh/db/t"
    assert table_root("/wh/db/t/metadata/00001-x.metadata.json") == "/wh/db/t"
    assert table_root("/custom/meta/v1.metadata.json") == "/custom/meta"  # write.metadata.path


def test_resolved_paths_are_compared(tmp_path: Path) -> None:
    root, other = tmp_path / "root", tmp_path / "other"
    root.mkdir()
    other.mkdir()
    (root / "link").symlink_to(other)
    roots = Roots([str(root)])
    assert roots.check(f"{root}/a/../b").path == f"{root}/b"
    assert roots.check(f"file://{root}/x").path == f"{root}/x"
    for location in (f"{root}/link/x", f"{root}/../other/x", f"{root}-sibling/x", "relative/x", f"file:{other}"):
        with pytest.raises(LocationNotAllowedError):
            roots.check(location)
    with pytest.raises(LocationNotAllowedError):
        Roots().check(str(root))  # no roots: nothing is served


def test_a_known_directory_still_has_its_files_looked_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Directories are resolved once a second (a plan reads hundreds of manifests from one), files every time:
    a link put in place of a file of a known directory leads outside and is refused; a directory swapped for
    a link is seen once its resolution is a second old."""
    import planner_service.io.roots as roots_module

    root, other = tmp_path / "root", tmp_path / "other"
    (root / "meta").mkdir(parents=True)
    other.mkdir()
    roots = Roots([str(root)])
    assert roots.check(f"{root}/meta/a.avro").path == f"{root}/meta/a.avro"
    (root / "meta" / "b.avro").symlink_to(other / "b.avro")
    with pytest.raises(LocationNotAllowedError):
        roots.check(f"{root}/meta/b.avro")
    (root / "meta").rename(root / "old")
    (root / "meta").symlink_to(other)
    now = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: now + roots_module.REFRESH_SECONDS + 1)  # the clock roots reads
    with pytest.raises(LocationNotAllowedError):
        roots.check(f"{root}/meta/a.avro")


def test_a_followed_catalog_is_asked_again_when_a_location_is_refused(tmp_path: Path) -> None:
    tables: list[str] = []
    asked = []

    def metadata_locations() -> list[str]:
        asked.append(1)
        return list(tables)

    roots = Roots(follow_catalogs=True)
    roots.follow(metadata_locations)
    with pytest.raises(LocationNotAllowedError):
        roots.check(f"{tmp_path}/t/metadata/v1.metadata.json")
    tables.append(f"{tmp_path}/t/metadata/v1.metadata.json")  # the table is created
    roots._asked_at = float("-inf")  # (a second later)
    assert roots.check(f"{tmp_path}/t/metadata/snap-1.avro").path == f"{tmp_path}/t/metadata/snap-1.avro"
    with pytest.raises(LocationNotAllowedError):
        roots.check(f"{tmp_path}/u/x")
    with pytest.raises(LocationNotAllowedError):
        roots.check(f"{tmp_path}/u/y")
    assert len(asked) == 2, "refusals within a second ask the catalog once"


def test_explicit_roots_are_the_whole_list(tmp_path: Path) -> None:
    roots = Roots([str(tmp_path)])
    roots.trust(f"{tmp_path.parent}/t/metadata/v1.metadata.json")  # a catalog's table outside: still refused
    with pytest.raises(LocationNotAllowedError):
        roots.check(f"{tmp_path.parent}/t/metadata/v1.metadata.json")


def test_a_service_serves_what_it_was_configured_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = load_settings(warehouse="wh", tables={"a.t": "s3://lake/t/metadata/v1.metadata.json"}, demo=False)
    roots = service_roots(settings)
    assert roots.describe() == [f"file://{tmp_path}/wh", "s3://lake/t"]
    roots.check("s3://lake/t/metadata/snap-1.avro")
    with pytest.raises(LocationNotAllowedError):
        roots.check("s3://lake/u/metadata/v1.metadata.json")

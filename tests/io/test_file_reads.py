"""FileIO reads regular files only, and no more than a read may take."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner_service.io.fileio import FileIO, UnreadableFile


def test_reads_stop_at_the_ceiling_and_the_recorded_length(tmp_path: Path) -> None:
    f = tmp_path / "m.avro"
    f.write_bytes(b"x" * 100)
    io = FileIO(max_bytes=100)
    assert io.read(str(f)) == b"x" * 100
    assert io.read(str(f), length=100) == b"x" * 100
    with pytest.raises(UnreadableFile, match="longer than 99 bytes \\(its recorded length\\)"):
        io.read(str(f), length=99)
    with pytest.raises(UnreadableFile, match="longer than 50 bytes \\(the max_file_bytes setting\\)"):
        FileIO(max_bytes=50).read(str(f))
    with pytest.raises(UnreadableFile, match="longer than 50 bytes"):
        FileIO(max_bytes=50).read(str(f), length=1000)  # the ceiling holds whatever length is recorded


def test_symlinks_are_read_as_what_they_point_to(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "dir-link").symlink_to(tmp_path)
    io = FileIO()
    assert io.read(str(tmp_path / "link")) == b"data"
    with pytest.raises(UnreadableFile, match="not a regular file"):
        io.read(str(tmp_path / "dir-link"))

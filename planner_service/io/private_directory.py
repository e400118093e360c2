"""Directories the service keeps its own files in (spilled plans, the disk tier of the manifest index): made
for its user alone, and refused when another user could rename or replace what is in them."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path


def private_directory(root: Path) -> Path:
    """`root`, made (mode 0700, with its parents) when absent; PermissionError or NotADirectoryError when
    another user could rename what is in it (check_private)."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    check_private(root)
    return root


def check_private(root: Path) -> None:
    """PermissionError unless only this user can rename what is in `root`: a directory of its own that nobody
    else may write, or one with the sticky bit (as /tmp), where nobody renames another's entries."""
    found = os.lstat(root)
    if not stat.S_ISDIR(found.st_mode):
        raise NotADirectoryError(f"{root} is not a directory (a link or a file)")
    if found.st_mode & stat.S_ISVTX:
        return
    if found.st_uid != os.getuid():
        raise PermissionError(f"{root} belongs to another user (uid {found.st_uid})")
    if found.st_mode & 0o022:
        raise PermissionError(f"{root} is writable by other users (mode {stat.S_IMODE(found.st_mode):o})")


def lowest_priority() -> None:
    """A thread initializer: the thread yields the cores to answering requests (Linux: a thread's own nice
    value)."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)

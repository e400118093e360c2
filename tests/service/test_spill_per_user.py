"""Two users of one machine, each serving at default settings with the same temporary directory: each gets a
spill directory of its own (`scan-planner-plans-<uid>`), so neither start warns that the other's run owns it
(as the one shared default did). A spill directory another user owns, or that others may write, is refused
with a warning that says so; one with the sticky bit (as /tmp) is shared safely."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from planner_service.service.plan_spill import plan_spill
from planner_service.settings import Settings
from tests.processes import free_port, stop, wait_for_port

NOBODY = 65534
SPILL_REFUSED = "plan_spill_directory cannot be used"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="runs a service as another user (nobody): needs root")


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory other users may enter (pytest's temporary directories are closed to them)."""
    root = Path(tempfile.mkdtemp(prefix="scan-planner-users-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _serve(tmp: Path, home: Path, log: Path, user: int | None) -> subprocess.Popen[bytes]:
    port = free_port()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "SCAN_PLANNER_HOME": str(home / "scan-planner"),
        "SCAN_PLANNER_SHUTDOWN_DRAIN_SECONDS": "0",
    }
    argv = [str(Path(sys.executable).with_name("scan-planner")), "serve", "--port", str(port)]
    if user is not None:  # another user, who may read the checkout wherever it is (its writes are its own)
        reads = ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *reads, *argv]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    wait_for_port(port, proc, timeout=120)
    assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=30).status_code == 200
    return proc


@needs_root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) runs the service as nobody")
def test_two_users_serving_at_default_settings_each_spill(open_dir: Path) -> None:
    tmp_path = open_dir
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir(mode=0o1777)
    shared_tmp.chmod(0o1777)  # (mkdir's mode passes through the umask)
    homes = {user: tmp_path / f"home-{user}" for user in (NOBODY, os.getuid())}
    for user, home in homes.items():
        home.mkdir()
        os.chown(home, user, user)
    # the one default all users shared before, made by this user's earlier run: nobody may not write it
    (shared_tmp / "scan-planner-plans").mkdir(mode=0o755)
    running = []
    try:
        for user, home in homes.items():
            log = tmp_path / f"serve-{user}.log"
            running.append(_serve(shared_tmp, home, log, None if user == os.getuid() else user))
        for user in homes:
            spill = shared_tmp / f"scan-planner-plans-{user}"
            assert spill.is_dir() and spill.stat().st_uid == user
            assert spill.stat().st_mode & 0o077 == 0, oct(spill.stat().st_mode)
            assert len([d for d in spill.iterdir() if d.is_dir()]) == 1  # this run's own subdirectory
    finally:
        for proc in running:
            stop(proc)
    for user in homes:
        said = (tmp_path / f"serve-{user}.log").read_text()
        records = [json.loads(line) for line in said.splitlines() if line.startswith("{")]
        assert records and not any(r["msg"].startswith(SPILL_REFUSED) for r in records), said[-2000:]


def _refusal(root: Path, caplog: pytest.LogCaptureFixture) -> str:
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="planner_service.service.plan_spill"):
        assert plan_spill(root, 1 << 20) is None
    (record,) = [r for r in caplog.records if r.getMessage().startswith(SPILL_REFUSED)]
    return str(record.__dict__["error"])  # (the log line's `extra`)


@needs_root
def test_a_directory_another_user_owns_is_refused_saying_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o777)
    theirs.chmod(0o777)  # writable by this user too: still refused, its owner could swap what is in it
    os.chown(theirs, NOBODY, NOBODY)
    assert "belongs to another user" in _refusal(theirs, caplog)


def test_a_directory_others_may_write_is_refused_and_a_sticky_one_shared(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    open_to_all = tmp_path / "open"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    assert "writable by other users" in _refusal(open_to_all, caplog)
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    spill = plan_spill(sticky, 1 << 20)
    assert spill is not None and spill.directory.parent == sticky
    assert spill.directory.stat().st_mode & 0o077 == 0
    spill.close()
    made = tmp_path / "made" / "here"  # absent: made, and made private
    spill = plan_spill(made, 1 << 20)
    assert spill is not None and made.stat().st_mode & 0o077 == 0
    spill.close()


def test_the_default_is_the_users_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # (gettempdir() caches its first answer)
    assert Settings().plan_spill_directory == str(tmp_path / f"scan-planner-plans-{os.getuid()}")

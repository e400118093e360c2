"""Defects of how the service starts and keeps its settings, each reproduced first: workers and replicas
starting together read one signing key (the file appears whole); any error while reloading the settings file
keeps the policy in force and the watcher alive; `serve --workers N` hands its workers the settings in a file
only its user reads, never in the environment (tokens and storage secrets showed in /proc/<pid>/environ)."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import threading
import time
from pathlib import Path

import httpx
import pytest

from planner_service.access.control import AccessHolder, watch_settings_file
from planner_service.access.signing_key import signing_key
from planner_service.settings import Settings, load_settings
from tests.conftest import running_service


def _key_in(home: str, out: multiprocessing.Queue[str], start: float) -> None:
    os.environ["SCAN_PLANNER_HOME"] = home
    time.sleep(max(0.0, start - time.time()))
    out.put(signing_key(Settings()).hex())


def test_processes_starting_together_read_one_signing_key(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    out: multiprocessing.Queue[str] = context.Queue()
    start = time.time() + 0.5
    procs = [context.Process(target=_key_in, args=(str(tmp_path), out, start)) for _ in range(12)]
    for p in procs:
        p.start()
    keys = {out.get(timeout=30) for _ in procs}
    for p in procs:
        p.join(30)
    assert len(keys) == 1 and (tmp_path / "signing-key").read_text().strip() == keys.pop()


def test_a_key_file_seen_before_it_is_written_is_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What an earlier release did (made the file, then wrote it): a process reading it in between waits."""
    monkeypatch.setenv("SCAN_PLANNER_HOME", str(tmp_path))
    path = tmp_path / "signing-key"
    path.touch(0o600)
    written = "ab" * 32
    threading.Timer(0.2, path.write_text, (written,)).start()
    assert signing_key(Settings()).hex() == written


def test_any_error_reloading_keeps_the_policy_and_the_watcher(tmp_path: Path) -> None:
    config = tmp_path / "service.json"
    rules = [{"principals": ["alice"], "privileges": ["plan"]}]
    config.write_text(json.dumps({"auth_tokens": {"alice": "a"}, "access_rules": rules}))
    holder = AccessHolder(load_settings(str(config)), b"k" * 32)

    async def run() -> None:
        watcher = asyncio.get_running_loop().create_task(watch_settings_file(holder, 0.05))
        config.write_text("[" * 200_000)  # json.loads raises RecursionError, no ValueError
        for _ in range(200):  # (a reload is tried every 0.05 s; a loaded machine takes its time)
            await asyncio.sleep(0.05)
            if holder.reloads["failed"]:
                break
        assert holder.reloads["failed"] >= 1 and holder.current.policy is not None
        assert holder.current.policy.rules[0].principals == ["alice"]  # the one in force, kept
        renamed = [{"principals": ["bob"], "privileges": ["plan"]}]
        config.write_text(json.dumps({"auth_tokens": {"alice": "a"}, "access_rules": renamed}))
        for _ in range(100):
            await asyncio.sleep(0.05)
            if holder.current.policy is not None and holder.current.policy.rules[0].principals == ["bob"]:
                break
        assert not watcher.done()
        watcher.cancel()

    asyncio.run(run())
    assert holder.current.policy is not None and holder.current.policy.rules[0].principals == ["bob"]


def test_workers_get_their_settings_in_a_private_file_not_the_environment(tmp_path: Path) -> None:
    secret_token, secret_key = "w0rker-token-never-in-environ", "s3-secret-never-in-environ"
    config = tmp_path / "service.json"
    config.write_text(json.dumps({"auth_tokens": {"alice": secret_token}, "s3_secret_access_key": secret_key}))
    with running_service("--config", str(config), "--workers", "2", "--log-level", "warning") as url:
        family = _service_processes(url.rsplit(":", 1)[1])
        assert len(family) >= 3, family  # (the service, and its two workers at least)
        for pid in family:
            shown = Path(f"/proc/{pid}/environ").read_bytes()
            assert secret_token.encode() not in shown and secret_key.encode() not in shown, pid
        for _ in range(6):  # every worker answers with the token (settings reached them)
            answer = httpx.get(f"{url}/v1/config", headers={"Authorization": f"Bearer {secret_token}"}, timeout=30)
            assert answer.status_code == 200
            assert httpx.get(f"{url}/v1/config", timeout=30).status_code == 401


def _service_processes(port: str) -> list[int]:
    """The `serve` process listening on `port` (by its command line) and its descendants, from /proc."""
    parents: dict[int, int] = {}
    commands: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                commands[int(entry.name)] = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    roots = [pid for pid, argv in commands.items() if "serve" in argv and port in argv]
    found, frontier = list(roots), list(roots)
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found

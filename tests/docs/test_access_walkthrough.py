"""The access-control guide's walkthrough (docs/guides/access-control.md, "Try it on the demo"), run as
written on the demo warehouse: its settings file saved as the guide says, the service started with the
guide's command (on a free port, as the guide allows), its curl commands run from the same directory. What
each principal sees follows from the guide's two rules and the demo's two tables; a plan's files are as
many as PyIceberg plans."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from pathlib import Path

import httpx
from pyiceberg.catalog.sql import SqlCatalog

from planner_service.demo import DEMO_CATALOG_NAME, demo_catalog_uri
from tests.docs.examples import DOCS, REPO, Example, examples_of, for_service
from tests.processes import free_port, stop, wait_for_port

GUIDE = DOCS / "guides" / "access-control.md"
SECTION = "## Try it on the demo"


def _walkthrough() -> list[Example]:
    text = GUIDE.read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    first, last = text.count("\n", 0, start) + 1, text.count("\n", 0, end) + 1
    return [e for e in examples_of(GUIDE) if first <= e.line <= last and e.language != "text"]


def _planned_files(home: Path, table: str) -> int:
    """How many data files PyIceberg plans for a full scan of the demo's table."""
    directory = home / "demo-warehouse"
    catalog = SqlCatalog(DEMO_CATALOG_NAME, uri=demo_catalog_uri(directory), warehouse=f"file://{directory}")
    return len(list(catalog.load_table(table).scan().plan_files()))


def test_the_walkthrough_runs_as_written(demo_home: Path, tmp_path: Path) -> None:
    settings, serve, requests = _walkthrough()
    assert (settings.language, serve.language, requests.language) == ("toml", "bash", "bash")
    (tmp_path / "access.toml").write_text(settings.code)
    port = free_port()
    command = shlex.split(serve.code.strip())
    assert command[:2] == [".venv/bin/scan-planner", "serve"], serve.code
    argv = [str(REPO / command[0]), *command[1:], "--port", str(port)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCAN_PLANNER_")}
    env.update(SCAN_PLANNER_HOME=str(demo_home), SCAN_PLANNER_SHUTDOWN_DRAIN_SECONDS="0")
    started = tmp_path / "serve.log"
    with open(started, "wb") as log:
        proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, proc, timeout=120)
        url = f"http://127.0.0.1:{port}"
        banner = started.read_text()
        assert "authentication: on, by static tokens (2)" in banner, banner
        assert f"grants policy: 2 rules (from {tmp_path / 'access.toml'}" in banner, banner
        assert f"audit: {tmp_path / 'audit.jsonl'}" in banner, banner
        script = for_service(requests.code, url, demo_home)
        ran = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert ran.returncode == 0, ran.stderr
        _check_answers(ran.stdout.splitlines(), demo_home)
        _check_reload(tmp_path / "access.toml", url)
    finally:
        stop(proc)


def _names(listed: str) -> set[str]:
    return {".".join([*t["namespace"], t["name"]]) for t in json.loads(listed)["identifiers"]}


def _check_answers(lines: list[str], home: Path) -> None:
    etl_lists, alice_lists, alice_plans, alice_refused, etl_plans, anonymous, *audit = lines
    assert _names(etl_lists) == {"demo.events", "demo.customers"}
    assert _names(alice_lists) == {"demo.events"}
    assert json.loads(alice_plans) == {"table": "demo.events", "files": _planned_files(home, "demo.events")}
    refused = json.loads(alice_refused)
    assert (refused["code"], refused["type"]) == (404, "NoSuchTableException")
    assert "Table does not exist: demo.customers" in refused["message"]
    assert json.loads(etl_plans) == {"table": "demo.customers", "files": _planned_files(home, "demo.customers")}
    no_token = json.loads(anonymous)
    assert no_token["code"] == 401 and "static tokens (auth_tokens" in no_token["message"]
    assert "/v1/oauth/tokens" not in no_token["message"]  # (no OAuth client is configured: it would refuse)
    records = [json.loads(line) for line in audit]
    assert [(r["principal"], r["table"]) for r in records] == [("alice", "demo.customers"), ("etl", "demo.customers")]
    assert records[0]["outcome"] != records[1]["outcome"]


def _check_reload(settings: Path, url: str) -> None:
    """What the guide says of editing the file: `alice` given `demo.*` plans demo.customers, with no restart."""
    settings.write_text(re.sub(r'tables = \["demo\.events"\]', 'tables = ["demo.*"]', settings.read_text()))
    deadline = time.monotonic() + 15
    while True:
        answer = httpx.post(
            f"{url}/plan", json={"table": "demo.customers"}, headers={"Authorization": "Bearer alice-token"}, timeout=30
        )
        if answer.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert answer.status_code == 200, answer.text

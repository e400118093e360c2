"""The README's first command, `scan-planner serve` with no configuration, serves the demo warehouse (created
on first start): the service the examples of the README and the site then run against (tests/docs). What it
prints is plain: JSON lines without uvicorn's colour codes, and a browser's /favicon.ico is found."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from tests.conftest import running_service

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_first_command_serves_the_demo_warehouse(demo_service: str, demo_home: Path) -> None:
    first = re.search(r"^```bash\n(.*?)^```", README.read_text(), re.MULTILINE | re.DOTALL)
    assert first and re.search(r"\.venv/bin/scan-planner serve\s+(#|$)", first[1], re.MULTILINE)
    assert (demo_home / "demo-warehouse" / ".complete").exists()  # demo_service: that command, on a free port
    tables = httpx.get(f"{demo_service}/v1/namespaces/demo/tables", timeout=30).json()
    assert {t["name"] for t in tables["identifiers"]} == {"events", "customers"}  # (the README names both)


def test_serve_prints_plain_json_lines_and_has_an_icon(demo_home: Path, tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    with running_service(env={"SCAN_PLANNER_HOME": str(demo_home)}, log_path=log) as url:
        icon = httpx.get(f"{url}/favicon.ico", timeout=30)
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
        assert httpx.post(f"{url}/plan", json={"table": "demo.nope"}, timeout=30).status_code == 404
    text = log.read_text()
    assert "\x1b[" not in text and "color_message" not in text
    records = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert any("Uvicorn running" in r["msg"] or "Application startup" in r["msg"] for r in records), text

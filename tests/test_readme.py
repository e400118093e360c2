"""The README's first command, `scan-planner serve` with no configuration, serves the demo warehouse (created
on first start): the service the examples of the README and the site then run against (tests/docs)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_first_command_serves_the_demo_warehouse(demo_service: str, demo_home: Path) -> None:
    first = re.search(r"^```bash\n(.*?)^```", README.read_text(), re.MULTILINE | re.DOTALL)
    assert first and re.search(r"\.venv/bin/scan-planner serve\s+(#|$)", first[1], re.MULTILINE)
    assert (demo_home / "demo-warehouse" / ".complete").exists()  # demo_service: that command, on a free port
    tables = httpx.get(f"{demo_service}/v1/namespaces/demo/tables", timeout=30).json()
    assert tables["identifiers"] == [{"namespace": ["demo"], "name": "events"}]

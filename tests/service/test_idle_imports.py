"""What the service loads before its first plan: only what serving needs. httpx (with the CLI packages it
imports when they are installed: click, rich, pygments) loads when a REST catalog is configured, not
otherwise."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from planner_service.app import create_app
from planner_service.service.runtime import Runtime
from planner_service.settings import Settings
settings = Settings(tables={{"db.t": "/nonexistent/metadata/v1.metadata.json"}}{rest})
create_app(settings)
Runtime.from_settings(settings).close()
print(sorted(m for m in ("httpx", "click", "rich", "pygments") if m in sys.modules))
"""


def _loaded(rest: str = "") -> str:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(rest=rest)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def test_a_service_without_a_rest_catalog_loads_no_http_client() -> None:
    assert _loaded() == "[]"


def test_a_rest_catalog_loads_it() -> None:
    assert "'httpx'" in _loaded(', rest_catalog_uri="http://127.0.0.1:9/catalog"')

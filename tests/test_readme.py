"""The README's quick-start commands run as printed: `scan-planner serve` with no configuration serves
the demo warehouse, and every curl line of the quick start answers 2xx with JSON (or metrics text)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import running_service

README = Path(__file__).resolve().parent.parent / "README.md"


def quick_start_curls() -> list[str]:
    text = README.read_text()
    block = text.split("With no catalog configured", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.startswith("curl ")]


def test_quick_start_is_there() -> None:
    commands = quick_start_curls()
    assert len(commands) >= 6
    assert any('"explain": true' in c for c in commands)


@pytest.mark.skipif(shutil.which("jq") is None, reason="the README pipes one example through jq")
def test_quick_start_runs_as_printed(tmp_path: Path) -> None:
    env = {"SCAN_PLANNER_HOME": str(tmp_path)}  # the demo warehouse is created here on first start
    with running_service(env=env) as url:
        port = url.rsplit(":", 1)[1]
        for command in quick_start_curls():
            command = re.sub(r"localhost:8181", f"127.0.0.1:{port}", command)
            proc = subprocess.run(
                [
                    "bash",
                    "-c",
                    f"set -o pipefail; {command} --fail-with-body"
                    if "|" not in command
                    else f"set -o pipefail; {command}",
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert proc.returncode == 0, (command, proc.stdout[-500:], proc.stderr[-500:])
            if "/metrics" in command:
                assert "scan_planner_requests_total" in proc.stdout
            else:
                body = json.loads(proc.stdout)
                assert "error" not in body, (command, body)
    assert (tmp_path / "demo-warehouse" / ".complete").exists()

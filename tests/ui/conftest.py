"""The pages' tests keep a screenshot of each state they check: in $SCAN_PLANNER_SCREENSHOTS (the docs':
SCAN_PLANNER_SCREENSHOTS=docs/ui), else in the test's temporary directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conformance.reference import REPO


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    configured = os.environ.get("SCAN_PLANNER_SCREENSHOTS")
    directory = (REPO / configured) if configured else tmp_path
    directory.mkdir(parents=True, exist_ok=True)
    return directory

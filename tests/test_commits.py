"""Commit subjects fit a terminal's `git log --oneline` (at most 72 characters, the detail in the body),
for every commit since the rule was made (issue 23)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conformance.reference import REPO

RULE_SINCE = "1620e94"  # the last commit before the rule
MAX_SUBJECT = 72


def test_commit_subjects_are_short() -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    known = subprocess.run(["git", "cat-file", "-e", RULE_SINCE], cwd=REPO, capture_output=True)
    if known.returncode != 0:
        pytest.skip(f"a shallow clone without {RULE_SINCE}")
    subjects = subprocess.run(
        ["git", "log", "--format=%h %s", f"{RULE_SINCE}..HEAD"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    long = [line for line in subjects if len(line.split(" ", 1)[1]) > MAX_SUBJECT]
    assert long == [], "reword these subjects to at most 72 characters (the detail goes in the body)"

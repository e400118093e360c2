"""MkDocs hook (mkdocs.yml `hooks:`): adds the generated reference pages to the site as it is built, so that
they exist only as the code says, never as files someone edits."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: mkdocs loads hooks by path

from mkdocs.structure.files import File, Files

from reference_docs.pages import PAGES


def on_files(files: Files, config: Any) -> Files:
    for path, render in PAGES.items():
        files.append(File.generated(config, path, content=render()))
    return files

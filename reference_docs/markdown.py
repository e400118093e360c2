"""Small Markdown helpers shared by the generated pages."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence


def code(text: object) -> str:
    """Inline code, with a backtick inside fenced by two."""
    value = str(text)
    return f"`` {value} ``" if "`" in value else f"`{value}`"


def paragraph(text: str) -> str:
    """A docstring or help text as one Markdown paragraph (its indentation and line breaks removed)."""
    return " ".join(textwrap.dedent(text).split())


def cell(text: str) -> str:
    """Text that fits in a table cell (no line breaks, pipes escaped)."""
    return paragraph(text).replace("|", "\\|")


def sentence(text: str) -> str:
    """Help text as a sentence: a capital first letter and a full stop."""
    text = cell(text)
    if not text:
        return text
    return text[0].upper() + text[1:] + ("" if text.endswith((".", "?", "!")) else ".")


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table's lines."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


GENERATED_NOTE = (
    '!!! note "Generated"\n    This page is generated from {source} when the site is built; '
    "change the code, not the page.\n"
)

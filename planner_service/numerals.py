"""Whole numbers written in ASCII digits, from text the service did not write (a snapshot summary, a token, a
directory name, a cgroup file). `str.isdigit()` is no such check: it is true of '²' and other digits that
`int()` refuses (ValueError where a check was meant to have made it safe)."""

from __future__ import annotations


def ascii_int(text: str) -> int | None:
    """The number `text` spells in ASCII digits only (no sign, no space), or None."""
    return int(text) if text and text.isascii() and text.isdigit() else None

"""How deep a filter may nest, and the headroom its recursive processing gets.

Binding, evaluation, projection, residuals and the filter-string parser (sqlglot) walk expressions
recursively. A filter of MAX_FILTER_DEPTH nested AND, OR or NOT levels (far beyond what generated SQL
produces: Spark pushes an IN list down as one predicate) must pass through all of them: the parser takes
about 20 Python frames per level of parentheses, so the interpreter's recursion limit is raised to
RECURSION_LIMIT (Python frames live on the heap since 3.11, not the C stack). Deeper filters are
refused with a 400 naming the limit, before any recursive step.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

MAX_FILTER_DEPTH = 1000
RECURSION_LIMIT = 30_000

T = TypeVar("T")


def ensure_recursion_headroom() -> None:
    """Raise the interpreter's recursion limit to RECURSION_LIMIT (never lower it)."""
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


def too_deep(depth: int) -> str:
    return f"The filter nests {depth} levels deep; at most {MAX_FILTER_DEPTH} are accepted"


def depth_of(root: T, children: Callable[[T], Iterable[T]], counts: Callable[[T], bool], limit: int) -> int:
    """The most `counts` nodes on any path from `root` (without recursion), up to limit + 1."""
    deepest = 0
    stack = [(root, 0)]
    while stack:
        node, above = stack.pop()
        depth = above + counts(node)
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                break
        stack.extend((child, depth) for child in children(node))
    return deepest


def json_children(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        return value.values()
    return value if isinstance(value, list) else ()


def is_json_container(value: Any) -> bool:
    return isinstance(value, dict | list)

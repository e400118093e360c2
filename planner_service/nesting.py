"""How deep nested values may go before something recurses over them, and the recursion headroom it gets.

Filters (expressions/nesting.py), types in table metadata (metadata/types.py) and JSON are measured with
depth_of, without recursion, and refused past their limits; what stays within them is walked recursively,
with the interpreter's recursion limit raised to RECURSION_LIMIT (Python frames live on the heap since 3.11,
not the C stack).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

RECURSION_LIMIT = 30_000

T = TypeVar("T")


def ensure_recursion_headroom() -> None:
    """Raise the interpreter's recursion limit to RECURSION_LIMIT (never lower it)."""
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


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

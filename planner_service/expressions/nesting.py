"""How deep a filter may nest.

Binding, evaluation, projection, residuals and the filter-string parser (sqlglot) walk expressions
recursively. A filter of MAX_FILTER_DEPTH nested AND, OR or NOT levels (far beyond what generated SQL
produces: Spark pushes an IN list down as one predicate) must pass through all of them: the parser takes
about 20 Python frames per level of parentheses, within the headroom planner_service.nesting gives.
Deeper filters are refused with a 400 naming the limit, before any recursive step.
"""

from __future__ import annotations

MAX_FILTER_DEPTH = 1000


def too_deep(depth: int) -> str:
    return f"The filter nests {depth} levels deep; at most {MAX_FILTER_DEPTH} are accepted"

"""Deeply nested filters: up to MAX_FILTER_DEPTH levels of AND, OR and NOT pass through parsing,
binding-free rewriting and JSON; deeper ones are refused with an error naming the limit."""

from __future__ import annotations

from functools import reduce
from typing import Any

import pytest

from planner_service.expressions.expression import Expression, Op, Reference, UnboundPredicate, or_
from planner_service.expressions.expression_json import InvalidExpressionJson, expression_from_json, expression_to_json
from planner_service.expressions.filter_string import FilterSyntaxError, parse_filter
from planner_service.expressions.literals import Literal
from planner_service.expressions.nesting import MAX_FILTER_DEPTH
from planner_service.expressions.visitor import rewrite_not

ID_IS_1 = {"type": "eq", "term": "id", "value": 1}


def _eq(value: int) -> UnboundPredicate:
    return UnboundPredicate(Op.EQ, Reference("id"), (Literal("long", value),))


def _ored(n: int) -> Expression:
    """id = 0 OR id = 1 ... OR id = n, left-deep."""
    predicates: list[Expression] = [_eq(i) for i in range(n + 1)]
    return reduce(or_, predicates)


def _nots(n: int) -> Any:
    node: Any = ID_IS_1
    for _ in range(n):
        node = {"type": "not", "child": node}
    return node


def _ors(n: int) -> Any:
    """n nested ORs: n + 1 predicates, left-deep, as a chain of ORs parses."""
    node: Any = {"type": "eq", "term": "id", "value": 0}
    for i in range(1, n + 1):
        node = {"type": "or", "left": node, "right": {"type": "eq", "term": "id", "value": i}}
    return node


def _nested_list(depth: int) -> object:
    """1 inside `depth` lists: [[[1]]] for 3."""
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def test_filter_strings_up_to_the_limit() -> None:
    n = MAX_FILTER_DEPTH
    assert parse_filter("(" * n + "id = 1" + ")" * n) == _eq(1)  # parentheses make no nodes
    assert rewrite_not(parse_filter("NOT " * n + "id = 1")) == _eq(1)  # an even number of NOTs
    assert parse_filter(" OR ".join(f"id = {i}" for i in range(n + 1))) == _ored(n)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("NOT " * (MAX_FILTER_DEPTH + 1) + "id = 1", f"nests {MAX_FILTER_DEPTH + 1} levels deep; at most"),
        (" OR ".join(f"id = {i}" for i in range(MAX_FILTER_DEPTH + 2)), f"at most {MAX_FILTER_DEPTH} are accepted"),
        ("(" * 3 * MAX_FILTER_DEPTH + "id = 1" + ")" * 3 * MAX_FILTER_DEPTH, "nests too deeply to parse"),
    ],
)
def test_filter_strings_past_the_limit(text: str, message: str) -> None:
    with pytest.raises(FilterSyntaxError, match=message):
        parse_filter(text)


def test_json_expressions_up_to_the_limit_and_back() -> None:
    assert expression_from_json(_nots(MAX_FILTER_DEPTH)) == _eq(1)  # Expressions.not(not(x)) is x
    deep_or = expression_from_json(_ors(MAX_FILTER_DEPTH))
    assert deep_or == _ored(MAX_FILTER_DEPTH)
    assert expression_to_json(deep_or) == _ors(MAX_FILTER_DEPTH)


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (_nots(MAX_FILTER_DEPTH + 1), f"nests {MAX_FILTER_DEPTH + 1} levels deep"),
        (_ors(MAX_FILTER_DEPTH + 1), f"nests {MAX_FILTER_DEPTH + 1} levels deep"),
        (
            {"type": "eq", "term": "id", "value": _nested_list(MAX_FILTER_DEPTH + 10)},
            "nests deeper than any expression",
        ),
    ],
)
def test_json_expressions_past_the_limit(node: Any, message: str) -> None:
    with pytest.raises(InvalidExpressionJson, match=message):
        expression_from_json(node)

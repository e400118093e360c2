"""The REST JSON expression forms: what the spec defines and what Iceberg Java reads and writes
(core/.../expressions/ExpressionParser.java, 1.10)."""

from __future__ import annotations

from typing import Any

import pytest

from planner_service.expressions.expression import (
    FALSE,
    TRUE,
    Op,
    Reference,
    UnboundPredicate,
    UnboundTransform,
    and_,
    not_,
    or_,
)
from planner_service.expressions.expression_json import (
    InvalidExpressionJson,
    expression_from_json,
    expression_to_json,
)
from planner_service.expressions.literals import Literal
from planner_service.metadata.partitioning import Transform


def _lt(name: str, value: int) -> UnboundPredicate:
    return UnboundPredicate(Op.LT, Reference(name), (Literal("long", value),))


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (True, TRUE),
        (False, FALSE),
        ({"type": "true"}, TRUE),  # the spec's form (Java 1.10 itself rejects it)
        ({"type": "literal", "value": False}, FALSE),  # a form Java reads
        ({"type": "lt", "term": "x", "value": 5}, _lt("x", 5)),
        (
            {"type": "lt", "term": {"type": "reference", "term": "x"}, "value": {"type": "literal", "value": 5}},
            _lt("x", 5),
        ),
        ({"type": "not", "child": {"type": "lt", "term": "x", "value": 5}}, not_(_lt("x", 5))),
        ({"type": "and", "left": True, "right": {"type": "lt", "term": "x", "value": 5}}, _lt("x", 5)),
        ({"type": "or", "left": {"type": "lt", "term": "x", "value": 5}, "right": False}, _lt("x", 5)),
        ({"type": "is-null", "term": "a.b"}, UnboundPredicate(Op.IS_NULL, Reference("a.b"))),
        (
            {"type": "in", "term": "s", "values": ["a", 1.5, True]},
            UnboundPredicate(
                Op.IN, Reference("s"), (Literal("string", "a"), Literal("double", 1.5), Literal("boolean", True))
            ),
        ),
        (
            {"type": "eq", "term": {"type": "transform", "transform": "bucket[16]", "term": "id"}, "value": 3},
            UnboundPredicate(Op.EQ, UnboundTransform(Reference("id"), Transform("bucket", 16)), (Literal("long", 3),)),
        ),
    ],
)
def test_reads_the_forms_java_and_the_spec_use(node: Any, expected: Any) -> None:
    assert expression_from_json(node) == expected


def test_and_or_not_simplify_as_java() -> None:
    x = _lt("x", 1)
    assert (
        expression_from_json({"type": "and", "left": False, "right": {"type": "lt", "term": "x", "value": 1}}) is FALSE
    )
    assert expression_from_json({"type": "not", "child": {"type": "not", "child": True}}) is TRUE
    assert and_(x, TRUE) == x and or_(x, TRUE) is TRUE


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ("x < 5", "non-object at filter"),
        ({"term": "x"}, "missing string field 'type'"),
        ({"type": "between", "term": "x"}, "Unknown expression type 'between'"),
        ({"type": "lt", "term": "x"}, "missing 'value'"),
        ({"type": "in", "term": "x", "values": 5}, "non-array at filter.values"),
        ({"type": "is-null", "term": "x", "value": 1}, "has invalid value field"),
        ({"type": "and", "left": True, "right": {"type": "lt", "value": 1}}, "at filter.right: missing 'term'"),
        ({"type": "lt", "term": "x", "value": [1]}, "Cannot convert JSON to literal"),
        ({"type": "lt", "term": 7, "value": 1}, "requires string or object"),
    ],
)
def test_malformed_expressions_name_the_place(node: Any, message: str) -> None:
    with pytest.raises(InvalidExpressionJson, match=message.replace("(", r"\(").replace(")", r"\)")):
        expression_from_json(node)


def test_writes_as_java_does() -> None:
    expr = and_(
        not_(_lt("x", 5)),
        UnboundPredicate(
            Op.IN, Reference("s"), (Literal("string", "a"), Literal("decimal", __import__("decimal").Decimal("1.50")))
        ),
    )
    assert expression_to_json(expr) == {
        "type": "and",
        "left": {"type": "not", "child": {"type": "lt", "term": "x", "value": 5}},
        "right": {"type": "in", "term": "s", "values": ["a", "1.50"]},
    }
    assert expression_to_json(TRUE) is True
    bucket = UnboundPredicate(Op.EQ, UnboundTransform(Reference("id"), Transform("bucket", 16)), (Literal("long", 3),))
    assert expression_to_json(bucket) == {
        "type": "eq",
        "term": {"type": "transform", "transform": "bucket[16]", "term": "id"},
        "value": 3,
    }

"""A literal that cannot convert to its column's type is refused with Iceberg Java 1.10's message: the value and
its Java class for a single-value predicate (bindLiteralOperation), the literal as Literal.toString writes it
and its Literal class for in/not-in (bindInOperation). Found by the differential fuzzer (tests/differential)."""

from __future__ import annotations

import pytest

from planner_service.expressions.binding import InvalidFilterError, bind
from planner_service.expressions.expression_json import expression_from_json
from planner_service.metadata.types import parse_schema

SCHEMA = parse_schema(
    {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}
)


@pytest.mark.parametrize(
    ("filter_json", "message"),
    [
        ({"type": "eq", "term": "id", "value": "7"}, "Invalid value for conversion to type long: 7 (java.lang.String)"),
        (
            {"type": "eq", "term": "id", "value": True},
            "Invalid value for conversion to type long: true (java.lang.Boolean)",
        ),
        (
            {"type": "not-in", "term": "id", "values": [21, "7", 5]},
            'Invalid value for conversion to type long: "7" (org.apache.iceberg.expressions.Literals$StringLiteral)',
        ),
        (
            {"type": "in", "term": "id", "values": [1, False]},
            "Invalid value for conversion to type long: false (org.apache.iceberg.expressions.Literals$BooleanLiteral)",
        ),
    ],
)
def test_a_literal_that_cannot_convert_is_refused_with_javas_message(filter_json: object, message: str) -> None:
    with pytest.raises(InvalidFilterError) as err:
        bind(SCHEMA, expression_from_json(filter_json))
    assert err.value.message.startswith(message), err.value.message

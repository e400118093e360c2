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


@pytest.mark.parametrize(
    "text",
    ["\u0661\u0662:\u0660\u0660", "\u0662\u0660\u0662\u0664-\u0660\u0661-\u0660\u0661"],
    ids=["arabic-indic-time", "arabic-indic-date"],
)
def test_digits_of_other_scripts_are_no_date_or_time(text: str) -> None:
    """Java's ISO formatters read ASCII digits only (DecimalStyle.STANDARD); Python's \\d also matches
    Arabic-Indic ones, which int() then reads: a time of Arabic-Indic twelve was noon. Both refuse it now."""
    from planner_service.expressions.literals import parse_time_nanos, parse_timestamp_nanos

    with pytest.raises(ValueError, match="could not be parsed"):
        if ":" in text:
            parse_time_nanos(text)
        else:
            parse_timestamp_nanos(text + "T00:00", False)


def test_type_strings_take_ascii_digits_only() -> None:
    """Types.fromPrimitiveString's and Transforms.fromString's patterns: Java's \\d is [0-9]."""
    from planner_service.errors import CorruptMetadataError
    from planner_service.metadata.types import parse_primitive

    assert parse_primitive("fixed[3]").length == 3
    with pytest.raises(CorruptMetadataError, match="Cannot parse type string to primitive"):
        parse_primitive("fixed[\u0663]")

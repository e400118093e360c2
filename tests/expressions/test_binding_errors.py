"""A filter that does not fit its table is refused in the service's words: the column and its type as Iceberg
names them, the value as a filter writes it, how a value of the type is written, and for an unknown column the
nearest names and the table's columns (never its struct type). Each error also carries Iceberg Java 1.10's
message for the same refusal (`java_message`), which the parity tests compare: the value and its Java class for
a single-value predicate (bindLiteralOperation), the literal as Literal.toString writes it and its Literal class
for in/not-in (bindInOperation). Found by the differential fuzzer (tests/differential)."""

from __future__ import annotations

from typing import Any

import pytest

from planner_service.expressions.binding import InvalidFilterError, bind
from planner_service.expressions.expression_json import expression_from_json
from planner_service.expressions.filter_string import parse_filter
from planner_service.metadata.types import MAX_LISTED_COLUMNS, Schema, parse_schema

SCHEMA = parse_schema(
    {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}
)


def _schema(*fields: tuple[str, Any]) -> Schema:
    return parse_schema(
        {
            "type": "struct",
            "schema-id": 0,
            "fields": [
                {"id": i, "name": name, "required": False, "type": typ} for i, (name, typ) in enumerate(fields, 1)
            ],
        }
    )


# the demo table's columns (planner_service/demo.py: demo.events), and a struct for nested names
DEMO = _schema(
    ("id", "long"),
    ("ts", "timestamptz"),
    ("region", "string"),
    ("amount", "double"),
    ("loc", {"type": "struct", "fields": [{"id": 10, "name": "lat", "required": False, "type": "double"}]}),
)
DEMO_COLUMNS = "the columns are id, ts, region, amount, loc"


def _refusal(schema: Schema, filter_text: str) -> InvalidFilterError:
    with pytest.raises(InvalidFilterError) as err:
        bind(schema, parse_filter(filter_text))
    return err.value


@pytest.mark.parametrize(
    ("filter_text", "message"),
    [
        ("idd < 100", f"Cannot find field 'idd' (did you mean 'id'?); {DEMO_COLUMNS}"),
        ("regio = 'eu'", f"Cannot find field 'regio' (did you mean 'region'?); {DEMO_COLUMNS}"),
        ("ID = 1", f"Cannot find field 'ID' (did you mean 'id'?); {DEMO_COLUMNS}"),  # case-sensitive by default
        ("loc.lt > 1", f"Cannot find field 'loc.lt' (did you mean 'loc.lat' or 'loc'?); {DEMO_COLUMNS}"),
        ("zzz = 1", f"Cannot find field 'zzz'; {DEMO_COLUMNS}"),
    ],
)
def test_an_unknown_column_is_refused_with_the_nearest_names_and_the_columns(filter_text: str, message: str) -> None:
    refused = _refusal(DEMO, filter_text)
    assert refused.message == message
    name = filter_text.split()[0]
    assert refused.java_message.startswith(f"Cannot find field '{name}' in struct: struct<1: id: optional long, ")


def test_a_wide_table_lists_its_first_columns_and_how_many_more() -> None:
    wide = _schema(*((f"c{i}", "long") for i in range(MAX_LISTED_COLUMNS + 70)))
    listed = ", ".join(f"c{i}" for i in range(MAX_LISTED_COLUMNS))
    assert _refusal(wide, "c1000 = 1").message.endswith(f"; the columns are {listed} and 70 more")


@pytest.mark.parametrize(
    ("filter_text", "message"),
    [
        ("id < 'abc'", "Cannot compare id (long) with the string 'abc'"),
        ("id IN (1, 'x')", "Cannot compare id (long) with the string 'x'"),
        ("id = true", "Cannot compare id (long) with the boolean true"),
        ("id = DATE '2024-01-01'", "Cannot compare id (long) with DATE '2024-01-01'"),
        ("region = 5", "Cannot compare region (string) with the number 5: string values take single quotes ('5')"),
        (
            "ts >= '2024-01-01'",  # a timestamptz string needs its time and offset
            "Cannot compare ts (timestamptz) with the string '2024-01-01': a timestamptz is written "
            "'2024-01-31T10:15:30+00:00' (with its offset)",
        ),
        ("loc = 1", "Cannot compare loc (struct) with the number 1"),
        ("id LIKE 'a%'", "Cannot use LIKE 'prefix%' (starts-with) on id (long): it needs a string column"),
    ],
)
def test_a_value_the_column_cannot_take_is_refused_in_the_services_words(filter_text: str, message: str) -> None:
    refused = _refusal(DEMO, filter_text)
    assert refused.message == message
    assert "java" not in refused.message.lower()


def test_the_hint_for_a_timestamptz_is_a_value_it_takes() -> None:
    """The way of writing a value the message shows binds."""
    bind(DEMO, parse_filter("ts >= '2024-01-31T10:15:30+00:00'"))


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
def test_a_literal_that_cannot_convert_carries_javas_message(filter_json: object, message: str) -> None:
    with pytest.raises(InvalidFilterError) as err:
        bind(SCHEMA, expression_from_json(filter_json))
    assert err.value.java_message.startswith(message), err.value.java_message
    assert err.value.message.startswith("Cannot compare id (long) with the "), err.value.message


def test_a_fixed_value_of_another_length_says_how_long_it_is() -> None:
    fixed = _schema(("fx", "fixed[3]"))
    with pytest.raises(InvalidFilterError) as err:
        bind(fixed, expression_from_json({"type": "eq", "term": "fx", "value": "00FF"}))
    assert err.value.message == (
        "Cannot compare fx (fixed[3]) with the string '00FF': a fixed[3] value is 3 bytes, written as 6 hex digits"
    )
    assert (
        err.value.java_message == "Cannot parse default fixed[3] value: \"00FF\", incorrect length: 4 for column 'fx'"
    )


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

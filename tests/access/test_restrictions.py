"""A rule's read restrictions bound to a table's schema: the row filter to the table's columns, each mask to
its column's field id (so a mask follows the column's id, whatever the column is called in an older schema),
written as Iceberg's REST spec writes `read-restrictions`. A restriction that cannot bind refuses the table
(403 naming the rule), never serves it unrestricted; a rule that does not parse is refused when the policy
loads."""

from __future__ import annotations

import pytest

from planner_service.access.restrictions import Restriction
from planner_service.errors import ForbiddenError
from planner_service.metadata.types import parse_schema

SCHEMA = parse_schema(
    {
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "type": "long", "required": True},
            {"id": 2, "name": "email", "type": "string", "required": False},
            {"id": 3, "name": "born", "type": "date", "required": False},
            {
                "id": 4,
                "name": "address",
                "required": False,
                "type": {"type": "struct", "fields": [{"id": 5, "name": "zip", "type": "string", "required": False}]},
            },
            {
                "id": 6,
                "name": "tags",
                "required": False,
                "type": {"type": "list", "element-id": 7, "element": "string", "element-required": False},
            },
        ],
    }
)


def test_a_restriction_binds_to_field_ids_and_writes_the_spec_form() -> None:
    restriction = Restriction.of(
        2, "id < 100 AND email IS NOT NULL", {"email": "mask-alphanum", "address.zip": "show-last-4"}
    )
    assert restriction is not None
    bound = restriction.bound(SCHEMA, "db.people")
    assert bound.to_json() == {
        "required-row-filter": {
            "type": "and",
            "left": {"type": "lt", "term": "id", "value": 100},
            "right": {"type": "not-null", "term": "email"},
        },
        "required-column-projections": [
            {"action": "mask-alphanum", "field-id": 2},
            {"action": "show-last-4", "field-id": 5},
        ],
    }
    masks_only = Restriction.of(3, None, {"born": "truncate-to-year"})
    assert masks_only is not None and masks_only.bound(SCHEMA, "db.people").to_json() == {
        "required-column-projections": [{"action": "truncate-to-year", "field-id": 3}]
    }
    assert Restriction.of(4, None, {}) is None  # a rule that restricts nothing


def test_restrictions_differ_by_key_and_equal_ones_share_it() -> None:
    one = Restriction.of(1, "id < 100", {})
    same = Restriction.of(7, "id<100", {})
    other = Restriction.of(1, "id < 101", {})
    assert one is not None and same is not None and other is not None
    assert one.bound(SCHEMA, "t").key == same.bound(SCHEMA, "t").key != other.bound(SCHEMA, "t").key


@pytest.mark.parametrize(
    ("row_filter", "masks", "refused"),
    [
        (None, {"mail": "mask-alphanum"}, "masks column 'mail', which the table does not have"),
        (None, {"id": "mask-alphanum"}, "mask-alphanum applies to string, not long"),
        (None, {"id": "replace-with-null"}, "this one is required"),
        (None, {"tags.element": "mask-alphanum"}, "inside a list or a map"),
        ("salary > 10", {}, "its row_filter does not apply to the table: Cannot find field 'salary'"),
        ("email < 5", {}, "its row_filter does not apply to the table"),
    ],
)
def test_a_restriction_that_cannot_bind_refuses_the_table(
    row_filter: str | None, masks: dict[str, str], refused: str
) -> None:
    restriction = Restriction.of(5, row_filter, masks)
    assert restriction is not None
    with pytest.raises(ForbiddenError) as raised:
        restriction.bound(SCHEMA, "db.people")
    assert raised.value.message.startswith("Access rule 5 restricts reads of db.people, but ")
    assert refused in raised.value.message


@pytest.mark.parametrize(
    ("row_filter", "masks", "refused"),
    [
        ("id <", {}, "row_filter 'id <'"),
        (None, {"email": "blur"}, "column_masks.email: 'blur' is not one of mask-alphanum"),
    ],
)
def test_a_rule_that_does_not_parse_is_refused_when_loaded(
    row_filter: str | None, masks: dict[str, str], refused: str
) -> None:
    with pytest.raises(ValueError, match=refused):
        Restriction.of(1, row_filter, masks)

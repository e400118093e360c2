"""Sort orders, checked as Java's SortOrderParser reads them (planning does not use them, but Java refuses a
table whose sort orders it cannot read). Kept as their JSON: the REST catalog answers them as read."""

from __future__ import annotations

from typing import Any

from planner_service.errors import CorruptMetadataError
from planner_service.metadata.json_fields import echo, get_array, get_int, get_string, require_object
from planner_service.metadata.partitioning import parse_transform

DIRECTIONS = frozenset({"asc", "desc"})
NULL_ORDERS = frozenset({"nulls-first", "nulls-last"})


def parse_sort_order(obj: Any) -> dict[str, Any]:
    node = require_object(obj, "Cannot parse sort order from non-object")
    order_id = get_int("order-id", node)
    if node.get("fields") is None:
        raise CorruptMetadataError("Cannot parse missing field: fields")
    fields = get_array("fields", node, "sort order fields")
    if not fields and order_id != 0:
        raise CorruptMetadataError("Unsorted order ID must be 0")
    if fields and order_id == 0:
        raise CorruptMetadataError("Sort order ID 0 is reserved for unsorted order")
    for raw in fields:
        if not isinstance(raw, dict):
            raise CorruptMetadataError(f"Cannot parse sort field, not an object: {echo(raw)}")
        try:
            parse_transform(get_string("transform", raw))
        except ValueError as exc:
            raise CorruptMetadataError(str(exc)) from None
        get_int("source-id", raw)
        direction, null_order = get_string("direction", raw), get_string("null-order", raw)
        if direction.lower() not in DIRECTIONS:
            raise CorruptMetadataError(f"Invalid sort direction: {echo(direction)}")
        if null_order.lower() not in NULL_ORDERS:
            raise CorruptMetadataError(f"Invalid null order: {echo(null_order)}")
    return node

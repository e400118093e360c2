"""Sort orders (spec: "Sorting"), parsed and checked as Java's SortOrderParser reads them: an order id, and
fields each a transform of a source column with a direction and a null order. Java refuses a table whose sort
orders it cannot read; planning orders tasks by the default one (grouping sort-order)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner_service.errors import CorruptMetadataError
from planner_service.metadata.json_fields import echo, get_array, get_int, get_string, require_object
from planner_service.metadata.partitioning import Transform, parse_transform

DIRECTIONS = frozenset({"asc", "desc"})
NULL_ORDERS = frozenset({"nulls-first", "nulls-last"})


@dataclass(frozen=True)
class SortOrderField:
    transform: Transform
    source_id: int
    descending: bool
    nulls_first: bool

    def __str__(self) -> str:
        """As Java prints a sort field: `identity(1) DESC NULLS LAST`."""
        direction = "DESC" if self.descending else "ASC"
        return f"{self.transform}({self.source_id}) {direction} NULLS {'FIRST' if self.nulls_first else 'LAST'}"


@dataclass(frozen=True)
class SortOrder:
    order_id: int
    fields: tuple[SortOrderField, ...]

    @property
    def is_unsorted(self) -> bool:
        return not self.fields


def parse_sort_order(obj: Any) -> SortOrder:
    node = require_object(obj, "Cannot parse sort order from non-object")
    order_id = get_int("order-id", node)
    if node.get("fields") is None:
        raise CorruptMetadataError("Cannot parse missing field: fields")
    fields = get_array("fields", node, "sort order fields")
    if not fields and order_id != 0:
        raise CorruptMetadataError("Unsorted order ID must be 0")
    if fields and order_id == 0:
        raise CorruptMetadataError("Sort order ID 0 is reserved for unsorted order")
    return SortOrder(order_id, tuple(_field(raw) for raw in fields))


def _field(raw: Any) -> SortOrderField:
    if not isinstance(raw, dict):
        raise CorruptMetadataError(f"Cannot parse sort field, not an object: {echo(raw)}")
    try:
        transform = parse_transform(get_string("transform", raw))
    except ValueError as exc:
        raise CorruptMetadataError(str(exc)) from None
    source_id = get_int("source-id", raw)
    direction, null_order = get_string("direction", raw), get_string("null-order", raw)
    if direction.lower() not in DIRECTIONS:
        raise CorruptMetadataError(f"Invalid sort direction: {echo(direction)}")
    if null_order.lower() not in NULL_ORDERS:
        raise CorruptMetadataError(f"Invalid null order: {echo(null_order)}")
    return SortOrderField(transform, source_id, direction.lower() == "desc", null_order.lower() == "nulls-first")

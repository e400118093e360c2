"""A principal's read restrictions on a table, as a rule of the policy writes them (a row filter in the
service's filter syntax; column masks, column name -> the spec's action) and as they bind to one schema:
the filter bound to field ids, each mask to its field's id and type. A restriction that cannot bind (a column
the table does not have, an action the spec does not define for the column's type, a mask inside a list or
a map) refuses the table to that principal, naming the rule, and is never dropped: nothing is served as if
the rule had no restriction. Binding by id is what keeps a mask on a renamed column."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

import orjson

from planner_service.errors import BadRequestError, ForbiddenError
from planner_service.expressions.binding import bind
from planner_service.expressions.expression import TRUE, Expression
from planner_service.expressions.expression_json import expression_to_json
from planner_service.expressions.filter_string import parse_filter
from planner_service.metadata.types import ListType, MapType, Schema
from read_restrictions import ACTIONS, applicable


@dataclass(frozen=True)
class Restriction:
    """What one rule restricts (`rule`: its position in the file, from 1, as people count them)."""

    rule: int
    row_filter: Expression | None
    column_masks: tuple[tuple[str, str], ...]  # (column, action), in the rule's order
    filter_text: str | None = None

    @classmethod
    def of(cls, rule: int, row_filter: str | None, column_masks: Mapping[str, str]) -> Restriction | None:
        """The restriction a rule writes (None when it writes none); ValueError naming what does not parse."""
        if row_filter is None and not column_masks:
            return None
        for column, action in column_masks.items():
            if action not in ACTIONS:
                raise ValueError(f"column_masks.{column}: {action!r} is not one of {', '.join(ACTIONS)}")
        parsed = None
        if row_filter is not None:
            try:
                parsed = parse_filter(row_filter)
            except BadRequestError as exc:
                raise ValueError(f"row_filter {row_filter!r}: {exc.message}") from None
        return cls(rule, parsed, tuple(column_masks.items()), row_filter)

    def bound(self, schema: Schema, table: str) -> BoundRestriction:
        """The restriction bound to `schema` (ForbiddenError, naming the rule, when it cannot be)."""
        row_filter: Expression = TRUE
        if self.row_filter is not None:
            try:
                row_filter = bind(schema, self.row_filter)
            except BadRequestError as exc:
                raise self._refused(table, f"its row_filter does not apply to the table: {exc.message}") from None
        masks = []
        for column, action in self.column_masks:
            field = schema.find_field_by_name(column)
            if field is None:
                raise self._refused(table, f"it masks column {column!r}, which the table does not have")
            if any(isinstance(a.type, ListType | MapType) for a in schema.ancestors(field.field_id)):
                raise self._refused(table, f"it masks {column!r} inside a list or a map, which is not applied here")
            if (why := applicable(action, field.type.to_json(), field.required)) is not None:
                raise self._refused(table, f"it masks {column!r} ({field.type.to_json()}): {why}")
            masks.append((field.field_id, action))
        if len({fid for fid, _ in masks}) < len(masks):
            raise self._refused(table, "it masks one column twice (by two of its names)")
        return BoundRestriction(self.rule, row_filter, tuple(masks))

    def _refused(self, table: str, why: str) -> ForbiddenError:
        return ForbiddenError(f"Access rule {self.rule} restricts reads of {table}, but {why}; fix the rule")


@dataclass(frozen=True)
class BoundRestriction:
    """A restriction bound to one schema: the row filter over field ids (TRUE: none) and each mask's field
    id and action."""

    rule: int
    row_filter: Expression
    masks: tuple[tuple[int, str], ...]

    def to_json(self) -> dict[str, object]:
        """`read-restrictions` as Iceberg's REST spec writes them (what is absent, absent)."""
        out: dict[str, object] = {}
        if self.row_filter is not TRUE:
            out["required-row-filter"] = expression_to_json(self.row_filter)
        if self.masks:
            out["required-column-projections"] = [{"action": a, "field-id": fid} for fid, a in self.masks]
        return out

    @property
    def key(self) -> str:
        """What tells two restrictions apart (a plan made under one is never another's answer)."""
        return hashlib.sha256(orjson.dumps(self.to_json(), option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]

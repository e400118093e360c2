"""Row filters as Iceberg REST JSON (the spec's Expression schema, and the forms Java reads and writes).

Read: bare `true`/`false`, `{"type": "true"|"false"}` (the spec's form, which Java 1.10 itself rejects),
`{"type": "literal", "value": bool}`, and/or/not, unary, literal and set predicates; terms as a column
name, `{"type": "reference", "term"|"name": ...}` or `{"type": "transform", "transform": "bucket[16]",
"term": ...}`; values plain or wrapped as `{"type": "literal", "value": V}`. Values are typed as Java's
ExpressionParser types them without a schema: integral numbers are longs, other numbers doubles.
Write: as Java's ExpressionParser.toJson (bare true/false, `term` as a name or a transform object).
"""

from __future__ import annotations

from typing import Any

from planner_service.errors import BadRequestError
from planner_service.expressions.expression import (
    FALSE,
    LITERAL_OPS,
    SET_OPS,
    TRUE,
    UNARY_OPS,
    BoundPredicate,
    BoundReference,
    Expression,
    Op,
    Reference,
    Term,
    UnboundPredicate,
    UnboundTransform,
    and_,
    not_,
    or_,
)
from planner_service.expressions.literals import Literal, literal_from_json_value
from planner_service.expressions.nesting import MAX_FILTER_DEPTH, too_deep
from planner_service.expressions.visitor import ExpressionVisitor, visit
from planner_service.metadata.json_values import to_json_value
from planner_service.metadata.partitioning import parse_transform
from planner_service.nesting import depth_of, ensure_recursion_headroom, is_json_container, json_children

_OPS = {op.value: op for op in Op}


class InvalidExpressionJson(BadRequestError):
    """A REST JSON expression that cannot be read: an unknown type, a missing or malformed field."""


def expression_from_json(node: Any, path: str = "filter") -> Expression:
    """Parse a REST JSON expression; errors name the JSON path of the offending node. At most
    MAX_FILTER_DEPTH levels of and/or/not are accepted, and a few more levels of JSON (a predicate's
    term and values)."""
    depth = depth_of(node, json_children, _is_logical, MAX_FILTER_DEPTH)
    if depth > MAX_FILTER_DEPTH:
        raise InvalidExpressionJson(f"{too_deep(depth)} (at {path})")
    if depth_of(node, json_children, is_json_container, _JSON_DEPTH) > _JSON_DEPTH:
        raise InvalidExpressionJson(f"Cannot parse expression at {path}: its JSON nests deeper than any expression")
    ensure_recursion_headroom()
    return _expression(node, path)


_JSON_DEPTH = MAX_FILTER_DEPTH + 8  # and/or/not levels, then a predicate: {"term": {"term": ...}, "values": [...]}


def _is_logical(node: Any) -> bool:
    return isinstance(node, dict) and str(node.get("type", "")).lower() in ("and", "or", "not")


def _expression(node: Any, path: str) -> Expression:
    if isinstance(node, bool):
        return TRUE if node else FALSE
    if not isinstance(node, dict):
        raise InvalidExpressionJson(f"Cannot parse expression from non-object at {path}: {node!r}")
    kind = node.get("type")
    if not isinstance(kind, str):
        raise InvalidExpressionJson(f"Cannot parse expression at {path}: missing string field 'type'")
    kind = kind.lower().replace("_", "-")
    if kind == "literal":
        value = node.get("value")
        if not isinstance(value, bool):
            raise InvalidExpressionJson(f"Cannot parse literal expression at {path}: 'value' must be a boolean")
        return TRUE if value else FALSE
    op = _OPS.get(kind)
    if op is None:
        raise InvalidExpressionJson(f"Unknown expression type '{node['type']}' at {path}")
    if op is Op.TRUE:
        return TRUE
    if op is Op.FALSE:
        return FALSE
    if op is Op.NOT:
        return not_(_expression(_required(node, "child", path), f"{path}.child"))
    if op in (Op.AND, Op.OR):
        left = _expression(_required(node, "left", path), f"{path}.left")
        right = _expression(_required(node, "right", path), f"{path}.right")
        return and_(left, right) if op is Op.AND else or_(left, right)
    return _predicate(op, node, path)


def _required(node: dict[str, Any], key: str, path: str) -> Any:
    if key not in node:
        raise InvalidExpressionJson(f"Cannot parse {node.get('type')} expression at {path}: missing '{key}'")
    return node[key]


def _predicate(op: Op, node: dict[str, Any], path: str) -> UnboundPredicate:
    term = _term(_required(node, "term", path), f"{path}.term")
    if op in UNARY_OPS:
        for key in ("value", "values"):
            if key in node and node[key] is not None:
                raise InvalidExpressionJson(f"Cannot parse {op.value} predicate at {path}: has invalid {key} field")
        return UnboundPredicate(op, term)
    if op in LITERAL_OPS:
        if "values" in node:
            raise InvalidExpressionJson(f"Cannot parse {op.value} predicate at {path}: has invalid values field")
        return UnboundPredicate(op, term, (_literal(_required(node, "value", path), f"{path}.value"),))
    assert op in SET_OPS
    if "value" in node:
        raise InvalidExpressionJson(f"Cannot parse {op.value} predicate at {path}: has invalid value field")
    values = _required(node, "values", path)
    if not isinstance(values, list):
        raise InvalidExpressionJson(f"Cannot parse literals from non-array at {path}.values: {values!r}")
    return UnboundPredicate(op, term, tuple(_literal(v, f"{path}.values[{i}]") for i, v in enumerate(values)))


def _term(node: Any, path: str) -> Reference | UnboundTransform:
    if isinstance(node, str):
        return Reference(node)
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "reference":
            name = node.get("term", node.get("name"))
            if not isinstance(name, str):
                raise InvalidExpressionJson(f"Cannot parse reference at {path}: missing string 'term'")
            return Reference(name)
        if kind == "transform":
            child = _term(_required(node, "term", path), f"{path}.term")
            text = _required(node, "transform", path)
            ref = child if isinstance(child, Reference) else child.ref
            try:
                return UnboundTransform(ref, parse_transform(str(text)))
            except ValueError as exc:
                raise InvalidExpressionJson(f"Cannot parse transform at {path}: {exc}") from None
        raise InvalidExpressionJson(f"Cannot parse type as a reference at {path}: {kind!r}")
    raise InvalidExpressionJson(f"Cannot parse reference (requires string or object) at {path}: {node!r}")


def _literal(node: Any, path: str) -> Literal:
    if isinstance(node, dict) and "type" in node:
        if str(node["type"]).lower() != "literal":
            raise InvalidExpressionJson(f"Cannot parse type as a literal at {path}: {node['type']}")
        node = _required(node, "value", path)
    try:
        return literal_from_json_value(node)
    except ValueError as exc:
        raise InvalidExpressionJson(f"{exc} (at {path})") from None


# --- Writing ----------------------------------------------------------------------------------------------


def expression_to_json(expr: Expression) -> Any:
    """Java ExpressionParser.toJson: bound predicates write values by the term's type, unbound ones by
    the literal's own kind (a long as a number, a decimal as a string, bytes as hex)."""
    return visit(expr, _JsonWriter())


class _JsonWriter(ExpressionVisitor[Any]):
    def visit_true(self) -> Any:
        return True

    def visit_false(self) -> Any:
        return False

    def visit_not(self, child: Any) -> Any:
        return {"type": "not", "child": child}

    def visit_and(self, left: Any, right: Any) -> Any:
        return {"type": "and", "left": left, "right": right}

    def visit_or(self, left: Any, right: Any) -> Any:
        return {"type": "or", "left": left, "right": right}

    def visit_unbound_predicate(self, pred: UnboundPredicate) -> Any:
        out: dict[str, Any] = {"type": pred.op.value, "term": _term_json(pred.term)}
        if pred.literals is not None:
            if pred.op in SET_OPS:
                out["values"] = [_unbound_value(lit) for lit in pred.literals]
            else:
                out["value"] = _unbound_value(pred.literal)
        return out

    def visit_bound_predicate(self, pred: BoundPredicate) -> Any:
        out: dict[str, Any] = {"type": pred.op.value, "term": _term_json(pred.term)}
        if pred.op in SET_OPS:
            out["values"] = [to_json_value(pred.term.type, v) for v in pred.values]
        elif pred.op in LITERAL_OPS:
            out["value"] = to_json_value(pred.term.type, pred.literal)
        return out


def _term_json(term: Term) -> Any:
    if isinstance(term, Reference | BoundReference):
        return term.name
    return {"type": "transform", "transform": str(term.transform), "term": term.ref.name}


def _unbound_value(lit: Literal) -> Any:
    if lit.kind == "decimal" or lit.kind == "uuid":
        return str(lit.value)
    if lit.kind in ("fixed", "binary"):
        return bytes(lit.value).hex().upper()
    return lit.value  # numbers (dates and timestamps as their internal numbers, as Java writes them), strings

"""Avro's names (the specification's "Names" section, and Avro Java's Schema.Names for the lookup in the
null namespace): each reference resolves to the definition the specification says, or is refused."""

from __future__ import annotations

from typing import Any

import fastavro
import pytest

from iceberg_io.avro_names import MAX_NODES, AvroNameError, resolved


def _record(name: str, *fields: tuple[str, Any], **attributes: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, **attributes, "fields": [{"name": n, "type": t} for n, t in fields]}


def _types(schema: dict[str, Any]) -> list[Any]:
    return [f["type"] for f in schema["fields"]]


def test_a_name_used_again_is_its_definition() -> None:
    """As Iceberg Java writes two decimal(5, 1) columns, and a struct's record used twice."""
    decimal = {"type": "fixed", "name": "decimal_5_1", "size": 3, "logicalType": "decimal", "precision": 5, "scale": 1}
    struct = _record("r8", ("d", ["null", "decimal_5_1"]))
    out = resolved(
        _record("table", ("a", ["null", decimal]), ("b", ["null", "decimal_5_1"]), ("s", struct), ("t", "r8"))
    )
    a, b, s, t = _types(out)
    assert b[1] is a[1] and b[1] == decimal
    assert t is s and s["fields"][0]["type"][1] is a[1]


def test_full_names_follow_the_namespaces_that_enclose_them() -> None:
    """A dotted name is full; else the type's namespace, else the enclosing named type's. A reference is
    looked up in the namespace it appears in."""
    fixed = {"type": "fixed", "name": "f", "size": 2}  # defined in a.b: its full name is a.b.f
    enum = {"type": "enum", "name": "e", "symbols": ["A"]}  # defined inside c.inner: c.e
    inner = _record("inner", ("q", "a.b.f"), ("w", enum), ("again", "e"), namespace="c")
    out = resolved(_record("a.b.top", ("x", fixed), ("y", "f"), ("z", inner), ("v", "c.e"), ("u", "a.b.f")))
    x, y, z, v, u = _types(out)
    assert y is x and u is x and z["fields"][0]["type"] is x
    assert v is z["fields"][1]["type"] and z["fields"][2]["type"] is v


def test_a_name_not_found_in_its_namespace_is_looked_up_in_the_null_namespace() -> None:
    """Avro Java's Names.get tries the null namespace next (Iceberg's names have none)."""
    fixed = {"type": "fixed", "name": "fixed_16", "size": 16}
    out = resolved(_record("top", ("a", fixed), ("b", _record("r", ("c", "fixed_16"), namespace="x.y"))))
    assert _types(out)[1]["fields"][0]["type"] is _types(out)[0]


def test_a_reference_wrapped_in_a_type_attribute_and_in_arrays_and_maps() -> None:
    fixed = {"type": "fixed", "name": "f", "size": 1}
    out = resolved(
        _record(
            "top",
            ("a", fixed),
            ("b", {"type": "f"}),
            ("c", {"type": "array", "items": ["null", "f"]}),
            ("d", {"type": "map", "values": "f"}),
        )
    )
    a, b, c, d = _types(out)
    assert b["type"] is a and c["items"][1] is a and d["values"] is a


def test_the_same_definition_twice_is_one() -> None:
    fixed = {"type": "fixed", "name": "f", "size": 1}
    out = resolved(_record("top", ("a", fixed), ("b", dict(fixed)), ("c", "f")))
    assert _types(out)[2] is _types(out)[0]


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (_record("top", ("a", "nothing")), "'nothing' is neither a primitive nor a name defined before it"),
        (_record("top", ("a", "f"), ("b", {"type": "fixed", "name": "f", "size": 1})), "'f' is neither"),
        (_record("node", ("next", ["null", "node"])), "refers to itself"),
        (
            _record(
                "top",
                ("a", {"type": "fixed", "name": "f", "size": 1}),
                ("b", {"type": "fixed", "name": "f", "size": 2}),
            ),
            "'f' is defined twice, differently",
        ),
    ],
)
def test_names_that_do_not_resolve_are_refused(schema: dict[str, Any], message: str) -> None:
    """(A recursive type is valid Avro, but no Iceberg type is one: an Iceberg reader refuses it, as
    Iceberg's AvroSchemaUtil.toIceberg does; fastavro refuses the others too, each its own way.)"""
    with pytest.raises(AvroNameError, match=message):
        resolved(schema)
    if "itself" not in message:
        with pytest.raises(Exception):  # noqa: B017
            fastavro.parse_schema(schema)


def test_a_schema_that_expands_past_the_bound_is_refused_before_it_is_walked() -> None:
    """Each level names the one below twice: 2^40 nodes once expanded, from 80 references."""
    schema: Any = {"type": "fixed", "name": "n0", "size": 1}
    for level in range(1, 41):
        schema = _record(f"n{level}", ("a", schema), ("b", f"n{level - 1}"))
    with pytest.raises(AvroNameError, match=f"more than {MAX_NODES:,} types"):
        resolved(schema)

"""Avro's named types resolved (Avro specification, "Names"): a record, enum or fixed is defined once, under
a full name, and referred to by that name everywhere after. Iceberg's Avro writer does so for every type it
names when a schema uses it twice: `decimal_P_S` and `fixed_L` fixeds, `uuid_fixed`, the `rN` records of
structs and `kK_vV` records of maps; two `decimal(5, 1)` columns are one definition and one reference.

`resolved(schema)` gives the schema with every reference replaced by its definition (the same object: the
result is a tree to walk, not to serialize), so that readers that walk a schema need not know of names:

* a full name is `namespace.name`: a name with a dot is full already; else the type's own `namespace`, else
  the namespace of the named type it is defined in (record fields do not open one);
* a reference is looked up as a full name in the namespace it appears in, then (as Avro Java's Names and
  fastavro do) in the null namespace;
* a name defined twice differently, a reference to no definition or to a type being defined (a recursive type, which
  no Iceberg type is), and a schema that would walk past MAX_NODES nodes once expanded, are refused
  (AvroNameError): expanding a name used twice at each of many levels doubles the walk per level.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_NODES", "AvroNameError", "resolved"]

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "error", "enum", "fixed"})
MAX_NODES = 1_000_000  # schema nodes a resolved schema may have, references expanded (wide tables: ~10^4)


class AvroNameError(ValueError):
    """A schema whose names do not resolve, or whose expansion is too large to walk."""


def resolved(schema: Any) -> Any:
    """`schema` with each named type's references replaced by its definition (see the module's text)."""
    return _Resolver().walk(schema, "")


class _Resolver:
    def __init__(self) -> None:
        self.defined: dict[str, Any] = {}  # full name -> the resolved definition
        self.sizes: dict[str, int] = {}  # full name -> nodes its definition expands to
        self.open: set[str] = set()  # names being defined (a reference to one is a recursive type)
        self.nodes = 0

    def walk(self, node: Any, namespace: str) -> Any:
        before = self.nodes
        self._count(1)
        if isinstance(node, str):
            return node if node in PRIMITIVES else self._reference(node, namespace)
        if isinstance(node, list):  # a union
            return [self.walk(branch, namespace) for branch in node]
        if not isinstance(node, dict):
            return node  # (not a schema: what reads it says why)
        kind = node.get("type")
        if isinstance(kind, str) and kind in NAMED:
            return self._define(node, namespace, before)
        out = dict(node)
        if isinstance(kind, list | dict) or (isinstance(kind, str) and kind not in PRIMITIVES | {"array", "map"}):
            out["type"] = self.walk(kind, namespace)  # {"type": {...}} or {"type": "a_name"}
        if kind == "array" and "items" in node:
            out["items"] = self.walk(node["items"], namespace)
        if kind == "map" and "values" in node:
            out["values"] = self.walk(node["values"], namespace)
        return out

    def _define(self, node: dict[str, Any], namespace: str, before: int) -> dict[str, Any]:
        """A named type (a nameless one, which Avro does not allow, is walked but not defined)."""
        name = full_name(node["name"], node.get("namespace"), namespace) if isinstance(node.get("name"), str) else ""
        if name and name in self.open:
            raise AvroNameError(f"the Avro name {name!r} is defined inside its own definition")
        inner = name.rpartition(".")[0] if name else namespace  # the namespace of what is defined inside
        if name:
            self.open.add(name)
        out = dict(node)
        if node.get("type") in ("record", "error") and isinstance(node.get("fields"), list):
            out["fields"] = [
                {**f, "type": self.walk(f["type"], inner)} if isinstance(f, dict) and "type" in f else f
                for f in node["fields"]
            ]
        self.open.discard(name)
        if name:
            if name in self.defined and self.defined[name] != out:  # (the same definition again: harmless)
                raise AvroNameError(f"the Avro name {name!r} is defined twice, differently")
            self.defined.setdefault(name, out)
            self.sizes.setdefault(name, self.nodes - before)
        return out

    def _reference(self, name: str, namespace: str) -> Any:
        for candidate in (full_name(name, None, namespace), name):
            if candidate in self.open:
                raise AvroNameError(f"the Avro type {candidate!r} refers to itself (a recursive type)")
            if candidate in self.defined:
                self._count(self.sizes[candidate])
                return self.defined[candidate]
        raise AvroNameError(f"the Avro type {name!r} is neither a primitive nor a name defined before it")

    def _count(self, nodes: int) -> None:
        self.nodes += nodes
        if self.nodes > MAX_NODES:
            raise AvroNameError(f"the schema expands to more than {MAX_NODES:,} types once its names are resolved")


def full_name(name: str, namespace: Any, enclosing: str) -> str:
    """The full name of `name` defined (or referred to) with the `namespace` attribute, inside `enclosing`."""
    if "." in name:
        return name
    space = namespace if isinstance(namespace, str) else enclosing
    return f"{space}.{name}" if space else name

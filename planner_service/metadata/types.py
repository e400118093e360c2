"""Iceberg types and schemas, parsed from the table-metadata JSON form (spec: "Schemas and Data Types")."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from planner_service.errors import CorruptMetadataError
from planner_service.json_text import without_nulls

_FIXED = re.compile(r"fixed\[\s*(\d+)\s*\]")
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")

PRIMITIVE_NAMES = frozenset(
    {
        "boolean", "int", "long", "float", "double", "date", "time", "timestamp", "timestamptz",
        "timestamp_ns", "timestamptz_ns", "string", "uuid", "binary", "unknown", "variant",
    }
)  # fmt: skip


@dataclass(frozen=True)
class PrimitiveType:
    """A primitive type: `name` is the spec's type string ("long", "fixed[16]", "decimal(9,2)")."""

    name: str
    length: int | None = None  # fixed[L]
    precision: int | None = None  # decimal(P,S)
    scale: int | None = None

    @property
    def kind(self) -> str:
        """The type without its parameters: "fixed", "decimal" or the name itself."""
        if self.length is not None:
            return "fixed"
        if self.precision is not None:
            return "decimal"
        return self.name

    def __str__(self) -> str:
        return self.name

    def to_json(self) -> str:
        return self.name


@dataclass(frozen=True)
class NestedField:
    field_id: int
    name: str
    type: IcebergType
    required: bool
    doc: str | None = None
    initial_default: Any = None
    write_default: Any = None

    def to_json(self) -> dict[str, Any]:
        return without_nulls({
            "id": self.field_id, "name": self.name, "required": self.required, "type": self.type.to_json(),
            "doc": self.doc, "initial-default": self.initial_default, "write-default": self.write_default,
        })  # fmt: skip


@dataclass(frozen=True)
class StructType:
    fields: tuple[NestedField, ...]

    kind = "struct"

    def to_json(self) -> dict[str, Any]:
        return {"type": "struct", "fields": [f.to_json() for f in self.fields]}


@dataclass(frozen=True)
class ListType:
    element_id: int
    element: IcebergType
    element_required: bool

    kind = "list"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "list", "element-id": self.element_id, "element": self.element.to_json(),
            "element-required": self.element_required,
        }  # fmt: skip


@dataclass(frozen=True)
class MapType:
    key_id: int
    key: IcebergType
    value_id: int
    value: IcebergType
    value_required: bool

    kind = "map"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "map", "key-id": self.key_id, "key": self.key.to_json(), "value-id": self.value_id,
            "value": self.value.to_json(), "value-required": self.value_required,
        }  # fmt: skip


IcebergType = PrimitiveType | StructType | ListType | MapType


@dataclass(frozen=True)
class Schema:
    """A table schema: a struct with an id. Field lookups by id and by name cover nested fields."""

    schema_id: int
    struct: StructType
    identifier_field_ids: tuple[int, ...] = ()
    _by_id: dict[int, NestedField] = field(default_factory=dict, compare=False, repr=False)
    _by_name: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    _by_lower_name: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    _full_names: dict[int, str] = field(default_factory=dict, compare=False, repr=False)
    _parents: dict[int, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        short_names: dict[str, int] = {}
        for path, short, fld, parent in _walk(self.struct, (), (), None):
            self._by_id[fld.field_id] = fld
            full = ".".join(path)
            self._by_name[full] = fld.field_id
            self._full_names[fld.field_id] = full
            short_names.setdefault(".".join(short), fld.field_id)
            if parent is not None:
                self._parents[fld.field_id] = parent
        # Java IndexByName: short names ("points.x" for "points.element.x") unless they clash with a full name
        for name, fid in short_names.items():
            self._by_name.setdefault(name, fid)
        for name, fid in self._by_name.items():
            self._by_lower_name.setdefault(name.lower(), fid)

    @property
    def fields(self) -> tuple[NestedField, ...]:
        return self.struct.fields

    def find_field(self, field_id: int) -> NestedField | None:
        return self._by_id.get(field_id)

    def find_field_by_name(self, name: str, case_sensitive: bool = True) -> NestedField | None:
        """Resolve a dotted name ("a.b"; list/map parts as "element", "key", "value", or Java's short names)."""
        index, key = (self._by_name, name) if case_sensitive else (self._by_lower_name, name.lower())
        fid = index.get(key)
        return None if fid is None else self._by_id[fid]

    def column_name(self, field_id: int) -> str | None:
        """The full (canonical) dotted name of a field."""
        return self._full_names.get(field_id)

    def ancestors(self, field_id: int) -> list[NestedField]:
        """The fields enclosing a field, innermost first (Java TypeUtil.ancestorFields)."""
        out = []
        parent = self._parents.get(field_id)
        while parent is not None:
            out.append(self._by_id[parent])
            parent = self._parents.get(parent)
        return out

    def to_json(self) -> dict[str, Any]:
        out = {"type": "struct", "schema-id": self.schema_id, "fields": [f.to_json() for f in self.fields]}
        if self.identifier_field_ids:
            out["identifier-field-ids"] = list(self.identifier_field_ids)
        return out


def java_type_string(typ: IcebergType) -> str:
    """Iceberg Java's Type.toString, for messages that read like Iceberg's."""
    if isinstance(typ, PrimitiveType):
        return typ.name
    if isinstance(typ, StructType):
        parts = [
            f"{f.field_id}: {f.name}: {'required' if f.required else 'optional'} {java_type_string(f.type)}"
            for f in typ.fields
        ]
        return f"struct<{', '.join(parts)}>"
    if isinstance(typ, ListType):
        return f"list<{java_type_string(typ.element)}>"
    return f"map<{java_type_string(typ.key)}, {java_type_string(typ.value)}>"


def _walk(
    typ: IcebergType, path: tuple[str, ...], short: tuple[str, ...], parent: int | None
) -> Iterator[tuple[tuple[str, ...], tuple[str, ...], NestedField, int | None]]:
    """(full name parts, short name parts, field, parent id) for every nested field, depth first."""
    if isinstance(typ, StructType):
        for f in typ.fields:
            yield (*path, f.name), (*short, f.name), f, parent
            yield from _walk(f.type, (*path, f.name), (*short, f.name), f.field_id)
    elif isinstance(typ, ListType):
        elem = NestedField(typ.element_id, "element", typ.element, typ.element_required)
        # short names skip "element" when the element is a struct (Java IndexByName)
        elem_short = short if isinstance(typ.element, StructType) else (*short, "element")
        yield (*path, "element"), (*short, "element"), elem, parent
        yield from _walk(typ.element, (*path, "element"), elem_short, typ.element_id)
    elif isinstance(typ, MapType):
        key = NestedField(typ.key_id, "key", typ.key, True)
        value = NestedField(typ.value_id, "value", typ.value, typ.value_required)
        yield (*path, "key"), (*short, "key"), key, parent
        yield from _walk(typ.key, (*path, "key"), (*short, "key"), typ.key_id)
        value_short = short if isinstance(typ.value, StructType) else (*short, "value")
        yield (*path, "value"), (*short, "value"), value, parent
        yield from _walk(typ.value, (*path, "value"), value_short, typ.value_id)


def parse_type(obj: Any) -> IcebergType:
    """Parse a type from its table-metadata JSON form."""
    if isinstance(obj, str):
        return parse_primitive(obj)
    if isinstance(obj, dict):
        kind = obj.get("type")
        try:
            if kind == "struct":
                return StructType(tuple(_parse_field(f) for f in obj["fields"]))
            if kind == "list":
                return ListType(obj["element-id"], parse_type(obj["element"]), bool(obj["element-required"]))
            if kind == "map":
                return MapType(
                    obj["key-id"], parse_type(obj["key"]), obj["value-id"], parse_type(obj["value"]),
                    bool(obj["value-required"]),
                )  # fmt: skip
        except KeyError as exc:
            raise CorruptMetadataError(f"Invalid {kind} type, missing {exc}") from None
    raise CorruptMetadataError("Cannot parse a type: expected a type name or a struct, list or map object")


def parse_primitive(text: str) -> PrimitiveType:
    name = text.strip().lower()
    if name in PRIMITIVE_NAMES:
        return PrimitiveType(name)
    if m := _FIXED.fullmatch(name):
        return PrimitiveType(f"fixed[{m.group(1)}]", length=int(m.group(1)))
    if m := _DECIMAL.fullmatch(name):
        p, s = int(m.group(1)), int(m.group(2))
        return PrimitiveType(f"decimal({p}, {s})", precision=p, scale=s)
    if name.startswith(("geometry", "geography")):
        return PrimitiveType(name)
    raise CorruptMetadataError(f"Unknown primitive type: {text!r}")


def _parse_field(obj: dict[str, Any]) -> NestedField:
    try:
        return NestedField(
            field_id=int(obj["id"]),
            name=str(obj["name"]),
            type=parse_type(obj["type"]),
            required=bool(obj["required"]),
            doc=obj.get("doc"),
            initial_default=obj.get("initial-default"),
            write_default=obj.get("write-default"),
        )
    except KeyError as exc:
        raise CorruptMetadataError(f"Invalid struct field, missing {exc}") from None


def parse_schema(obj: dict[str, Any]) -> Schema:
    struct = parse_type({**obj, "type": "struct"})
    assert isinstance(struct, StructType)
    return Schema(
        schema_id=int(obj.get("schema-id", 0)),
        struct=struct,
        identifier_field_ids=tuple(obj.get("identifier-field-ids") or ()),
    )

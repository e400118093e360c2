"""Iceberg types and schemas, parsed from the table-metadata JSON form (spec: "Schemas and Data Types")."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from planner_service.errors import CorruptMetadataError, did_you_mean, nearest_names
from planner_service.json_text import without_nulls
from planner_service.metadata.json_fields import echo, get_array, get_bool, get_int, get_string, require_object
from planner_service.nesting import depth_of, ensure_recursion_headroom

_FIXED = re.compile(r"fixed\[\s*(\d+)\s*\]", re.ASCII)
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)", re.ASCII)
MAX_DECIMAL_PRECISION = 38
# Nesting of struct, list and map types a schema may have, checked before anything recurses over a type.
# Java's limit is Jackson's 1,000 levels of JSON: 330 structs (three levels each), or 990 lists.
MAX_TYPE_DEPTH = 330
MAX_LISTED_COLUMNS = 30  # a message refusing a column lists at most this many of the table's

PRIMITIVE_NAMES = frozenset(
    {
        "boolean",
        "int",
        "long",
        "float",
        "double",
        "date",
        "time",
        "timestamp",
        "timestamptz",
        "timestamp_ns",
        "timestamptz_ns",
        "string",
        "uuid",
        "binary",
        "unknown",
        "variant",
    }
)


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
        return without_nulls(
            {
                "id": self.field_id,
                "name": self.name,
                "required": self.required,
                "type": self.type.to_json(),
                "doc": self.doc,
                "initial-default": self.initial_default,
                "write-default": self.write_default,
            }
        )


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
            "type": "list",
            "element-id": self.element_id,
            "element": self.element.to_json(),
            "element-required": self.element_required,
        }


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
            "type": "map",
            "key-id": self.key_id,
            "key": self.key.to_json(),
            "value-id": self.value_id,
            "value": self.value.to_json(),
            "value-required": self.value_required,
        }


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

    def column_names(self) -> list[str]:
        """Every name find_field_by_name resolves (nested fields' full dotted names and Java's short ones)."""
        return list(self._by_name)

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


def unknown_column(schema: Schema, name: str) -> str:
    """What a message refusing the column `name` adds: the schema's nearest names (nested ones dotted) and its
    top-level columns, at most MAX_LISTED_COLUMNS of them, e.g. " (did you mean 'id'?); the columns are id,
    ts, region, amount"."""
    top = [f.name for f in schema.fields]
    if not top:
        return "; the table has no columns"
    listed = ", ".join(top[:MAX_LISTED_COLUMNS])
    more = f" and {len(top) - MAX_LISTED_COLUMNS} more" if len(top) > MAX_LISTED_COLUMNS else ""
    near = did_you_mean(nearest_names(name, schema.column_names()), _single_quoted)
    return f"{near}; the columns are {listed}{more}"


def _single_quoted(name: str) -> str:
    return f"'{name}'"


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
    """Parse a type from its table-metadata JSON form, as Java's SchemaParser does (with its messages). Its
    nesting is measured first, without recursion: deeper than MAX_TYPE_DEPTH is an error, and what recursing
    over a type may take (the parse, then every walk over the schema) has headroom."""
    depth = depth_of(obj, _json_type_children, lambda node: isinstance(node, dict), MAX_TYPE_DEPTH)
    if depth > MAX_TYPE_DEPTH:
        raise CorruptMetadataError(f"A type nests deeper than {MAX_TYPE_DEPTH} levels of structs, lists and maps")
    ensure_recursion_headroom()
    return _parse_type(obj)


def _json_type_children(node: Any) -> list[Any]:
    if not isinstance(node, dict):
        return []
    kind = node.get("type")
    if kind == "struct" and isinstance(node.get("fields"), list):
        return [f.get("type") for f in node["fields"] if isinstance(f, dict)]
    if kind == "list":
        return [node.get("element")]
    if kind == "map":
        return [node.get("key"), node.get("value")]
    return []


def _parse_type(obj: Any) -> IcebergType:
    if isinstance(obj, str):
        return parse_primitive(obj)
    if isinstance(obj, dict):
        kind = obj.get("type")
        if kind == "struct":
            fields = get_array("fields", obj, "struct fields")
            return StructType(tuple(_parse_field(f) for f in fields))
        if kind == "list":
            element = _parse_type(obj.get("element"))
            return ListType(get_int("element-id", obj), element, get_bool("element-required", obj))
        if kind == "map":
            key, value = _parse_type(obj.get("key")), _parse_type(obj.get("value"))
            key_id, value_id = get_int("key-id", obj), get_int("value-id", obj)
            return MapType(key_id, key, value_id, value, get_bool("value-required", obj))
    raise CorruptMetadataError(f"Cannot parse type from json: {echo(obj)}")


def parse_primitive(text: str) -> PrimitiveType:
    name = text.strip().lower()
    if name in PRIMITIVE_NAMES:
        return PrimitiveType(name)
    if m := _FIXED.fullmatch(name):
        return PrimitiveType(f"fixed[{m.group(1)}]", length=int(m.group(1)))
    if m := _DECIMAL.fullmatch(name):
        p, s = int(m.group(1)), int(m.group(2))
        if p > MAX_DECIMAL_PRECISION:
            raise CorruptMetadataError(f"Decimals with precision larger than 38 are not supported: {p}")
        return PrimitiveType(f"decimal({p}, {s})", precision=p, scale=s)
    if name.startswith(("geometry", "geography")):
        return PrimitiveType(name)
    raise CorruptMetadataError(f"Cannot parse type string to primitive: {text[:_NAME_ECHO]}")


_NAME_ECHO = 100


def _parse_field(obj: Any) -> NestedField:
    node = require_object(obj, "Cannot parse struct field from non-object")
    field_id, name = get_int("id", node), get_string("name", node)
    if not name:
        raise CorruptMetadataError("Invalid column name: (empty)")
    typ = _parse_type(node.get("type"))
    return NestedField(
        field_id=field_id,
        name=name,
        type=typ,
        required=get_bool("required", node),
        doc=node.get("doc"),
        initial_default=node.get("initial-default"),
        write_default=node.get("write-default"),
    )


def parse_schema(obj: Any) -> Schema:
    """A schema, checked as Java's Schema checks one: unique field ids, unique full names, identifier fields
    that exist and are required primitives outside lists and maps."""
    node = require_object(obj, "Cannot parse schema from non-object")
    struct = parse_type(node)
    if not isinstance(struct, StructType):
        raise CorruptMetadataError(f"Cannot parse type from json: {echo(node)}")
    schema_id = get_int("schema-id", node) if "schema-id" in node else 0
    identifiers = node.get("identifier-field-ids") or []
    if not isinstance(identifiers, list) or not all(type(i) is int for i in identifiers):
        raise CorruptMetadataError(f"Cannot parse identifier-field-ids from non-array of ints: {echo(identifiers)}")
    _check_ids_and_names(struct)
    schema = Schema(schema_id=schema_id, struct=struct, identifier_field_ids=tuple(identifiers))
    for field_id in identifiers:
        _check_identifier(schema, field_id)
    return schema


def _check_ids_and_names(struct: StructType) -> None:
    names: dict[int, str] = {}
    ids: dict[str, int] = {}
    for path, _, fld, _ in _walk(struct, (), (), None):
        full = ".".join(path)
        if fld.field_id in names:
            raise CorruptMetadataError(
                f"Multiple entries with same key: {fld.field_id}={names[fld.field_id]} and {fld.field_id}={full}"
            )
        if full in ids:
            problem = f"multiple fields for name {full}: {ids[full]} and {fld.field_id}"
            raise CorruptMetadataError(f"Invalid schema: {problem}")
        names[fld.field_id], ids[full] = full, fld.field_id


def _check_identifier(schema: Schema, field_id: int) -> None:
    fld = schema.find_field(field_id)
    if fld is None:
        raise CorruptMetadataError(f"Cannot add fieldId {field_id} as an identifier field: field does not exist")
    problem = None
    if not isinstance(fld.type, PrimitiveType):
        problem = "not a primitive type field"
    elif not fld.required:
        problem = "not a required field"
    elif fld.type.name in ("float", "double"):
        problem = "must not be float or double field"
    else:
        for parent in schema.ancestors(field_id):
            if not isinstance(parent.type, StructType):
                problem = f"must not be nested in {java_type_string(parent.type)}"
            elif not parent.required:
                problem = f"must not be nested in an optional field {parent.name}"
    if problem is not None:
        raise CorruptMetadataError(f"Cannot add field {fld.name} as an identifier field: {problem}")

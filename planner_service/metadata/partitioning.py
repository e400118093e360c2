"""Partition specs and the transform names they carry (spec: "Partitioning")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from planner_service.errors import CorruptMetadataError
from planner_service.metadata.json_fields import get_array, get_int, get_string, require_object
from planner_service.metadata.types import IcebergType, NestedField, PrimitiveType, Schema, StructType

PARTITION_DATA_ID_START = 1000  # v1 specs carry no field ids: Iceberg assigns 1000, 1001, ...
# The ids of a manifest entry's own fields (manifest_entry 0-4, data_file 100-146 with their map and list
# parts): a partition field with one of them clashes with it in the manifest's schema (Java refuses).
MANIFEST_FIELD_IDS = frozenset({*range(5), *range(100, 147)})

MAX_TRANSFORM_WIDTH = 2**31 - 1  # a Java int
_BUCKET = re.compile(r"bucket\[\s*(\d+)\s*\]", re.ASCII)
_TRUNCATE = re.compile(r"truncate\[\s*(\d+)\s*\]", re.ASCII)
_INT = PrimitiveType("int")
_DATE = PrimitiveType("date")


@dataclass(frozen=True)
class Transform:
    """A partition transform by name: identity, bucket[N], truncate[W], year, month, day, hour, void."""

    name: str  # identity, bucket, truncate, year, month, day, hour, void, or the unknown text itself
    param: int | None = None

    def __str__(self) -> str:
        return f"{self.name}[{self.param}]" if self.param is not None else self.name

    def result_type(self, source: IcebergType) -> IcebergType:
        if self.name in ("bucket", "year", "month", "hour"):
            return _INT
        if self.name == "day":
            return _DATE
        return source  # identity, truncate, void, unknown

    @property
    def preserves_order(self) -> bool:
        return self.name in ("identity", "truncate", "year", "month", "day", "hour")


_WIDTH_PROBLEMS = {"bucket": "Invalid number of buckets", "truncate": "Invalid truncate width"}


def parse_transform(text: str) -> Transform:
    """A transform by its name (Java Transforms.fromString); a bucket count or truncate width must be a
    positive int (ValueError otherwise, with Java's message)."""
    name = text.strip().lower()
    for kind, pattern in (("bucket", _BUCKET), ("truncate", _TRUNCATE)):
        if m := pattern.fullmatch(name):
            digits = m.group(1).lstrip("0")
            if not digits:
                raise ValueError(f"{_WIDTH_PROBLEMS[kind]}: 0 (must be > 0)")
            if len(digits) > 10 or int(digits) > MAX_TRANSFORM_WIDTH:
                raise ValueError(f"Invalid {kind} width in {text.strip()[:40]!r}: must be 1 to {MAX_TRANSFORM_WIDTH}")
            return Transform(kind, int(digits))
    if name in ("identity", "year", "month", "day", "hour", "void"):
        return Transform(name)
    return Transform(text)


@dataclass(frozen=True)
class PartitionField:
    source_id: int
    field_id: int
    name: str
    transform: Transform

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "transform": str(self.transform),
            "source-id": self.source_id,
            "field-id": self.field_id,
        }


@dataclass(frozen=True)
class PartitionSpec:
    spec_id: int
    fields: tuple[PartitionField, ...]

    @property
    def is_unpartitioned(self) -> bool:
        """True with no fields or only void fields (Iceberg's PartitionSpec.isUnpartitioned)."""
        return all(f.transform.name == "void" for f in self.fields)

    def partition_type(self, schema: Schema) -> StructType:
        """The partition tuple's struct; a dropped source column gives an `unknown` field."""
        out = []
        for f in self.fields:
            source = schema.find_field(f.source_id)
            typ = f.transform.result_type(source.type) if source else PrimitiveType("unknown")
            out.append(NestedField(f.field_id, f.name, typ, required=False))
        return StructType(tuple(out))

    def to_json(self) -> dict[str, Any]:
        return {"spec-id": self.spec_id, "fields": [f.to_json() for f in self.fields]}


def parse_partition_spec(obj: Any, spec_id: int = 0) -> PartitionSpec:
    """A spec from its JSON object, or (v1) from its list of fields; checked as Java's PartitionSpecParser
    checks it: names used once; transform widths. What a transform may take is checked against the schema
    (metadata_checks.check_spec)."""
    if isinstance(obj, list):  # v1's partition-spec: its fields
        raw_fields = obj
    else:
        node = require_object(obj, "Cannot parse spec from non-object")
        spec_id = get_int("spec-id", node)
        raw_fields = get_array("fields", node, "partition spec fields")
    fields = []
    names: set[str] = set()
    without_ids = sum(1 for raw in raw_fields if isinstance(raw, dict) and "field-id" not in raw)
    if 0 < without_ids < len(raw_fields):
        raise CorruptMetadataError(
            f"Cannot parse spec with missing field IDs: {without_ids} missing of {len(raw_fields)} fields."
        )
    for pos, raw in enumerate(raw_fields):
        f = require_object(raw, "Cannot parse partition field from non-object")
        name, transform = get_string("name", f), get_string("transform", f)
        if not name:
            raise CorruptMetadataError("Invalid column name: (empty)")
        if name in names:
            raise CorruptMetadataError(f"Cannot use partition name more than once: {name}")
        names.add(name)
        try:
            parsed = parse_transform(transform)
        except ValueError as exc:
            raise CorruptMetadataError(str(exc)) from None
        field_id = get_int("field-id", f) if "field-id" in f else PARTITION_DATA_ID_START + pos
        fields.append(PartitionField(get_int("source-id", f), field_id, name, parsed))
    ids = [f.field_id for f in fields]
    for field_id in ids:
        if ids.count(field_id) > 1 or field_id in MANIFEST_FIELD_IDS:
            raise CorruptMetadataError(
                f"Multiple entries with same key: partition field id {field_id} is used twice in a manifest's "
                f"schema (partition fields take ids of their own, from {PARTITION_DATA_ID_START})"
            )
    return PartitionSpec(spec_id, tuple(fields))

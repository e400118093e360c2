"""Partition specs and the transform names they carry (spec: "Partitioning")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from planner_service.errors import CorruptMetadataError
from planner_service.metadata.types import IcebergType, NestedField, PrimitiveType, Schema, StructType

PARTITION_DATA_ID_START = 1000  # v1 specs carry no field ids: Iceberg assigns 1000, 1001, ...

MAX_TRANSFORM_WIDTH = 2**31 - 1  # a Java int
_BUCKET = re.compile(r"bucket\[\s*(\d+)\s*\]")
_TRUNCATE = re.compile(r"truncate\[\s*(\d+)\s*\]")
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


def parse_transform(text: str) -> Transform:
    """A transform by its name (Java Transforms.fromString); a bucket count or truncate width must be a
    positive int (ValueError otherwise)."""
    name = text.strip().lower()
    for kind, pattern in (("bucket", _BUCKET), ("truncate", _TRUNCATE)):
        if m := pattern.fullmatch(name):
            digits = m.group(1).lstrip("0")
            if not digits or len(digits) > 10 or int(digits) > MAX_TRANSFORM_WIDTH:
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
            "name": self.name, "transform": str(self.transform), "source-id": self.source_id,
            "field-id": self.field_id,
        }  # fmt: skip


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


def parse_partition_spec(obj: dict[str, Any] | list[Any], spec_id: int = 0) -> PartitionSpec:
    raw_fields = obj if isinstance(obj, list) else obj.get("fields", [])
    if isinstance(obj, dict):
        spec_id = int(obj.get("spec-id", spec_id))
    fields = []
    try:
        for pos, f in enumerate(raw_fields):
            fields.append(
                PartitionField(
                    source_id=int(f["source-id"]),
                    field_id=int(f.get("field-id", PARTITION_DATA_ID_START + pos)),
                    name=str(f["name"]),
                    transform=parse_transform(str(f["transform"])),
                )
            )
    except KeyError as exc:
        raise CorruptMetadataError(f"Invalid partition field, missing {exc}") from None
    except ValueError as exc:
        raise CorruptMetadataError(f"Invalid partition field: {exc}") from None
    return PartitionSpec(spec_id, tuple(fields))

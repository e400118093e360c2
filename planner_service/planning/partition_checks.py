"""Partition values a plan can state: each of the kind its spec's field says (a manifest written for another
spec or schema, or a forged one, holds strings where the field is a decimal) and one that JSON can carry (a
date within years 1 to 9999). Checked on each distinct partition before an answer starts, since an answer
streamed in part cannot turn into an error."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from planner_service.errors import CorruptMetadataError
from planner_service.metadata.json_values import to_json_value
from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.types import PrimitiveType, Schema, StructType

Partition = tuple[int, tuple[Any, ...]]

_INTEGERS = frozenset({"int", "long", "date", "time", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns"})
_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "boolean": (bool,),
    "float": (float, int),
    "double": (float, int),
    "string": (str,),
    "decimal": (Decimal,),
    "uuid": (uuid.UUID, bytes),
    "fixed": (bytes,),
    "binary": (bytes,),
}


def check_partitions(
    partitions: Iterable[Partition], specs: dict[int, PartitionSpec], schema: Schema, file_of: Any
) -> int:
    """How many partitions were checked, once each (spec id, values) is found to be one the spec's partition
    type can hold and JSON can state; else a CorruptMetadataError naming `file_of(partition)`'s file, the
    field and the value's kind."""
    types: dict[int, StructType] = {}
    checked = 0
    for partition in partitions:
        checked += 1
        spec_id, values = partition
        if spec_id not in types:
            types[spec_id] = specs[spec_id].partition_type(schema) if spec_id in specs else StructType(())
        for fld, value in zip(types[spec_id].fields, values, strict=False):
            problem = _problem(fld.type, value)
            if problem is not None:
                raise CorruptMetadataError(
                    f"Content file {file_of(partition)} has a partition value that spec {spec_id}'s field "
                    f"{fld.name} ({fld.type}) cannot hold: {problem}"
                )
    return checked


def _problem(typ: Any, value: Any) -> str | None:
    if value is None or not isinstance(typ, PrimitiveType):
        return None
    kind = typ.kind
    if kind in _INTEGERS:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, _PYTHON_TYPES.get(kind, (object,)))
    if not ok:
        return f"a {type(value).__name__} value"
    try:
        to_json_value(typ, value)
    except (ValueError, OverflowError, ArithmeticError, TypeError):
        return f"{value!r:.40} is out of the type's range"
    return None

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
    field and the value's kind. Checked a field at a time over all partitions of a spec (their kinds, and the
    least and greatest value of a field whose valid values are a range); partition by partition only to name
    the first that fails."""
    partitions = list(partitions)
    rows: dict[int, list[tuple[Any, ...]]] = {}
    for spec_id, values in partitions:
        rows.setdefault(spec_id, []).append(values)
    types = {spec_id: _partition_type(specs, spec_id, schema) for spec_id in rows}
    if all(
        _column_ok(fld.type, [values[i] if i < len(values) else None for values in members])
        for spec_id, members in rows.items()
        for i, fld in enumerate(types[spec_id].fields)
    ):
        return len(partitions)
    for partition in partitions:
        spec_id, values = partition
        for fld, value in zip(types[spec_id].fields, values, strict=False):
            problem = _problem(fld.type, value)
            if problem is not None:
                raise CorruptMetadataError(
                    f"Content file {file_of(partition)} has a partition value that spec {spec_id}'s field "
                    f"{fld.name} ({fld.type}) cannot hold: {problem}"
                )
    return len(partitions)


def _partition_type(specs: dict[int, PartitionSpec], spec_id: int, schema: Schema) -> StructType:
    return specs[spec_id].partition_type(schema) if spec_id in specs else StructType(())


def _column_ok(typ: Any, column: list[Any]) -> bool:
    """Whether every value of a partition field is one `_problem` passes (False: maybe not; look one by one)."""
    present = [value for value in column if value is not None]
    if not present or not isinstance(typ, PrimitiveType):
        return True
    kind, kinds = typ.kind, set(map(type, present))
    if kind in _INTEGERS:  # (each of these kinds states a range of integers: its ends decide)
        return kinds == {int} and _problem(typ, min(present)) is None and _problem(typ, max(present)) is None
    allowed = _PYTHON_TYPES.get(kind, (object,))
    if not all(issubclass(k, allowed) for k in kinds):
        return False
    return kind not in ("uuid", "decimal") or all(_problem(typ, value) is None for value in present)


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

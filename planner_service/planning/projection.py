"""Column projection (`select`): the scan's schema limited to the selected columns plus the columns the
row filter reads, as Java's BaseScan.lazyColumnProjection does, so a reader can apply the residual."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from planner_service.errors import BadRequestError
from planner_service.metadata.types import ListType, MapType, NestedField, Schema, StructType, unknown_column


def project_schema(
    schema: Schema, select: Sequence[str] | None, filter_ids: Iterable[int] = (), case_sensitive: bool = True
) -> Schema:
    """`schema` with only the selected fields and the fields the filter reads (`filter_ids`, where the
    schema has them); None or "*" selects everything."""
    if select is None:
        return schema
    wanted: set[int] = set()
    for name in select:
        if name == "*":
            return schema
        fld = schema.find_field_by_name(name, case_sensitive)
        if fld is None:
            raise BadRequestError(f"Cannot select unknown column '{name}'{unknown_column(schema, name)}")
        wanted.add(fld.field_id)
    wanted.update(fid for fid in filter_ids if schema.find_field(fid) is not None)
    # a selected struct keeps all its fields; a selected nested field keeps its parents
    keep = set(wanted)
    for fid in wanted:
        keep.update(a.field_id for a in schema.ancestors(fid))
    struct = _select(schema.struct, keep, wanted)
    assert isinstance(struct, StructType)
    return Schema(schema.schema_id, struct, tuple(i for i in schema.identifier_field_ids if i in keep))


def _select(typ: StructType | ListType | MapType, keep: set[int], whole: set[int]) -> StructType | ListType | MapType:
    if isinstance(typ, StructType):
        fields = []
        for f in typ.fields:
            if f.field_id in whole:
                fields.append(f)
            elif f.field_id in keep:
                inner = f.type
                if isinstance(inner, StructType | ListType | MapType):
                    inner = _select(inner, keep, whole)
                fields.append(NestedField(f.field_id, f.name, inner, f.required, f.doc))
        return StructType(tuple(fields))
    return typ  # a list or map is kept whole once any part of it is selected

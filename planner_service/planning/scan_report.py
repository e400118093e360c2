"""The ScanReport Iceberg Java reports for a plan (SnapshotScan.planFiles, ScanMetricsResult), in the JSON
of Iceberg's REST metrics endpoint (ScanReportParser; with "report-type": "scan-report" it is a
ReportMetricsRequest): the table, snapshot, sanitized filter, schema and projected fields, and the scan's
counters, each as Java counts it (ManifestGroup, DeleteFileIndex, ScanMetricsUtil):

- result-data-files, total-file-size-in-bytes: the planned data files and their size;
- result-delete-files, total-delete-file-size-in-bytes: the delete files of each planned data file, counted
  once per data file they apply to (a DV by its blob's size);
- total/scanned/skipped-data-manifests and -delete-manifests: manifests kept or pruned;
- skipped-data-files, skipped-delete-files: live entries of the kept manifests the filter rules out;
- indexed-delete-files (and of those equality-delete-files, positional-delete-files, dvs): the delete files
  that may apply.

Java reports none for incremental append scans or a table without snapshots, and neither does this."""

from __future__ import annotations

from typing import Any

import numpy as np

from planner_service import __version__
from planner_service.expressions.expression_json import expression_to_json
from planner_service.expressions.sanitize import sanitized
from planner_service.metadata.types import IcebergType, ListType, MapType, Schema, StructType
from planner_service.planning.scan_plan import ScanPlan

REPORT_TYPE = "scan-report"


def scan_report(plan: ScanPlan, now_ms: int | None = None) -> dict[str, Any] | None:
    """The plan's ScanReport (None where Java reports none); `now_ms` dates the filter's descriptions."""
    if plan.snapshot is None or plan.incremental or plan.files is None:
        return None
    schema = plan.schema
    ids = projected_field_ids(schema)
    return {
        "table-name": plan.table.name,
        "snapshot-id": plan.snapshot.snapshot_id,
        "filter": expression_to_json(sanitized(plan.row_filter, schema, plan.case_sensitive, now_ms)),
        "schema-id": schema.schema_id,
        "projected-field-ids": ids,
        "projected-field-names": [schema.column_name(i) for i in ids],
        "metrics": scan_metrics(plan),
        "metadata": {"engine-name": "scan-planner", "engine-version": __version__},
    }


def scan_metrics(plan: ScanPlan) -> dict[str, Any]:
    m, files = plan.metrics, plan.files
    assert files is not None
    result_deletes = delete_bytes = 0
    if files.delete_offsets is not None and len(files.delete_refs):
        sizes = np.fromiter((d.content_size for d in files.delete_files), np.int64, len(files.delete_files))
        result_deletes = len(files.delete_refs)
        delete_bytes = int(sizes[files.delete_refs].sum())
    counters = {
        "result-data-files": m.scanned_data_files,
        "result-delete-files": result_deletes,
        "total-data-manifests": m.total_data_manifests,
        "total-delete-manifests": m.total_delete_manifests,
        "scanned-data-manifests": m.total_data_manifests - m.skipped_data_manifests,
        "skipped-data-manifests": m.skipped_data_manifests,
        "total-file-size-in-bytes": m.total_file_size_bytes,
        "total-delete-file-size-in-bytes": delete_bytes,
        "skipped-data-files": m.skipped_data_files,
        "skipped-delete-files": m.skipped_delete_files,
        "scanned-delete-manifests": m.total_delete_manifests - m.skipped_delete_manifests,
        "skipped-delete-manifests": m.skipped_delete_manifests,
        "indexed-delete-files": m.total_delete_files,
        "equality-delete-files": m.equality_delete_files,
        "positional-delete-files": m.positional_delete_files,
        "dvs": m.dvs,
    }
    out: dict[str, Any] = {
        "total-planning-duration": {
            "count": 1,
            "time-unit": "nanoseconds",
            "total-duration": int(m.total_planning_ms * 1_000_000),
        },
    }
    for name, value in counters.items():
        out[name] = {"unit": "bytes" if name.endswith("in-bytes") else "count", "value": int(value)}
    return out


def projected_field_ids(schema: Schema) -> list[int]:
    """TypeUtil.getProjectedIds(schema) in Java's iteration order: the ids of primitive and struct fields,
    and of list elements and map keys and values that are not structs, collected depth first into a
    java.util.HashSet (whose order is its buckets' order, which ImmutableSet.copyOf keeps)."""
    found: list[int] = []
    _collect(schema.struct, found)
    return _java_hash_set_order(found)


def _collect(struct: StructType, found: list[int]) -> None:
    for fld in struct.fields:
        _visit(fld.type, found)  # (Java's SchemaVisitor visits a field's type before the field)
        if not isinstance(fld.type, ListType | MapType):  # structs and primitives
            found.append(fld.field_id)


def _visit(typ: IcebergType, found: list[int]) -> bool:
    """The ids under a type; True when it is a primitive (Java's visit of it gives null)."""
    if isinstance(typ, StructType):
        _collect(typ, found)
        return False
    if isinstance(typ, ListType):
        if _visit(typ.element, found):
            found.append(typ.element_id)
        return False
    if isinstance(typ, MapType):
        _visit(typ.key, found)
        if _visit(typ.value, found):  # Java adds the key's and value's ids when the value is a primitive
            found.extend([typ.key_id, typ.value_id])
        return False
    return True


def _java_hash_set_order(ids: list[int]) -> list[int]:
    """The iteration order of a java.util.HashSet<Integer> the ids were added to in this order."""
    unique = list(dict.fromkeys(ids))
    capacity = 16
    while len(unique) > capacity * 0.75:
        capacity *= 2
    buckets: dict[int, list[int]] = {}
    for i in unique:
        h = i & 0xFFFFFFFF
        buckets.setdefault((h ^ (h >> 16)) & (capacity - 1), []).append(i)
    return [i for b in sorted(buckets) for i in buckets[b]]

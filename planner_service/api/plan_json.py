"""The /plan response body (ARCHITECTURE.md wire contract), shared by the HTTP service and the CLI.

Content files use the Iceberg REST spec's DataFile / DeleteFile JSON forms (1.11 spelling: lower-case
content and format, partition as a list), so one vocabulary serves /plan and the REST endpoints.
"""

from __future__ import annotations

import json
from typing import Any

from planner_service.errors import CorruptMetadataError
from planner_service.expressions.expression_json import expression_to_json
from planner_service.metadata.content_file import CONTENT_NAMES, DATA, ContentFile
from planner_service.metadata.json_values import to_json_value
from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.types import Schema, StructType
from planner_service.planning.planner import ScanMetrics, ScanPlan


class ContentFileEncoder:
    """Encodes content files; partition types are derived once per spec."""

    def __init__(self, specs: dict[int, PartitionSpec], schema: Schema) -> None:
        self._types = {spec_id: spec.partition_type(schema) for spec_id, spec in specs.items()}
        self._memo: dict[int, dict[str, Any]] = {}  # id(file) -> JSON; a file split in many tasks is encoded once

    def encode(self, f: ContentFile) -> dict[str, Any]:
        out = self._memo.get(id(f))
        if out is None:
            out = self._memo[id(f)] = self._encode(f)
        return out

    def _encode(self, f: ContentFile) -> dict[str, Any]:
        ptype = self._types.get(f.spec_id, StructType(()))
        out: dict[str, Any] = {
            "spec-id": f.spec_id,
            "content": CONTENT_NAMES[f.content],
            "file-path": f.path,
            "file-format": f.format.lower(),
            "partition": [to_json_value(fld.type, v) for fld, v in zip(ptype.fields, f.partition, strict=False)],
            "file-size-in-bytes": f.file_size_in_bytes,
            "record-count": f.record_count,
        }
        if f.split_offsets is not None:
            out["split-offsets"] = list(f.split_offsets)
        if f.sort_order_id is not None:
            out["sort-order-id"] = f.sort_order_id
        if f.key_metadata is not None:
            out["key-metadata"] = bytes(f.key_metadata).hex().upper()
        if f.content == DATA:
            if f.first_row_id is not None:
                out["first-row-id"] = f.first_row_id
        else:
            if f.equality_ids is not None:
                out["equality-ids"] = list(f.equality_ids)
            if f.referenced_data_file is not None:
                out["referenced-data-file"] = f.referenced_data_file
            if f.content_offset is not None:
                out["content-offset"] = f.content_offset
            if f.content_size_in_bytes is not None:
                out["content-size-in-bytes"] = f.content_size_in_bytes
        if f.data_sequence_number is not None:
            out["sequence-number"] = f.data_sequence_number
        return out


class DeleteFileTable:
    """A response's `delete-files`: each delete file encoded once, referred to by its index."""

    def __init__(self, encoder: ContentFileEncoder) -> None:
        self._encoder = encoder
        self._index: dict[int, int] = {}  # id(delete file) -> its index in `files`
        self.files: list[dict[str, Any]] = []

    def ref(self, d: ContentFile) -> int:
        index = self._index.get(id(d))
        if index is None:
            index = self._index[id(d)] = len(self.files)
            self.files.append(self._encoder.encode(d))
        return index


def plan_to_json(plan: ScanPlan) -> dict[str, Any]:
    meta = plan.table.metadata
    encoder = ContentFileEncoder(meta.specs, meta.schema)
    deletes = DeleteFileTable(encoder)

    tasks = []
    for combined in plan.tasks:
        files = [
            {
                "data-file": encoder.encode(t.file),
                "start": t.start,
                "length": t.length,
                "residual-filter": expression_to_json(t.residual),
                "delete-file-references": [deletes.ref(d) for d in t.deletes],
            }
            for t in combined.tasks
        ]
        tasks.append(
            {"files": files, "size-bytes": combined.size_bytes, "estimated-row-count": combined.estimated_rows}
        )
    used_specs = sorted({t.file.spec_id for c in plan.tasks for t in c.tasks})
    return {
        "table": plan.table.name,
        "metadata-location": plan.table.metadata_location,
        "snapshot-id": plan.snapshot.snapshot_id if plan.snapshot else None,
        "schema": plan.schema.to_json(),
        "filter": expression_to_json(plan.row_filter),  # what a reader applies to rows with SQL's null rules
        "partition-specs": [meta.specs[s].to_json() for s in used_specs],
        # what a reader needs besides the files: Parquet files without field ids are read by this mapping
        **({"name-mapping": _name_mapping(meta.properties)} if NAME_MAPPING in meta.properties else {}),
        "split-options": {
            "split-size": plan.options.split_size,
            "lookback": plan.options.lookback,
            "file-open-cost": plan.options.open_file_cost,
        },
        "tasks": tasks,
        "delete-files": deletes.files,
        "metrics": metrics_to_json(plan.metrics, len(plan.tasks)),
        **({"explain": plan.explain.to_json()} if plan.explain else {}),
    }


NAME_MAPPING = "schema.name-mapping.default"


def _name_mapping(properties: dict[str, str]) -> Any:
    try:
        return json.loads(properties[NAME_MAPPING])
    except ValueError:
        raise CorruptMetadataError(f"Table property {NAME_MAPPING} is not valid JSON") from None


def metrics_to_json(m: ScanMetrics, task_count: int) -> dict[str, Any]:
    return {
        "planning-time-ms": round(m.total_planning_ms, 3),
        "stage-time-ms": {k: round(v, 3) for k, v in m.stage_ms.items()},
        "total-data-manifests": m.total_data_manifests,
        "skipped-data-manifests": m.skipped_data_manifests,
        "total-delete-manifests": m.total_delete_manifests,
        "skipped-delete-manifests": m.skipped_delete_manifests,
        "scanned-data-files": m.scanned_data_files,
        "skipped-data-files": m.skipped_data_files,
        "total-delete-files": m.total_delete_files,
        "total-file-size-bytes": m.total_file_size_bytes,
        "total-delete-file-size-bytes": m.total_delete_file_size_bytes,
        "combined-tasks": task_count,
    }

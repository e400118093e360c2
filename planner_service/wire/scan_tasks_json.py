"""The Iceberg REST spec's ScanTasks (a REST plan's page): `file-scan-tasks` whose delete files are listed
once, in the page's own `delete-files`, and referred to by index (so no page carries delete files without
the tasks that use them, which clients reject)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planner_service.expressions.expression_json import expression_to_json
from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.types import Schema
from planner_service.planning.scan_tasks import FileScanTask
from planner_service.wire.content_file_json import ContentFileEncoder, DeleteFileTable


def encode_scan_tasks(
    tasks: Sequence[FileScanTask],
    specs: dict[int, PartitionSpec],
    schema: Schema,
    stats_ids: frozenset[int] | None = None,
) -> dict[str, Any]:
    """`tasks` as ScanTasks; data files carry the stats of the `stats_ids` columns (REST stats-fields)."""
    encoder = ContentFileEncoder(specs, schema, stats_ids)
    deletes = DeleteFileTable(encoder)

    out_tasks = []
    for task in tasks:
        out: dict[str, Any] = {"data-file": encoder.encode(task.file)}
        if task.deletes:  # Java's RESTFileScanTaskParser leaves out an empty list
            out["delete-file-references"] = [deletes.ref(d) for d in task.deletes]
        out["residual-filter"] = expression_to_json(task.residual)
        out_tasks.append(out)
    return {"delete-files": deletes.files, "file-scan-tasks": out_tasks}

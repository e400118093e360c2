"""Tasks of a plan fetched by index (GET /plans/{id}/tasks): each a self-contained CombinedScanTask in the
form a reader takes, with the plan's reader context (schema, filter, specs, name mapping) and only the
delete files these tasks use. A Spark executor fetches its own task this way, so no driver holds the plan.
"""

from __future__ import annotations

from typing import Any

from planner_service.errors import NoSuchPlanTaskError
from planner_service.expressions.expression_json import expression_to_json
from planner_service.planning.scan_plan import ScanPlan
from planner_service.wire.content_file_json import ContentFileEncoder, DeleteFileTable

MAX_TASKS_PER_REQUEST = 10_000


def encode_tasks(
    plan: ScanPlan, plan_id: str, reader_context: dict[str, Any], start: int, end: int | None
) -> dict[str, Any]:
    """Tasks start .. end - 1 (end None: start alone) of the plan, with what reading them needs besides the
    tasks (`reader_context`: plan_head() without its metrics) and the delete files they use."""
    files, tasks = plan.files, plan.combined
    count = len(tasks) if tasks is not None else 0
    end = start + 1 if end is None else end
    if not 0 <= start < end <= count:
        raise NoSuchPlanTaskError(f"No tasks {start}..{end - 1} in plan: it has {count} tasks (0..{count - 1})")
    if end - start > MAX_TASKS_PER_REQUEST:
        raise NoSuchPlanTaskError(f"At most {MAX_TASKS_PER_REQUEST} tasks per request, not {end - start}")
    assert files is not None and tasks is not None
    meta = plan.table.metadata
    encoder = ContentFileEncoder(meta.specs, meta.schema)
    deletes = DeleteFileTable(encoder)
    first, last = int(tasks.offsets[start]), int(tasks.offsets[end])
    positions = sorted(set(tasks.file[first:last].tolist()))
    content = dict(zip(positions, files.index.content_files(files.rows[positions]), strict=True))
    residuals = [expression_to_json(r) for r in files.residuals]  # few: one per distinct residual
    out = []
    for t in range(start, end):
        items = []
        for p in tasks.pieces(t):
            pos = int(tasks.file[p])
            items.append(
                {
                    "data-file": encoder.encode(content[pos]),
                    "start": int(tasks.start[p]),
                    "length": int(tasks.length[p]),
                    "residual-filter": residuals[files.residual_id[pos]],
                    "delete-file-references": [
                        deletes.ref(files.delete_files[j]) for j in files.deletes_of(pos).tolist()
                    ],
                }
            )
        out.append(
            {
                "index": t,
                "files": items,
                "size-bytes": int(tasks.size_bytes[t]),
                "estimated-row-count": int(tasks.estimated_rows[t]),
            }
        )
    plan_context = {**reader_context, "delete-files": deletes.files}
    return {"plan-id": plan_id, "plan": plan_context, "tasks": out}

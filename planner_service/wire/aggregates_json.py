"""The JSON of aggregates from metadata (the /aggregate response, and `scan-planner aggregate --json`):
each aggregate's name, Iceberg type, value, whether it is exact and why not."""

from __future__ import annotations

from typing import Any

from planner_service.metadata.json_values import to_json_scalar
from planner_service.planning.metadata_aggregates import AggregateValue
from planner_service.planning.scan_plan import ScanPlan


def encode_aggregates(plan: ScanPlan, values: list[AggregateValue]) -> dict[str, Any]:
    """The /aggregate response: each aggregate's name, Iceberg type, JSON single value (null when null or
    not exact), whether it is exact and why not."""
    out = []
    for v in values:
        entry: dict[str, Any] = {
            "name": v.aggregate.name,
            "type": v.type.to_json(),
            "value": _json_value(v),
            "exact": v.exact,
        }
        if v.reason is not None:
            entry["reason"] = v.reason
        out.append(entry)
    return {
        "table": plan.table.name,
        "snapshot-id": plan.snapshot.snapshot_id if plan.snapshot is not None else None,
        "exact": all(v.exact for v in values),
        "data-files": len(plan.files) if plan.files is not None else 0,
        "aggregates": out,
        "planning-time-ms": round(plan.metrics.total_planning_ms, 3),
    }


def _json_value(v: AggregateValue) -> Any:
    return to_json_scalar(v.type, v.value)  # (a NaN as Jackson writes it: "NaN")

"""Request models of the native endpoints (kebab-case, as the Iceberg REST spec names fields) and of the
Iceberg REST scan planning requests. They are parsed into domain objects (ScanRequest, expressions) by
the routes; nothing else sees them."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import orjson
from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner_service.errors import BadRequestError
from planner_service.planning.explain import FileRule
from planner_service.planning.grouping import Grouping
from planner_service.planning.scan_request import ScanRequest, rest_scan_request, scan_request, snapshot_fields
from planner_service.service.explore import MAX_PAGE, Page


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class WireModel(BaseModel):
    # strict: a JSON true is not the snapshot id 1, nor "5" a number
    model_config = ConfigDict(alias_generator=_kebab, populate_by_name=True, extra="forbid", strict=True)


class ScanSelection(WireModel):
    """What a scan reads: exactly one of `table` and `metadata-location`; at most one snapshot choice (or an
    incremental append range); a filter."""

    table: str | None = Field(None, description="namespace.name, resolved through the configured catalog")
    metadata_location: str | None = Field(None, description="a metadata.json location instead of a name")
    snapshot_id: int | None = Field(None, description="the snapshot to scan; default: the current one")
    as_of_timestamp_ms: int | None = Field(None, description="the last snapshot committed at or before this time")
    ref: str | None = Field(None, description="a branch or tag")
    start_snapshot_id: int | None = Field(
        None, description="an incremental append scan: the files appended after this snapshot (exclusive)"
    )
    end_snapshot_id: int | None = Field(
        None, description="an incremental append scan: up to this snapshot (inclusive; default: the current one)"
    )
    filter: Any = Field(None, description="a filter string or a REST JSON expression")
    case_sensitive: bool = Field(True, description="false: the filter's and select's column names ignore case")

    def to_scan(self, **planning: Any) -> ScanRequest:
        """The scan this selection asks for (a 400 for a bad filter or snapshot choice), with `planning`'s
        further ScanRequest fields (scan_request's keyword arguments)."""
        return scan_request(**snapshot_fields(self), filter=self.filter, case_sensitive=self.case_sensitive, **planning)


class PlanRequest(ScanSelection):
    """POST /plan."""

    select: list[str] | None = Field(None, description="column names to read; the response schema is projected")
    limit: int | None = Field(
        None,
        ge=1,
        description="rows wanted: planning may stop once the files that surely match hold this many "
        "(metrics say whether it did: cut-short)",
    )
    parallelism: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="Spark's parallelism: the split size adapts to it as Spark + Iceberg's does "
        "(read.split.adaptive-size.enabled, unless a split-size option is given)",
    )
    options: dict[str, int | str] = Field(
        default_factory=dict, description="split-size, lookback, file-open-cost (or read.split.* names)"
    )
    explain: bool = Field(False, description="say why each manifest and data file was kept or skipped")
    inline_task_limit: int | None = Field(
        None, ge=0, description="plans with more tasks answer with their plan id (default: the service's setting)"
    )
    grouping: Grouping = Field(
        "none",
        description="partition: each task holds the splits of one partition tuple (Iceberg's "
        "preserve-data-grouping), tasks ordered by key; the plan lists the keys and each task its own. "
        "sort-order: within each partition, tasks of files whose ranges of the table's sort order do not "
        "overlap, files in key order; each task also says its key-range",
    )
    task_estimates: bool = Field(
        True,
        description="a plan answered by its id lists each task's size and row estimate (false: only the "
        "task count, as a Spark driver wants it: two numbers per task are 300 MB of JSON at 16 million tasks)",
    )

    def to_scan(self, **planning: Any) -> ScanRequest:
        return super().to_scan(
            select=self.select,
            options=self.options,
            limit=self.limit,
            parallelism=self.parallelism,
            grouping=self.grouping,
            **planning,
        )


class ExploreRequest(PlanRequest):
    """POST /explore: a plan request, explained, and which page of each of its details to list."""

    manifests_offset: int = Field(0, ge=0, description="the first manifest listed")
    files_offset: int = Field(0, ge=0, description="the first data file listed (of `files-rule`'s, when given)")
    files_rule: FileRule | None = Field(None, description="list only the files this rule decided")
    tasks_offset: int = Field(0, ge=0, description="the first task listed")
    page_size: int = Field(50, ge=0, le=MAX_PAGE, description="manifests, files and tasks listed of each")

    def page(self) -> Page:
        return Page(self.manifests_offset, self.files_offset, self.files_rule, self.tasks_offset, self.page_size)


class AggregateRequest(ScanSelection):
    """POST /aggregate."""

    aggregates: list[str] = Field(
        description="count(*), count(col), min(col), max(col): answered from the data files' metadata where exact"
    )


class ReportMetricsRequest(BaseModel):
    """POST .../tables/{table}/metrics: the REST spec's ReportMetricsRequest, a ScanReport or CommitReport
    with its `report-type` (the report's own fields are kept as they come)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    report_type: Literal["scan-report", "commit-report"] = Field(
        alias="report-type", description="scan-report or commit-report"
    )


class RestWireModel(WireModel):
    """Strict types (a string is no snapshot id), but unknown fields are ignored: the spec adds optional
    hints over time, and Iceberg's own parsers ignore what they do not know."""

    model_config = ConfigDict(extra="ignore", strict=True)


class PlanTableScanRequest(RestWireModel):  # POST .../tables/{table}/plan (no docstring: the OpenAPI schema)
    snapshot_id: int | None = Field(None, description="the snapshot to scan; default: the current one")
    select: list[str] | None = Field(None, description="column names; checked, they do not change the files")
    filter: Any = Field(None, description="a REST JSON expression")
    case_sensitive: bool = Field(True, description="false: the filter's and select's column names ignore case")
    use_snapshot_schema: bool = Field(False, description="accepted; the filter binds to the current schema")
    start_snapshot_id: int | None = Field(None, description="an incremental append scan: after this snapshot")
    end_snapshot_id: int | None = Field(None, description="an incremental append scan: up to this snapshot")
    stats_fields: list[str] | None = Field(
        None, description="columns whose value/null/NaN counts and lower/upper bounds the data files carry"
    )
    min_rows_requested: int | None = Field(
        None, ge=0, description="planning may stop once the files that surely match hold this many rows"
    )

    def to_scan(self) -> ScanRequest:
        """The scan it asks for, checked by the spec's rules (a 400 for a bad filter or snapshot choice)."""
        return rest_scan_request(
            snapshot_id=self.snapshot_id,
            start_snapshot_id=self.start_snapshot_id,
            end_snapshot_id=self.end_snapshot_id,
            filter=self.filter,
            case_sensitive=self.case_sensitive,
            limit=self.min_rows_requested,
            stats_fields=self.stats_fields,
        )


class FetchScanTasksRequest(RestWireModel):  # POST .../tables/{table}/tasks
    plan_task: str = Field(description="a token from `plan-tasks`")


M = TypeVar("M", bound=BaseModel)


async def parse_body(request: Request, model: type[M]) -> M:
    """The JSON body as `model`, whatever the Content-Type (curl -d sends form encoding by default)."""
    raw = await request.body()
    if not raw.strip():
        raise BadRequestError(f"Missing JSON body: expected a {model.__name__} object")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequestError(f"Invalid JSON body: {exc}") from None
    return validated(model, data)


def validated(model: type[M], data: Any) -> M:
    """`data` (JSON values by their wire names) as `model`, or a 400 naming each field that is wrong; the
    CLI checks its flags with the same models, so both say the same."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BadRequestError(describe_validation_errors(exc.errors())) from None


def json_body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` for a route that parses its body with parse_body()."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}


def describe_validation_errors(errors: Any) -> str:
    """pydantic's errors as one readable line: `snapshot-id: Input should be a valid integer`."""
    parts = []
    for err in errors:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        if err.get("type") == "json_invalid":
            parts.append(f"Invalid JSON body: {err.get('ctx', {}).get('error', err.get('msg'))}")
        elif err.get("type") == "extra_forbidden":
            parts.append(f"{loc}: unknown field")
        else:
            parts.append(f"{loc}: {err.get('msg')}" if loc else str(err.get("msg")))
    return "; ".join(parts) or "Invalid request"

"""Request models of the native endpoints (kebab-case, as the Iceberg REST spec names fields) and of the
Iceberg REST scan planning requests. They are parsed into domain objects (ScanRequest, expressions) by
the routes; nothing else sees them.

Their JSON Schema (the OpenAPI document's) says what the checks made after parsing refuse, so that a request
valid by the schema is never refused for its shape: name patterns (catalog/base.py check_name), which fields
go together (metadata/snapshot_choice.py, planning/scan_request.py), option names and ranges
(planning/options.py), aggregates (planning/metadata_aggregates.py). Those checks answer in their own words; the
schema only says what they hold. What no schema can say (a column of the table, a filter's grammar) is said
in the field's description."""

from __future__ import annotations

from itertools import combinations
from typing import Annotated, Any, Literal, TypeVar

import orjson
from annotated_types import Interval
from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner_service.errors import BadRequestError
from planner_service.planning.explain import FileRule
from planner_service.planning.grouping import Grouping
from planner_service.planning.metadata_aggregates import MAX_AGGREGATES
from planner_service.planning.options import ALIASES, LOOKBACK, OPEN_FILE_COST, SPLIT_SIZE
from planner_service.planning.scan_request import ScanRequest, rest_scan_request, scan_request, snapshot_fields
from planner_service.service.plan_explorer import MAX_PAGE, Page


def _kebab(name: str) -> str:
    return name.replace("_", "-")


# --- The later checks, as JSON Schema ---------------------------------------------------------------------

# A namespace level or table name (check_name): no control character, `/` or `\`; not empty, `.` or `..`
_CHAR = r"[^\x00-\x1f\x7f/\\]"
_FIRST = r"[^\x00-\x1f\x7f/\\.]"
_LEVEL = rf"(?:{_FIRST}{_CHAR}*|\.{_FIRST}{_CHAR}*|\.\.{_CHAR}+)"
NAME = rf"^{_LEVEL}$"
NAMESPACE = rf"^{_LEVEL}(?:\x1f{_LEVEL})*$"  # levels joined by the unit separator (REST paths)
# A table's namespace and name in a REST path: without dots, since the service names the table
# `namespace.name` (so a level holding a dot would name another table)
DOTLESS_NAME = rf"^{_FIRST}+$"
DOTLESS_NAMESPACE = rf"^{_FIRST}+(?:\x1f{_FIRST}+)*$"
QUALIFIED_NAME = rf"^{_FIRST}+(?:\.{_FIRST}+)+$"  # namespace.name (TableIdentifier.parse): no empty part
NAME_RULE = (
    "each name (level) at most 255 bytes of UTF-8 (the schema's pattern checks the rest, not the length), "
    "without control characters, `/` or `\\`, and not `.` or `..`: a 400 otherwise"
)
_COLUMNS = "the names must be columns of the table: a 400 otherwise (which the schema cannot know)"
_RANGE = "start and end must be snapshots of the table, start an ancestor of end: a 400 otherwise, as Java's"

_GIVEN: dict[str, Any] = {"not": {"type": "null"}}


def _given(*names: str) -> dict[str, Any]:
    """The schema of an object in which each of `names` is given (present and not null)."""
    return {"required": list(names), "properties": dict.fromkeys(names, _GIVEN)}


def _at_most_one(*names: str) -> dict[str, Any]:
    return {"not": {"anyOf": [_given(a, b) for a, b in combinations(names, 2)]}}


def _needs(name: str, other: str) -> dict[str, Any]:
    return {"if": _given(name), "then": _given(other)}


def _whole(maximum: int, minimum: int) -> dict[str, Any]:
    """An option's value: an integer in range, or its digits as a string (read options are strings in
    Spark; the schema bounds a string's digits, not its value)."""
    digits = len(str(maximum)) - 1
    pattern = rf"^\s*\+?0*[1-9][0-9]{{0,{digits - 1}}}\s*$" if minimum > 0 else rf"^\s*\+?[0-9]{{1,{digits}}}\s*$"
    return {
        "anyOf": [{"type": "integer", "minimum": minimum, "maximum": maximum}, {"type": "string", "pattern": pattern}]
    }


_LONG_MIN, _LONG_MAX, _INT_MAX = -(2**63), 2**63 - 1, 2**31 - 1


def _integral(value: Any) -> Any:
    """A JSON number without a fraction as the integer it is (to JSON Schema, 5.0 is the integer 5), within
    an object's fields and its options; any other value as it is, for the strict checks."""
    if isinstance(value, float) and value.is_integer() and _LONG_MIN <= value <= _LONG_MAX:
        return int(value)
    if isinstance(value, dict):
        return {key: _integral(item) if isinstance(item, float) else item for key, item in value.items()}
    return value


# the wire's integers: 64 bits (what the JSON parser reads as integers; the REST spec's int64)
Long = Annotated[int, Interval(ge=_LONG_MIN, le=_LONG_MAX)]
_OPTION_VALUES = {SPLIT_SIZE: _whole(_LONG_MAX, 1), LOOKBACK: _whole(_INT_MAX, 1), OPEN_FILE_COST: _whole(_LONG_MAX, 0)}
OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **_OPTION_VALUES,
        **{alias: _OPTION_VALUES[name] for alias, name in ALIASES.items()},
    },
    "additionalProperties": False,
}
# count(*), count(col), min(col), max(col), in any case (planning/metadata_aggregates.py parse_aggregate)
_COUNT, _MIN, _MAX = "[Cc][Oo][Uu][Nn][Tt]", "[Mm][Ii][Nn]", "[Mm][Aa][Xx]"
AGGREGATE = rf"^\s*(?:{_COUNT}\s*\(\s*\*\s*\)|(?:{_COUNT}|{_MIN}|{_MAX})\s*\(\s*[^\s*()][^()]*\))\s*$"


class WireModel(BaseModel):
    # strict: a JSON true is not the snapshot id 1, nor "5" a number (but 5.0 is 5, as JSON Schema says)
    model_config = ConfigDict(alias_generator=_kebab, populate_by_name=True, extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _integral_numbers(cls, data: Any) -> Any:
        return {key: _integral(value) for key, value in data.items()} if isinstance(data, dict) else data


class ScanSelection(WireModel):
    """What a scan reads: exactly one of `table` and `metadata-location`; at most one snapshot choice (or an
    incremental append range); a filter."""

    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {"oneOf": [_given("table"), _given("metadata-location")]},
                _at_most_one("snapshot-id", "as-of-timestamp-ms", "ref", "start-snapshot-id"),
                _needs("end-snapshot-id", "start-snapshot-id"),  # (Spark's rules for an incremental scan)
            ]
        }
    )

    table: str | None = Field(
        None,
        description=f"namespace.name, resolved through the configured catalog; {NAME_RULE}",
        json_schema_extra={"pattern": QUALIFIED_NAME},
    )
    metadata_location: str | None = Field(
        None,
        description="a metadata.json location instead of a name: a local path, file:, s3://bucket/key (s3a, s3n), "
        "gs://, abfs[s]:// or wasb[s]://container@account..., hdfs://; the schema checks only that it holds no "
        "control character: another scheme or a malformed location is a 400, one outside the allowed roots 403",
        json_schema_extra={"pattern": r"^[^\x00-\x1f\x7f]+$"},
    )
    snapshot_id: Long | None = Field(None, description="the snapshot to scan; default: the current one")
    as_of_timestamp_ms: Long | None = Field(None, description="the last snapshot committed at or before this time")
    ref: str | None = Field(None, description="a branch or tag")
    start_snapshot_id: Long | None = Field(
        None, description=f"an incremental append scan: the files appended after this snapshot (exclusive); {_RANGE}"
    )
    end_snapshot_id: Long | None = Field(
        None, description="an incremental append scan: up to this snapshot (inclusive; default: the current one)"
    )
    filter: Any = Field(
        None,
        description="a filter string or a REST JSON expression; it must parse (docs/guides/filters.md) and name "
        "columns of the table, which the schema cannot say: a 400 otherwise",
        json_schema_extra={"type": ["string", "boolean", "object", "null"]},
    )
    case_sensitive: bool = Field(True, description="false: the filter's and select's column names ignore case")

    def to_scan(self, **planning: Any) -> ScanRequest:
        """The scan this selection asks for (a 400 for a bad filter or snapshot choice), with `planning`'s
        further ScanRequest fields (scan_request's keyword arguments)."""
        return scan_request(**snapshot_fields(self), filter=self.filter, case_sensitive=self.case_sensitive, **planning)


class PlanRequest(ScanSelection):
    """POST /plan."""

    select: list[str] | None = Field(
        None, description=f"column names to read; the response schema is projected; {_COLUMNS}"
    )
    limit: Annotated[Long, Interval(ge=1)] | None = Field(
        None,
        description="rows wanted: planning may stop once the files that surely match hold this many "
        "(metrics say whether it did: cut-short)",
    )
    parallelism: Annotated[Long, Interval(ge=1, le=1_000_000)] | None = Field(
        None,
        description="Spark's parallelism: the split size adapts to it as Spark + Iceberg's does "
        "(read.split.adaptive-size.enabled, unless a split-size option is given)",
    )
    options: dict[str, Long | str] = Field(
        default_factory=dict,
        description="split-size, lookback, file-open-cost (or read.split.* names): integers, or their digits",
        json_schema_extra=OPTIONS_SCHEMA,
    )
    explain: bool = Field(False, description="say why each manifest and data file was kept or skipped")
    inline_task_limit: Annotated[Long, Interval(ge=0)] | None = Field(
        None, description="plans with more tasks answer with their plan id (default: the service's setting)"
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

    manifests_offset: Annotated[Long, Interval(ge=0)] = Field(0, description="the first manifest listed")
    files_offset: Annotated[Long, Interval(ge=0)] = Field(
        0,
        description="the first data file listed: of `files-rule`'s, when given; else of all, the kept files first "
        "(each group in planning order)",
    )
    files_rule: FileRule | None = Field(None, description="list only the files this rule decided")
    tasks_offset: Annotated[Long, Interval(ge=0)] = Field(0, description="the first task listed")
    page_size: Annotated[Long, Interval(ge=0, le=MAX_PAGE)] = Field(
        50, description="manifests, files and tasks listed of each"
    )

    def page(self) -> Page:
        return Page(self.manifests_offset, self.files_offset, self.files_rule, self.tasks_offset, self.page_size)


class AggregateRequest(ScanSelection):
    """POST /aggregate."""

    aggregates: list[str] = Field(
        description="count(*), count(col), min(col), max(col): answered from the data files' metadata where "
        f"exact; {_COLUMNS}",
        json_schema_extra={
            "minItems": 1,
            "maxItems": MAX_AGGREGATES,
            "items": {"type": "string", "pattern": AGGREGATE},
        },
    )


class ReportMetricsRequest(BaseModel):
    """POST .../tables/{table}/metrics: the REST spec's ReportMetricsRequest, a ScanReport or CommitReport
    with its `report-type` (the report's own fields are kept as they come)."""

    model_config = ConfigDict(extra="allow", validate_by_name=False, validate_by_alias=True)

    report_type: Literal["scan-report", "commit-report"] = Field(
        alias="report-type", description="scan-report or commit-report"
    )


class RestWireModel(WireModel):
    """Strict types (a string is no snapshot id), but unknown fields are ignored: the spec adds optional
    hints over time, and Iceberg's own parsers ignore what they do not know. Only the spec's kebab-case
    names are fields: `start_snapshot_id` is an unknown field here, not a second spelling."""

    model_config = ConfigDict(extra="ignore", strict=True, validate_by_name=False, validate_by_alias=True)


class PlanTableScanRequest(RestWireModel):  # POST .../tables/{table}/plan (no docstring: the OpenAPI schema)
    model_config = ConfigDict(
        json_schema_extra={  # a point-in-time scan or an incremental one with both ends, never both (the spec's)
            "allOf": [
                _at_most_one("snapshot-id", "start-snapshot-id"),
                _at_most_one("snapshot-id", "end-snapshot-id"),
                _needs("start-snapshot-id", "end-snapshot-id"),
                _needs("end-snapshot-id", "start-snapshot-id"),
            ]
        }
    )

    snapshot_id: Long | None = Field(None, description="the snapshot to scan; default: the current one")
    select: list[str] | None = Field(
        None, description=f"column names; checked, they do not change the files; {_COLUMNS}"
    )
    filter: Any = Field(
        None,
        description="a REST JSON expression (not a filter string); its columns must be the table's, which the "
        "schema cannot say: a 400 otherwise",
        json_schema_extra={"type": ["boolean", "object", "null"]},
    )
    case_sensitive: bool = Field(True, description="false: the filter's and select's column names ignore case")
    use_snapshot_schema: bool = Field(False, description="accepted; the filter binds to the current schema")
    start_snapshot_id: Long | None = Field(
        None,
        description=f"an incremental append scan: after this snapshot; {_RANGE}",
    )
    end_snapshot_id: Long | None = Field(None, description="an incremental append scan: up to this snapshot")
    stats_fields: list[str] | None = Field(
        None, description=f"columns whose value/null/NaN counts and lower/upper bounds the data files carry; {_COLUMNS}"
    )
    min_rows_requested: Annotated[Long, Interval(ge=0)] | None = Field(
        None, description="planning may stop once the files that surely match hold this many rows"
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

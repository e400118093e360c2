"""What the planning endpoints answer, as models for the OpenAPI docs (/docs, /openapi.json).

The bodies themselves are encoded from the plan's columns (wire/plan_json.py, wire/aggregates_json.py, the
deferred body of api/native.py, api/rest_scan.py), never through these models: the models only describe them, field
by field, in the same kebab-case. tests/api/test_openapi.py holds the two together.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class _Described(BaseModel):
    model_config = ConfigDict(alias_generator=_kebab, populate_by_name=True)


class StorageCredential(_Described):
    """A vended credential (the Iceberg REST spec's StorageCredential): the settings that read files under
    `prefix`. Present only when the service vends credentials (`vend_credentials`)."""

    prefix: str = Field(description="the location prefix these settings read, e.g. s3://lake/db/events")
    config: dict[str, str] = Field(
        description="storage settings by PyIceberg's names: s3.access-key-id, s3.secret-access-key, "
        "s3.session-token, s3.endpoint, s3.region, ..."
    )


class PlanMetrics(_Described):
    """How the plan was made."""

    planning_time_ms: float
    stage_time_ms: dict[str, float] = Field(description="milliseconds per planning stage")
    total_data_manifests: int
    skipped_data_manifests: int
    total_delete_manifests: int
    skipped_delete_manifests: int
    scanned_data_files: int = Field(description="data files planned")
    skipped_data_files: int = Field(description="data files the filter ruled out")
    total_delete_files: int
    total_file_size_bytes: int
    total_delete_file_size_bytes: int
    combined_tasks: int
    cut_short: bool | None = Field(
        None,
        description="only with `limit`: true when planning stopped at the first files (in Iceberg Java's "
        "planFiles() order) that surely hold `limit` rows (no residual, no delete file), false when no such "
        "first files exist and the plan is whole",
    )


class SplitOptionsUsed(_Described):
    """The split options the plan was packed with (after the adaptive split size)."""

    split_size: int
    lookback: int
    file_open_cost: int


class PlannedFile(_Described):
    data_file: dict[str, Any] = Field(description="the Iceberg REST spec's DataFile")
    residual: int = Field(description="index into `residuals`: what the reader must still evaluate")
    delete_file_references: list[int] | None = Field(None, description="indexes into `delete-files`")


class PlannedTask(_Described):
    """A CombinedScanTask: one Spark partition."""

    size_bytes: int
    estimated_row_count: int
    splits: list[list[int]] = Field(description="[file index, start, length] byte ranges of `files`")


class PlanHead(_Described):
    """What every plan answer carries: the plan's id and what reading any of its tasks needs."""

    plan_id: str = Field(description="rebuilds this plan on any replica: GET /plans/{plan-id}[/tasks/{i}]")
    table: str = Field(description="the table's name, or the metadata location it was given as")
    metadata_location: str = Field(description="the metadata.json the plan was made from")
    snapshot_id: int | None = Field(description="the snapshot planned; null: the table has no snapshot")
    table_schema: dict[str, Any] = Field(alias="schema", description="the (projected) Iceberg schema, as JSON")
    non_null_field_ids: list[int] = Field(
        description="the schema's top-level columns known to hold no null in this scan: required, or given a "
        "null count of 0 by every planned data file (a reader may declare them non-nullable; it checks them)"
    )
    filter: Any = Field(description="the scan's filter, a REST JSON expression")
    partition_specs: list[dict[str, Any]] = Field(description="the table's partition specs (the files' spec-id)")
    name_mapping: list[dict[str, Any]] | None = Field(None, description="the table's schema.name-mapping.default")
    split_options: SplitOptionsUsed
    task_count: int = Field(description="the CombinedScanTasks of the plan: one Spark partition each")
    metrics: PlanMetrics
    storage_credentials: list[StorageCredential] | None = Field(
        None, description="vended credentials the files are read with (only when the service vends them)"
    )


class PlanResponse(PlanHead):
    """POST /plan. Up to `inline-task-limit` tasks: `residuals`, `delete-files`, `files` and `tasks` inline;
    more: `task-size-bytes` and `task-estimated-row-count` instead (fetch the tasks by index)."""

    residuals: list[Any] | None = Field(None, description="the distinct residual filters (REST JSON expressions)")
    delete_files: list[dict[str, Any]] | None = Field(None, description="the REST spec's DeleteFiles")
    files: list[PlannedFile] | None = Field(None, description="the planned data files, each once")
    tasks: list[PlannedTask] | None = Field(None, description="the CombinedScanTasks: splits of `files`")
    task_size_bytes: list[int] | None = Field(None, description="a plan over the inline limit: per task")
    task_estimated_row_count: list[int] | None = Field(None, description="a plan over the inline limit: per task")
    explain: dict[str, Any] | None = Field(None, description="with `explain`: why each manifest and file was kept")
    file_urls: dict[str, str] | None = Field(
        None,
        description="a plan made under the caller's read restrictions, inline: a presigned GET URL for each of "
        "its files on S3, by file path, good for presigned_url_ttl_seconds (a task fetched by index carries "
        "its own files' in its `plan`)",
    )


class DeferredPlan(PlanHead):
    """GET /plans/{plan-id}: the plan's reader context and per-task estimates (its tasks: by index)."""

    task_size_bytes: list[int] = Field(description="each task's bytes to read, by task index")
    task_estimated_row_count: list[int] = Field(description="each task's estimated rows, by task index")


class AggregateResult(_Described):
    name: str = Field(description="the aggregate in canonical form: count(*), count(col), min(col), max(col)")
    type: Any = Field(description="its Iceberg type (JSON)")
    value: Any = Field(
        description="the value as a JSON single value (NaN and infinities as strings); null when the aggregate "
        "is null or not exact"
    )
    exact: bool = Field(description="whether metadata answered it exactly; if not, read the rows")
    reason: str | None = Field(
        None,
        description="only when not exact: why (delete files, a residual, missing or truncated stats, NaN, ...)",
    )


class AggregateResponse(_Described):
    """POST /aggregate."""

    table: str = Field(description="the table's name, or the metadata location it was given as")
    snapshot_id: int | None = Field(description="the snapshot aggregated; null: the table has no snapshot")
    exact: bool = Field(description="every aggregate is exact")
    data_files: int = Field(description="data files whose metadata answered")
    aggregates: list[AggregateResult] = Field(description="one per requested aggregate, in the request's order")
    planning_time_ms: float = Field(description="how long answering took")


class RestPlanningResult(_Described):
    """POST .../plan and GET .../plan/{plan-id} (the REST spec's PlanTableScanResult and
    FetchPlanningResult): `completed` with file scan tasks, `submitted` (poll), `failed` or `cancelled`.
    The spec has no field saying a plan with `min-rows-requested` stopped early (docs/guides/rest-clients.md)."""

    status: str = Field(description="completed, submitted, failed or cancelled")
    plan_id: str | None = Field(None, description="completed and submitted plans")
    delete_files: list[dict[str, Any]] | None = Field(None, description="the DeleteFiles the tasks refer to")
    file_scan_tasks: list[dict[str, Any]] | None = Field(
        None, description="the first page: a data file, its delete-file-references and residual-filter each"
    )
    plan_tasks: list[str] | None = Field(None, description="one token per further page (POST .../tasks)")
    storage_credentials: list[StorageCredential] | None = Field(
        None, description="completed plans, when the service vends credentials: what the files are read with"
    )
    error: dict[str, Any] | None = Field(None, description="failed plans: the error model")


class ErrorModel(_Described):
    """The Iceberg REST spec's ErrorModel: what went wrong, its kind and the HTTP status it came with."""

    message: str = Field(min_length=1, description="what went wrong, for people")
    type: str = Field(min_length=1, description="the error's kind, e.g. NoSuchTableException (api/error_kinds.py)")
    code: int = Field(ge=400, le=599, description="the HTTP status of the answer")


class IcebergErrorResponse(_Described):
    """Every error the service answers, native routes and the Iceberg REST routes alike: the REST spec's
    IcebergErrorResponse (never a stack trace)."""

    error: ErrorModel


class OAuthTokenResponse(BaseModel):  # (RFC 6749's names, snake_case)
    """POST /v1/oauth/tokens (RFC 6749 section 5.1; RFC 8693 for a token exchange)."""

    access_token: str = Field(description="the bearer token")
    token_type: str = Field(description="bearer")
    expires_in: int | None = Field(None, description="seconds the token is valid for")
    issued_token_type: str | None = Field(None, description="a token exchange: the type of the token issued")


class OAuthError(BaseModel):
    """The token endpoint's errors (RFC 6749 section 5.2): not the IcebergErrorResponse of every other route."""

    error: str = Field(description="invalid_request, invalid_client, invalid_grant or unsupported_grant_type")
    error_description: str | None = Field(None, description="what went wrong, for people")


class HealthStatus(_Described):
    """GET /health: ok while the service takes work, draining (with 503) once it is stopping."""

    status: str = Field(description="ok or draining")
    catalog_sources: int = Field(description="the catalog sources the service resolves table names in")


class LoadTableResult(_Described):
    """GET .../tables/{table} (the REST spec's LoadTableResult)."""

    metadata_location: str = Field(description="the table's current metadata.json")
    metadata: dict[str, Any] = Field(description="the table's metadata.json, as read")
    config: dict[str, str] = Field(description="the table's client settings (and the first vended credential's)")
    storage_credentials: list[StorageCredential] | None = Field(
        None, description="with X-Iceberg-Access-Delegation: vended-credentials, when the service vends them"
    )
    read_restrictions: dict[str, Any] | None = Field(
        None,
        description="what the policy restricts of the caller's reads (the REST spec's ReadRestrictions: "
        "required-row-filter, required-column-projections by field id); with it, config has scan-planning-mode "
        "server and no credentials are vended",
    )


def described(
    model: type[BaseModel] | None,
    description: str,
    headers: dict[str, str] | None = None,
    links: dict[str, dict[str, Any]] | None = None,
    status: int = 200,
) -> dict[int | str, dict[str, Any]]:
    """A route's success answer for `responses=`: its `status` body is `model` (for the docs only; the route
    encodes it itself; None: no body), with the response `headers` described (name -> description) and the
    OpenAPI `links` to what a client calls next."""
    response: dict[str, Any] = {"description": description}
    if model is not None:
        response["model"] = model
    if headers:
        response["headers"] = {
            name: {"description": text, "schema": {"type": "string"}} for name, text in headers.items()
        }
    if links:
        response["links"] = links
    return {status: response}

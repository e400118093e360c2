"""One exception tree for the planner; each kind maps to one HTTP status (see api/errors)."""

from __future__ import annotations


class PlannerError(Exception):
    """Base of every error the planner reports to a caller."""

    status_code = 500
    error_type = "PlannerError"
    retry_after: int | None = None  # seconds, for a Retry-After header (a 503 worth retrying soon)

    def __init__(self, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if retry_after is not None:
            self.retry_after = retry_after


class BadRequestError(PlannerError):
    """The request is malformed: bad option, bad filter, conflicting snapshot choice."""

    status_code = 400
    error_type = "BadRequestException"


class InvalidOptionError(BadRequestError):
    """A read option (split-size, lookback, file-open-cost) or setting has a value it cannot take."""

    error_type = "InvalidOptionException"


class NotFoundError(PlannerError):
    """What the request names does not exist."""

    status_code = 404
    error_type = "NotFoundException"


class NoSuchTableError(NotFoundError):
    """No catalog knows the table, or its metadata location holds no table."""

    error_type = "NoSuchTableException"


class NoSuchNamespaceError(NotFoundError):
    """A REST namespace that no catalog lists."""

    error_type = "NoSuchNamespaceException"


class NoSuchSnapshotError(NotFoundError):
    """A snapshot id (or time) the table has no snapshot for."""

    error_type = "NoSuchSnapshotException"


class NoSuchRefError(NotFoundError):
    """A branch or tag name the table does not have."""

    error_type = "NoSuchRefException"


class LocationNotAllowedError(PlannerError):
    """A location lies outside the configured allow-list roots."""

    status_code = 403
    error_type = "ForbiddenException"


class CorruptMetadataError(PlannerError):
    """A metadata file, manifest list or manifest exists but cannot be decoded."""

    status_code = 422
    error_type = "CorruptMetadataException"


class StorageError(PlannerError):
    """Storage could not be read: an unreachable or failing store, denied credentials (worth a retry soon),
    a missing file."""

    status_code = 503
    error_type = "StorageException"
    retry_after: int | None = 1


class MissingFileError(StorageError):
    """A file the table's metadata names is gone (lost, not late: no Retry-After)."""

    retry_after = None


class CatalogUnavailableError(StorageError):
    """An upstream catalog cannot be reached, timed out or failed (5xx): worth a retry soon."""

    error_type = "ServiceUnavailableException"


class UpstreamCatalogError(PlannerError):
    """An upstream catalog refused the service's own credentials (401/403) or answered what it should not:
    the service's configuration, not the request, needs fixing (502)."""

    status_code = 502
    error_type = "BadGatewayException"


class OverloadedError(PlannerError):
    """Too many plans are being made at once; the client should retry after `retry_after` seconds."""

    status_code = 503
    error_type = "ServiceUnavailableException"
    retry_after: int | None = 5


class PlanCancelledError(PlannerError):
    """The plan was stopped: its client went away, or a REST plan was cancelled (499: nobody reads it)."""

    status_code = 499
    error_type = "PlanCancelledException"


class NoSuchPlanIdError(NotFoundError):
    """A REST scan plan id that is unknown, expired or belongs to another table."""

    error_type = "NoSuchPlanIdException"


class NoSuchPlanTaskError(NotFoundError):
    """A REST plan task token that is unknown, expired, cancelled or belongs to another table."""

    error_type = "NoSuchPlanTaskException"


def shown(text: str, limit: int = 80) -> str:
    """Client-given text quoted for an error message, cut to `limit` characters."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")

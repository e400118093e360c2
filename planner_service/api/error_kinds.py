"""The one table from planner error kinds to what the wire says of them: the HTTP status, the Iceberg REST
error `type`, and the Retry-After seconds a kind suggests by default (an error may carry its own,
`retry_in_seconds`). A kind without a row of its own takes its nearest ancestor's (the most specific kind
along its MRO wins). The HTTP handlers, a failed REST plan's status and the CLI all answer from here.

No FastAPI here: the CLI imports it without loading the web stack."""

from __future__ import annotations

from dataclasses import dataclass

from planner_service.errors import (
    BadRequestError,
    CatalogUnavailableError,
    CorruptMetadataError,
    ForbiddenError,
    IdentityProviderUnavailableError,
    InvalidOptionError,
    LocationNotAllowedError,
    MissingFileError,
    NoSuchNamespaceError,
    NoSuchPlanIdError,
    NoSuchPlanTaskError,
    NoSuchRefError,
    NoSuchSnapshotError,
    NoSuchTableError,
    NotAuthenticatedError,
    NotFoundError,
    OverloadedError,
    PlanCancelledError,
    PlannerError,
    PlanTimeoutError,
    StorageError,
    UpstreamCatalogError,
)
from planner_service.expressions.binding import InvalidFilterError


@dataclass(frozen=True)
class ErrorKind:
    status: int  # the HTTP status
    type: str  # the Iceberg REST error type
    retry_after: int | None = None  # seconds, for a Retry-After header (a 503 worth trying again soon)


ERROR_KINDS: dict[type[PlannerError], ErrorKind] = {
    PlannerError: ErrorKind(500, "PlannerError"),
    BadRequestError: ErrorKind(400, "BadRequestException"),
    InvalidOptionError: ErrorKind(400, "InvalidOptionException"),
    InvalidFilterError: ErrorKind(400, "ValidationException"),
    NotFoundError: ErrorKind(404, "NotFoundException"),
    NoSuchTableError: ErrorKind(404, "NoSuchTableException"),
    NoSuchNamespaceError: ErrorKind(404, "NoSuchNamespaceException"),
    NoSuchSnapshotError: ErrorKind(404, "NoSuchSnapshotException"),
    NoSuchRefError: ErrorKind(404, "NoSuchRefException"),
    NoSuchPlanIdError: ErrorKind(404, "NoSuchPlanIdException"),
    NoSuchPlanTaskError: ErrorKind(404, "NoSuchPlanTaskException"),
    LocationNotAllowedError: ErrorKind(403, "ForbiddenException"),
    ForbiddenError: ErrorKind(403, "ForbiddenException"),
    NotAuthenticatedError: ErrorKind(401, "NotAuthorizedException"),
    IdentityProviderUnavailableError: ErrorKind(503, "ServiceUnavailableException", retry_after=5),
    CorruptMetadataError: ErrorKind(422, "CorruptMetadataException"),
    StorageError: ErrorKind(503, "StorageException", retry_after=1),
    MissingFileError: ErrorKind(503, "StorageException"),  # lost, not late: no Retry-After
    CatalogUnavailableError: ErrorKind(503, "ServiceUnavailableException", retry_after=1),
    UpstreamCatalogError: ErrorKind(502, "BadGatewayException"),
    OverloadedError: ErrorKind(503, "ServiceUnavailableException", retry_after=5),
    PlanCancelledError: ErrorKind(499, "PlanCancelledException"),  # nobody reads it
    PlanTimeoutError: ErrorKind(503, "ServiceUnavailableException", retry_after=5),
}


# What the HTTP doors answer of requests that no planner code sees, in the same wire shape: no route for the
# path (404) or the method (405), a body over the limit (413) or too slow to arrive (408)
HTTP_REFUSALS: dict[int, ErrorKind] = {
    400: ErrorKind(400, "BadRequestException"),
    404: ErrorKind(404, "NotFoundException"),
    405: ErrorKind(405, "MethodNotAllowedException"),
    406: ErrorKind(406, "UnsupportedOperationException"),
    408: ErrorKind(408, "RequestTimeoutException"),
    413: ErrorKind(413, "RequestTooLargeException"),
    415: ErrorKind(415, "UnsupportedMediaTypeException"),
}


def error_kind(error: PlannerError) -> ErrorKind:
    """The row of the most specific kind `error` is."""
    return kind_of(type(error))


def kind_of(kind: type[PlannerError]) -> ErrorKind:
    """The row of `kind`, or of its nearest ancestor that has one."""
    for cls in kind.__mro__:
        row = ERROR_KINDS.get(cls)
        if row is not None:
            return row
    raise AssertionError(f"{kind.__name__} is no PlannerError")  # (PlannerError has a row)


def retry_after(error: PlannerError) -> int | None:
    """The Retry-After seconds of an answer to `error`: its own hint, else its kind's default."""
    return error.retry_in_seconds if error.retry_in_seconds is not None else error_kind(error).retry_after

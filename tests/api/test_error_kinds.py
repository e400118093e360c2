"""The one table from error kinds to the wire: each kind's HTTP status, Iceberg REST error type and
default Retry-After, as they were when the kinds carried them (the wire does not change), resolved along
the MRO; the kinds themselves know nothing of HTTP."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import FastAPI

from planner_service import errors
from planner_service.api.error_kinds import ERROR_KINDS, ErrorKind, error_kind, retry_after
from planner_service.api.errors import install_error_handlers, planner_error_body
from planner_service.errors import OverloadedError, PlannerError
from planner_service.expressions.binding import InvalidFilterError
from planner_service.expressions.expression_json import InvalidExpressionJson
from planner_service.expressions.filter_string import FilterSyntaxError

WIRE: dict[type[PlannerError], tuple[int, str, int | None]] = {
    errors.PlannerError: (500, "PlannerError", None),
    errors.BadRequestError: (400, "BadRequestException", None),
    errors.InvalidOptionError: (400, "InvalidOptionException", None),
    InvalidFilterError: (400, "ValidationException", None),
    InvalidExpressionJson: (400, "BadRequestException", None),
    FilterSyntaxError: (400, "BadRequestException", None),
    errors.NotFoundError: (404, "NotFoundException", None),
    errors.NoSuchTableError: (404, "NoSuchTableException", None),
    errors.NoSuchNamespaceError: (404, "NoSuchNamespaceException", None),
    errors.NoSuchSnapshotError: (404, "NoSuchSnapshotException", None),
    errors.NoSuchRefError: (404, "NoSuchRefException", None),
    errors.NoSuchPlanIdError: (404, "NoSuchPlanIdException", None),
    errors.NoSuchPlanTaskError: (404, "NoSuchPlanTaskException", None),
    errors.LocationNotAllowedError: (403, "ForbiddenException", None),
    errors.ForbiddenError: (403, "ForbiddenException", None),
    errors.NotAuthenticatedError: (401, "NotAuthorizedException", None),
    errors.IdentityProviderUnavailableError: (503, "ServiceUnavailableException", 5),
    errors.CorruptMetadataError: (422, "CorruptMetadataException", None),
    errors.StorageError: (503, "StorageException", 1),
    errors.MissingFileError: (503, "StorageException", None),
    errors.CatalogUnavailableError: (503, "ServiceUnavailableException", 1),
    errors.UpstreamCatalogError: (502, "BadGatewayException", None),
    errors.OverloadedError: (503, "ServiceUnavailableException", 5),
    errors.PlanCancelledError: (499, "PlanCancelledException", None),
    errors.PlanTimeoutError: (503, "ServiceUnavailableException", 5),
}


@pytest.mark.parametrize("kind", list(WIRE), ids=lambda k: k.__name__)
def test_each_kind_answers_as_before(kind: type[PlannerError]) -> None:
    error = kind("boom")
    status, error_type, seconds = WIRE[kind]
    assert error_kind(error) == ErrorKind(status, error_type, seconds)
    assert retry_after(error) == seconds
    assert planner_error_body(error) == {"error": {"message": "boom", "type": error_type, "code": status}}


def test_every_kind_of_the_tree_has_a_row() -> None:
    kinds = [getattr(errors, name) for name in dir(errors)]
    kinds = [k for k in kinds if isinstance(k, type) and issubclass(k, PlannerError)]
    assert set(kinds) <= set(ERROR_KINDS)
    assert set(ERROR_KINDS) <= set(WIRE)


def test_the_kinds_carry_no_http() -> None:
    for kind in WIRE:
        assert not hasattr(kind, "status_code") and not hasattr(kind, "error_type") and not hasattr(kind, "retry_after")


def test_a_kind_without_a_row_takes_its_nearest_ancestors() -> None:
    class Unlisted(errors.NoSuchTableError):
        pass

    assert error_kind(Unlisted("x")) == ERROR_KINDS[errors.NoSuchTableError]


def test_an_errors_own_hint_wins_over_its_kinds() -> None:
    assert retry_after(OverloadedError("busy", retry_in_seconds=9)) == 9
    assert retry_after(OverloadedError("busy")) == 5
    assert retry_after(errors.MissingFileError("gone")) is None


def test_the_handler_answers_from_the_table() -> None:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/busy")
    def busy() -> None:
        raise OverloadedError("busy", retry_in_seconds=7)

    @app.get("/gone")
    def gone() -> None:
        raise errors.MissingFileError("gone")

    async def get(path: str) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            return await client.get(path)

    response = asyncio.run(get("/busy"))
    assert response.status_code == 503 and response.headers["retry-after"] == "7"
    assert response.json() == {"error": {"message": "busy", "type": "ServiceUnavailableException", "code": 503}}
    missing = asyncio.run(get("/gone"))
    assert missing.status_code == 503 and "retry-after" not in missing.headers

"""Locations as the service reads them: iceberg_io's parser, a location it refuses a bad request."""

from __future__ import annotations

import iceberg_io
from iceberg_io import Location
from planner_service.errors import BadRequestError

__all__ = ["Location", "parse_location"]


def parse_location(location: str) -> Location:
    try:
        return iceberg_io.parse_location(location)
    except iceberg_io.InvalidLocation as exc:
        raise BadRequestError(str(exc)) from None

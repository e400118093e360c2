"""The storage configuration executors read a plan's files with: the user's, with the credentials the
service vended for the table over it, so executors need no keys of their own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from iceberg_io import InvalidLocation, Location, StorageConfig, parse_location

Storage = StorageConfig | Mapping[str, Any] | None  # what a user passes: a configuration, or storage properties


def vended_storage(plan: Mapping[str, Any], storage: Storage) -> StorageConfig:
    """`storage` with the plan's `storage-credentials` entry whose prefix holds the table's metadata (the
    longest such prefix) over it."""
    config = StorageConfig.of(storage)
    try:
        table = parse_location(str(plan.get("metadata-location") or ""))
    except InvalidLocation:
        return config
    best: tuple[Location, Mapping[str, Any]] | None = None
    for credential in plan.get("storage-credentials") or []:
        try:
            prefix = parse_location(str(credential.get("prefix", "")))
        except InvalidLocation:
            continue
        if table.within(prefix) and (best is None or len(prefix.path) > len(best[0].path)):
            best = (prefix, credential.get("config") or {})
    return config if best is None else config.with_properties(best[1])

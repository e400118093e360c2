"""Plan ids: a plan's canonical request, packed into the id itself.

A plan is a pure function of the table's metadata file (immutable once written), the snapshot choice, the
filter, the projection and the split options. The canonical request names all of them, the table by the
metadata location it had when the plan was first made, so any replica, or this service after a restart,
rebuilds exactly the same plan from the id alone and serves the same task i. Nothing is stored to make
an id valid; the plan-result cache only makes it fast.

    p1.<base64url(zlib(canonical JSON, sorted keys))>
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from dataclasses import dataclass
from typing import Any

import orjson

from planner_service.errors import NoSuchPlanIdError
from planner_service.json_text import dumps

PREFIX = "p1."
MAX_ID_CHARS = 16_384


@dataclass(frozen=True)
class CanonicalRequest:
    """What decides a plan, and nothing else (JSON values, normalized)."""

    table: str  # the name the client used, or the metadata location
    metadata_location: str
    snapshot: dict[str, Any]  # {"snapshot-id"} | {"as-of-timestamp-ms"} | {"ref"} | {}
    select: list[str] | None
    filter: Any  # REST JSON expression (the parsed filter, re-encoded)
    case_sensitive: bool
    options: dict[str, Any]
    limit: int | None = None  # planning may stop once the files that surely match hold this many rows
    parallelism: int | None = None  # Spark's, for the adaptive split size

    def to_json(self) -> dict[str, Any]:
        out = {
            "table": self.table,
            "metadata-location": self.metadata_location,
            "snapshot": self.snapshot,
            "select": self.select,
            "filter": self.filter,
            "case-sensitive": self.case_sensitive,
            "options": self.options,
        }
        optional = {"limit": self.limit, "parallelism": self.parallelism}
        return out | {key: value for key, value in optional.items() if value is not None}

    @property
    def key(self) -> bytes:
        return dumps(self.to_json(), sort_keys=True)

    @property
    def plan_id(self) -> str:
        return PREFIX + base64.urlsafe_b64encode(zlib.compress(self.key, 9)).decode().rstrip("=")

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.key).hexdigest()[:32]

    @classmethod
    def from_json(cls, data: Any) -> CanonicalRequest:
        if not isinstance(data, dict):
            raise ValueError("not an object")
        return cls(
            table=str(data["table"]),
            metadata_location=str(data["metadata-location"]),
            snapshot=dict(data["snapshot"]),
            select=None if data["select"] is None else [str(c) for c in data["select"]],
            filter=data["filter"],
            case_sensitive=bool(data["case-sensitive"]),
            options=dict(data["options"]),
            limit=None if data.get("limit") is None else int(data["limit"]),
            parallelism=None if data.get("parallelism") is None else int(data["parallelism"]),
        )


def parse_plan_id(plan_id: str) -> CanonicalRequest:
    """The canonical request packed in a plan id (NoSuchPlanIdError for anything else)."""
    if not plan_id.startswith(PREFIX) or len(plan_id) > MAX_ID_CHARS:
        raise NoSuchPlanIdError(f"Unknown plan id {plan_id[:64]!r}: plan ids start with {PREFIX!r}")
    packed = plan_id[len(PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4))
        text = zlib.decompressobj().decompress(raw, 1024 * 1024)  # bounded: an id cannot inflate a bomb
        return CanonicalRequest.from_json(orjson.loads(text))
    except (ValueError, KeyError, TypeError, zlib.error) as exc:
        raise NoSuchPlanIdError(f"Unknown plan id {plan_id[:64]!r}: {type(exc).__name__}") from None

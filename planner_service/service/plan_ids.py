"""Plan ids: a plan's canonical request, packed into the id itself.

A plan is a pure function of the table's metadata file (immutable once written) and the scan (snapshot
choice, filter, projection, split options: ScanRequest.canonical()). The canonical request names both, the
table by the metadata location it had when the plan was first made, so any replica, or this service after a restart,
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

from planner_service.errors import NoSuchPlanIdError, PlannerError
from planner_service.json_text import dumps
from planner_service.planning.scan_request import ScanRequest

PREFIX = "p1."
MAX_ID_CHARS = 16_384


@dataclass(frozen=True)
class CanonicalRequest:
    """What decides a plan, and nothing else: the table as first loaded, and the scan."""

    table: str  # the name the client used, or the metadata location
    metadata_location: str
    scan: ScanRequest

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "metadata-location": self.metadata_location} | self.scan.canonical()

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
        scan = ScanRequest.from_canonical(data)
        return cls(str(data["table"]), str(data["metadata-location"]), scan)


def parse_plan_id(plan_id: str) -> CanonicalRequest:
    """The canonical request packed in a plan id (NoSuchPlanIdError for anything else)."""
    if not plan_id.startswith(PREFIX) or len(plan_id) > MAX_ID_CHARS:
        raise NoSuchPlanIdError(f"Unknown plan id {plan_id[:64]!r}: plan ids start with {PREFIX!r}")
    packed = plan_id[len(PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4))
        text = zlib.decompressobj().decompress(raw, 1024 * 1024)  # bounded: an id cannot inflate a bomb
        return CanonicalRequest.from_json(orjson.loads(text))
    except (ValueError, KeyError, TypeError, zlib.error, PlannerError) as exc:
        raise NoSuchPlanIdError(f"Unknown plan id {plan_id[:64]!r}: {type(exc).__name__}") from None

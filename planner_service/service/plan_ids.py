"""Plan ids: a plan's canonical request, packed into the id itself, and bound to the principal it was made for.

A plan is a pure function of the table's metadata file (immutable once written) and the scan (snapshot
choice, filter, projection, split options: ScanRequest.canonical()). The canonical request names both, the
table by the metadata location it had when the plan was first made, so any replica, or this service after a
restart, rebuilds exactly the same plan from the id alone and serves the same task i. Nothing is stored to
make an id valid; the plan-result cache only makes it fast (keyed by `cache_id`, the same for every principal).

    p2.<base64url(zlib(canonical JSON, sorted keys))>.<base64url(MAC)>

The MAC is HMAC-SHA256 with the signing key (token_signing_key, shared by replicas) over the principal's
name and the packed request: an id made for one principal is unknown to another, and no id can be forged or
edited (a lookback or parallelism of one's choosing). Its request is checked as a request's fields are.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import zlib
from dataclasses import dataclass
from typing import Any

import orjson

from planner_service.errors import NoSuchPlanIdError, PlannerError
from planner_service.json_text import dumps
from planner_service.planning.scan_request import ScanRequest

PREFIX = "p2."
CACHE_PREFIX = "p1."
MAX_ID_CHARS = 16_384
MAC_BYTES = 16


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
    def packed(self) -> str:
        return base64.urlsafe_b64encode(zlib.compress(self.key, 9)).decode().rstrip("=")

    @property
    def cache_id(self) -> str:
        """What the plan caches keep it by: the same for every principal (answers are checked before)."""
        return CACHE_PREFIX + self.packed

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.key).hexdigest()[:32]

    @classmethod
    def from_json(cls, data: Any) -> CanonicalRequest:
        if not isinstance(data, dict):
            raise ValueError("not an object")
        scan = ScanRequest.from_canonical(data)
        return cls(str(data["table"]), str(data["metadata-location"]), scan)


class PlanIds:
    """Issues plan ids for principals and opens them (the key: service/access_control.signing_key)."""

    def __init__(self, key: bytes) -> None:
        self._key = hmac.new(key, b"plan-ids", hashlib.sha256).digest()

    def issue(self, request: CanonicalRequest, principal: str) -> str:
        packed = request.packed
        return f"{PREFIX}{packed}.{self._mac(principal, packed)}"

    def open(self, plan_id: str, principal: str) -> CanonicalRequest:
        """The canonical request of an id issued to `principal`; NoSuchPlanIdError for any other id (another
        principal's, forged, edited, of an older form), in words that do not say which."""
        unknown = NoSuchPlanIdError(f"Unknown plan id {plan_id[:64]!r}: plan the scan again for a plan id")
        if not plan_id.startswith(PREFIX) or len(plan_id) > MAX_ID_CHARS:
            raise unknown
        packed, _, mac = plan_id[len(PREFIX) :].rpartition(".")
        if not hmac.compare_digest(mac.encode(), self._mac(principal, packed).encode()):
            raise unknown
        return unpack(packed, plan_id)

    def _mac(self, principal: str, packed: str) -> str:
        digest = hmac.new(self._key, principal.encode() + b"\0" + packed.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:MAC_BYTES]).decode().rstrip("=")


def unpack(packed: str, plan_id: str) -> CanonicalRequest:
    """The canonical request of a packed id (NoSuchPlanIdError for anything else)."""
    try:
        raw = base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4))
        text = zlib.decompressobj().decompress(raw, 1024 * 1024)  # bounded: an id cannot inflate a bomb
        return CanonicalRequest.from_json(orjson.loads(text))
    except (ValueError, KeyError, TypeError, zlib.error, PlannerError) as exc:
        raise NoSuchPlanIdError(f"Unknown plan id {plan_id[:64]!r}: {type(exc).__name__}") from None

"""Plan ids: a plan's canonical request, packed into the id itself, bound to the principal it was made for
and to the door it was made at, and ending at an expiry.

A plan is a pure function of the table's metadata file (immutable once written) and the scan (snapshot
choice, filter, projection, split options: ScanRequest.canonical()). The canonical request names both, the
table by the metadata location it had when the plan was first made, so any replica, or this service after a
restart, rebuilds exactly the same plan from the id alone and serves the same task i (or REST page n).
Nothing is stored to make an id valid; the plan-result cache only makes it fast (keyed by `cache_id`, the
same for every principal and door).

    p3.<base64url(zlib(canonical JSON, sorted keys))>.<expiry, unix seconds>.<base64url(MAC)>   (POST /plan)
    r3.<the same>.<nonce>.<base64url(MAC)>                                           (REST scan plans)

The MAC is HMAC-SHA256 with the signing key (token_signing_key, shared by replicas) over the door, the
principal (its kind and name: a static principal and an OpenID subject of one name are two principals),
the packed request and the expiry: an id made for one principal is unknown to another, and no id can be
forged or edited (a lookback of one's choosing, a later expiry). Its request is checked as a request's
fields are. A native id's expiry is rounded up to a 24th of the lifetime, so that the same request gets the
same id for a while (ETags, the body cache); a REST plan's id is one plan's, with a random nonce, so that
cancelling it ends no other plan of the same request. An id longer than MAX_ID_CHARS is never issued: it
would not fit the request line that opens it (uvicorn's h11 takes 16 KiB of request head, HAProxy's default
buffer less).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import orjson

from planner_service.errors import BadRequestError, NoSuchPlanIdError, PlannerError
from planner_service.json_text import dumps
from planner_service.numerals import ascii_int
from planner_service.planning.scan_request import ScanRequest

PREFIX = "p3."  # a native plan's (POST /plan, GET /plans/{id})
REST_PREFIX = "r3."  # a REST scan plan's
CACHE_PREFIX = "p1."
MAX_ID_CHARS = 12_288  # with a path, a bearer token and the usual headers, under 16 KiB of request head
MAC_BYTES = 16
MAX_OPENED = 4096  # ids kept opened (the least recently opened forgotten beyond)
MAX_OPENED_CHARS = 2 * 1024 * 1024  # ... and at most this many characters of them (long ids: long filters)


@dataclass(frozen=True)
class CanonicalRequest:
    """What decides a plan, and nothing else: the table as first loaded, and the scan."""

    table: str  # the name the client used, or the metadata location
    metadata_location: str
    scan: ScanRequest
    stats_fields: tuple[str, ...] | None = None  # REST stats-fields: the columns whose stats tasks carry

    def to_json(self) -> dict[str, Any]:
        out = {"table": self.table, "metadata-location": self.metadata_location} | self.scan.canonical()
        return out if self.stats_fields is None else {**out, "stats-fields": list(self.stats_fields)}

    @cached_property
    def key(self) -> bytes:
        return dumps(self.to_json(), sort_keys=True)

    @cached_property
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
        stats = data.get("stats-fields")
        stats_fields = None if stats is None else tuple(str(name) for name in stats)
        return cls(str(data["table"]), str(data["metadata-location"]), scan, stats_fields)


class PlanIds:
    """Issues plan ids for principals and opens them (the key: access/signing_key.signing_key)."""

    def __init__(self, key: bytes, clock: Callable[[], float] = time.time) -> None:
        self._key = hmac.new(key, b"plan-ids", hashlib.sha256).digest()
        self._clock = clock
        # ids opened lately (verified, unpacked), by (id, principal, door): an executor's or a REST client's
        # every fetch opens the same id, and unpacking (inflate, JSON, the filter parsed) costs more than the rest
        self._opened: OrderedDict[bytes, tuple[int, CanonicalRequest, int]] = OrderedDict()
        self._opened_chars = 0  # the ids' length in all: what their requests weigh, about
        self._lock = threading.Lock()

    def issue(self, request: CanonicalRequest, principal: str, ttl_seconds: int, rest: bool = False) -> str:
        """The id of `request` for `principal`, good for at least `ttl_seconds`; a 400 when the request is
        too large to carry in an id that a request line can hold (an IN list of thousands of values)."""
        step = max(1, ttl_seconds // 24)
        expires = -(-(int(self._clock()) + ttl_seconds) // step) * step
        packed, prefix = request.packed, REST_PREFIX if rest else PREFIX
        signed = f"{packed}.{expires}" + (f".{secrets.token_hex(8)}" if rest else "")
        plan_id = f"{prefix}{signed}.{self._mac(prefix, principal, signed)}"
        if len(plan_id) > MAX_ID_CHARS:
            raise BadRequestError(
                f"The scan's request is too large for a plan id ({len(plan_id):,} characters packed, at most "
                f"{MAX_ID_CHARS:,}: a plan id travels in request lines): filter on fewer values (a range instead "
                "of a long IN list), or split the scan"
            )
        return plan_id

    def open(self, plan_id: str, principal: str, rest: bool = False) -> CanonicalRequest:
        """The canonical request of an id issued to `principal` at this door; NoSuchPlanIdError for any other
        id (another principal's, forged, edited, of an older form), in words that do not say which, and for
        one expired."""
        key = hashlib.sha256(b"\0".join((plan_id.encode(), principal.encode(), b"r" if rest else b"p"))).digest()
        with self._lock:
            opened = self._opened.get(key)
            if opened is not None:
                self._opened.move_to_end(key)
        if opened is None:
            expires, request = self._verified(plan_id, principal, rest)
            opened = (expires, request, len(plan_id))
            with self._lock:
                if key not in self._opened:
                    self._opened[key] = opened
                    self._opened_chars += len(plan_id)
                while len(self._opened) > MAX_OPENED or self._opened_chars > MAX_OPENED_CHARS:
                    self._opened_chars -= self._opened.popitem(last=False)[1][2]
        if opened[0] <= self._clock():
            raise NoSuchPlanIdError(f"Plan id {plan_id[:64]!r} has expired: plan the scan again for a plan id")
        return opened[1]

    def _verified(self, plan_id: str, principal: str, rest: bool) -> tuple[int, CanonicalRequest]:
        """(expiry, request) of an id whose MAC holds for `principal` at this door; else NoSuchPlanIdError."""
        unknown = NoSuchPlanIdError(f"Unknown plan id {plan_id[:64]!r}: plan the scan again for a plan id")
        prefix = REST_PREFIX if rest else PREFIX
        if not plan_id.startswith(prefix) or len(plan_id) > MAX_ID_CHARS:
            raise unknown
        signed, _, mac = plan_id[len(prefix) :].rpartition(".")
        parts = signed.split(".")
        expires = ascii_int(parts[1]) if len(parts) == (3 if rest else 2) else None
        if expires is None or not hmac.compare_digest(mac.encode(), self._mac(prefix, principal, signed).encode()):
            raise unknown
        return expires, unpack(parts[0], plan_id)

    def _mac(self, prefix: str, principal: str, signed: str) -> str:
        digest = hmac.new(
            self._key, b"\0".join((prefix.encode(), principal.encode(), signed.encode())), hashlib.sha256
        ).digest()
        return base64.urlsafe_b64encode(digest[:MAC_BYTES]).decode().rstrip("=")


def unpack(packed: str, plan_id: str) -> CanonicalRequest:
    """The canonical request of a packed id (NoSuchPlanIdError for anything else)."""
    try:
        raw = base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4))
        text = zlib.decompressobj().decompress(raw, 1024 * 1024)  # bounded: an id cannot inflate a bomb
        return CanonicalRequest.from_json(orjson.loads(text))
    except (ValueError, KeyError, TypeError, zlib.error, PlannerError) as exc:
        raise NoSuchPlanIdError(f"Unknown plan id {plan_id[:64]!r}: {type(exc).__name__}") from None

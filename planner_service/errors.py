"""One exception tree for the planner. A kind says what went wrong, not how a caller is told: each door
(the HTTP API, the command line) maps the kinds to its own answers (api/error_kinds.py for the wire)."""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Callable, Iterable, Sequence

MAX_COMPARED_NAMES = 10_000  # names an unknown one is compared with for "did you mean", at most


class PlannerError(Exception):
    """Base of every error the planner reports to a caller."""

    def __init__(self, message: str, retry_in_seconds: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        # when trying again may succeed, if the raiser knows (admission does, from its queue)
        self.retry_in_seconds = retry_in_seconds


class BadRequestError(PlannerError):
    """The request is malformed: bad option, bad filter, conflicting snapshot choice."""


class InvalidOptionError(BadRequestError):
    """A read option (split-size, lookback, file-open-cost) or setting has a value it cannot take."""


class NotFoundError(PlannerError):
    """What the request names does not exist."""


class NoSuchTableError(NotFoundError):
    """No catalog knows the table, or its metadata location holds no table."""


class NoSuchNamespaceError(NotFoundError):
    """A REST namespace that no catalog lists."""


class NoSuchSnapshotError(NotFoundError):
    """A snapshot id (or time) the table has no snapshot for."""


class NoSuchRefError(NotFoundError):
    """A branch or tag name the table does not have."""


class LocationNotAllowedError(PlannerError):
    """A location lies outside the configured allow-list roots."""


class CorruptMetadataError(PlannerError):
    """A metadata file, manifest list or manifest exists but cannot be decoded."""


class StorageError(PlannerError):
    """Storage could not be read: an unreachable or failing store, denied credentials (worth trying again
    soon), a missing file."""


class MissingFileError(StorageError):
    """A file the table's metadata names is gone (lost, not late: trying again will not find it)."""


class CatalogUnavailableError(StorageError):
    """An upstream catalog cannot be reached, timed out or failed on its side: worth trying again soon."""


class UpstreamCatalogError(PlannerError):
    """An upstream catalog refused the service's own credentials or answered what it should not: the
    service's configuration, not the request, needs fixing."""


class ForbiddenError(PlannerError):
    """The caller may see the table but lacks the privilege the request needs (access/policy.py), or an
    upstream catalog that decides for the caller forbade it."""


class NotAuthenticatedError(PlannerError):
    """The request's credentials are missing, unknown, forged or expired."""


class IdentityProviderUnavailableError(PlannerError):
    """The keys that verify a token cannot be had from the OpenID provider now: nothing is let through,
    and trying again soon may succeed."""


class OverloadedError(PlannerError):
    """Too many plans are being made at once; trying again later may succeed (`retry_in_seconds`)."""


class PlanTimeoutError(PlannerError):
    """A plan ran past plan_timeout_seconds (its storage slow or failing, most often): worth trying again."""


class PlanCancelledError(PlannerError):
    """The plan was stopped: its client went away, or a REST plan was cancelled (nobody reads the answer)."""


class NoSuchPlanIdError(NotFoundError):
    """A REST scan plan id that is unknown, expired or belongs to another table."""


class NoSuchPlanTaskError(NotFoundError):
    """A REST plan task token that is unknown, expired, cancelled or belongs to another table."""


def quoted(text: str, limit: int = 80) -> str:
    """Client-given text quoted for an error message, cut to `limit` characters."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def nearest_names(name: str, known: Iterable[str], limit: int = 3) -> list[str]:
    """The names of `known` nearest to `name`, best first: those equal to it but for case, then difflib's close
    matches. At most MAX_COMPARED_NAMES of `known` are compared: an error message costs no scan of a huge
    catalog or schema."""
    compared = [k for k in itertools.islice(known, MAX_COMPARED_NAMES) if k != name]
    folded = [k for k in compared if k.lower() == name.lower()]
    close = difflib.get_close_matches(name, compared, n=limit)
    return list(dict.fromkeys([*folded, *close]))[:limit]


def did_you_mean(near: Sequence[str], quote: Callable[[str], str] = str) -> str:
    """' (did you mean X?)', ' (did you mean X or Y?)', ' (did you mean X, Y or Z?)' naming `near` (say, the
    nearest_names of an unknown one), each written with `quote`; '' for none."""
    written = [quote(n) for n in near]
    if not written:
        return ""
    listed = " or ".join([", ".join(written[:-1]), written[-1]]) if len(written) > 1 else written[0]
    return f" (did you mean {listed}?)"

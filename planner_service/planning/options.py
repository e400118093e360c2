"""Split planning options: request > table `read.split.*` properties > Iceberg's defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from planner_service.errors import InvalidOptionError
from planner_service.splitting.combine import split_option_problem

SPLIT_SIZE = "read.split.target-size"
LOOKBACK = "read.split.planning-lookback"
OPEN_FILE_COST = "read.split.open-file-cost"

DEFAULTS = {SPLIT_SIZE: 128 * 1024 * 1024, LOOKBACK: 10, OPEN_FILE_COST: 4 * 1024 * 1024}
# Iceberg's Spark read-option names map onto the table-property names
ALIASES = {"split-size": SPLIT_SIZE, "lookback": LOOKBACK, "file-open-cost": OPEN_FILE_COST}
_INT_MAX = 2**31 - 1
_LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class SplitOptions:
    split_size: int
    lookback: int
    open_file_cost: int


def resolve_split_options(request: Mapping[str, object] | None, table_properties: Mapping[str, str]) -> SplitOptions:
    """Validate and resolve; unknown keys are rejected so that a typo does not silently plan differently."""
    given: dict[str, object] = {}
    for key, value in (request or {}).items():
        name = ALIASES.get(key, key)
        if name not in DEFAULTS:
            known = ", ".join([*ALIASES, *DEFAULTS])
            raise InvalidOptionError(f"Unknown option '{key}'; known options: {known}")
        given[name] = value

    def resolve(name: str, source: str, maximum: int) -> int:
        raw = given[name] if name in given else table_properties.get(name, DEFAULTS[name])
        where = "option" if name in given else ("table property" if name in table_properties else "default")
        try:
            if isinstance(raw, bool):
                raise ValueError
            number = int(str(raw).strip()) if not isinstance(raw, int) else raw
        except ValueError:
            raise InvalidOptionError(f"Invalid {where} {source}={raw!r}: expected an integer") from None
        if not -maximum - 1 <= number <= maximum:
            raise InvalidOptionError(f"Invalid {where} {source}={raw!r}: out of range")
        return number

    opts = SplitOptions(
        split_size=resolve(SPLIT_SIZE, "split-size (read.split.target-size)", _LONG_MAX),
        lookback=resolve(LOOKBACK, "lookback (read.split.planning-lookback)", _INT_MAX),
        open_file_cost=resolve(OPEN_FILE_COST, "file-open-cost (read.split.open-file-cost)", _LONG_MAX),
    )
    problem = split_option_problem(opts.split_size, opts.lookback, opts.open_file_cost)
    if problem is not None:
        raise InvalidOptionError(problem)
    return opts


ADAPTIVE_SPLIT_SIZE = "read.split.adaptive-size.enabled"
MIN_SPLIT_SIZE = 16 * 1024 * 1024  # TableScanUtil.MIN_SPLIT_SIZE


def adapted_to_parallelism(
    options: SplitOptions,
    parallelism: int | None,
    scan_size: int,
    request: Mapping[str, object] | None,
    table_properties: Mapping[str, str],
) -> SplitOptions:
    """SparkScan.adjustSplitSize: with Spark's `parallelism`, the table's read.split.adaptive-size.enabled
    (default true) and no split size named by the request (Spark's split-size read option), the split size
    adjusted to the scan's size (its tasks: files and their deletes); else `options` as they are."""
    if any(ALIASES.get(key, key) == SPLIT_SIZE for key in request or {}):
        return options
    adjusted = adjusted_split_size(options.split_size, parallelism, scan_size, table_properties)
    return replace(options, split_size=adjusted)


def adjusted_split_size(
    split_size: int, parallelism: int | None, scan_size: int, table_properties: Mapping[str, str]
) -> int:
    """The split size of a scan whose request names none: adjusted to Spark's `parallelism` (None: not) unless
    the table's read.split.adaptive-size.enabled is false."""
    if parallelism is None or table_properties.get(ADAPTIVE_SPLIT_SIZE, "true").strip().lower() == "false":
        return split_size
    return adjust_split_size(scan_size, parallelism, split_size)


def table_split_size(table_properties: Mapping[str, str]) -> int:
    """The table's own split size: its read.split.target-size when that is a valid one, else Iceberg's default
    (a request that names its own never reads the property, so an invalid one is no error then)."""
    try:
        return resolve_split_options({}, {SPLIT_SIZE: table_properties[SPLIT_SIZE]}).split_size
    except (KeyError, InvalidOptionError):
        return DEFAULTS[SPLIT_SIZE]


def adjust_split_size(scan_size: int, parallelism: int, split_size: int) -> int:
    """TableScanUtil.adjustSplitSize: the split size itself when it gives at least one split per slot of
    `parallelism`, else the scan's size over the slots, but not below min(16 MiB, the split size)."""
    split_count = -(-scan_size // split_size)
    adjusted = max(scan_size // parallelism, min(MIN_SPLIT_SIZE, split_size))
    return adjusted if split_count < parallelism else split_size

"""The memory a container allows the service (its cgroup's limit), and the budgets fitted under it.

At start the service reads its memory cgroup's limit (cgroup v2 `memory.max`, v1 `memory.limit_in_bytes`).
Under a limit L, what is left once the idle service is counted (RESERVED_BYTES, about the 200 MB it holds
idle, docs/benchmarks.md) is shared out: the manifest cache a quarter, the plan cache an eighth, the plans
made at once half (admission: a plan that would not fit waits, then gets 503 + Retry-After, never the
kernel's OOM killer); an eighth stays for what no budget counts (encoding, the allocator). Only defaults
are fitted: a budget given explicitly (config file, environment, flag) is kept as given.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from planner_service.numerals import ascii_int
from planner_service.settings import Settings

log = logging.getLogger(__name__)

RESERVED_BYTES = 256 * 1024 * 1024
MIN_PLAN_MEMORY_BYTES = 64 * 1024 * 1024
UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a page-rounded 2^63 - 1
SHARES = {"cache_bytes": 1 / 4, "plan_cache_bytes": 1 / 8, "plan_memory_bytes": 1 / 2}


def cgroup_memory_limit(proc: Path = Path("/proc/self/cgroup"), root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """This process's memory cgroup limit in bytes, or None (no limit, or no cgroup to read)."""
    try:
        lines = proc.read_text().splitlines()
    except OSError:
        return None
    candidates = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        relative = path.lstrip("/")
        if controllers == "":  # v2: one unified hierarchy
            candidates += [root / relative / "memory.max", root / "memory.max"]
        elif "memory" in controllers.split(","):
            memory = root / "memory"
            candidates += [memory / relative / "memory.limit_in_bytes", memory / "memory.limit_in_bytes"]
    for candidate in candidates:
        try:
            text = candidate.read_text().strip()
        except OSError:
            continue
        if text == "max":
            return None
        number = ascii_int(text)
        if number is not None:
            return number if number < UNLIMITED else None
    return None


def service_memory_bytes(limit: int | None) -> int | None:
    """The memory the service has: its cgroup's `limit`, else the machine's (None where it cannot be read)."""
    if limit is not None:
        return limit
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def fit_to_memory(settings: Settings, limit: int | None) -> Settings:
    """`settings` with the memory budgets fitted under `limit` (unchanged without one)."""
    if limit is None:
        return settings
    usable = max(limit - RESERVED_BYTES, 0)
    update = {}
    for name, share in SHARES.items():
        fitted = int(usable * share)
        if name == "plan_memory_bytes":
            fitted = max(fitted, MIN_PLAN_MEMORY_BYTES)
        if name not in settings.model_fields_set and getattr(settings, name) > fitted:
            update[name] = fitted
    if update:
        log.info(
            "memory budgets fitted to the cgroup's limit",
            extra={"limit-bytes": limit, "reserved-bytes": RESERVED_BYTES}
            | {k.replace("_", "-"): v for k, v in update.items()},
        )
    return settings.model_copy(update=update)

"""What the benchmark scripts share: where the table is cached, peak RSS, the Java environment.

Stdlib only: it is imported both by the project's venv (plan_bench.py, py_plan.py) and by the pyspark venv
of scripts/java_env.py (make_table.py, java_plan.py).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
MAKE_TABLE = BENCH / "make_table.py"
JAVA_ENV = REPO / "scripts" / "java_env.py"
MARKER = "table.json"  # written last by make_table.py: the table is complete


def load_java_env() -> ModuleType:
    """scripts/java_env.py as a module (it is a script, not part of a package)."""
    spec = importlib.util.spec_from_file_location("java_env", JAVA_ENV)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table_digest() -> str:
    """The cache key: make_table.py decides the table's content, so a change to it builds a new table."""
    return hashlib.sha256(MAKE_TABLE.read_bytes()).hexdigest()[:16]


SHAPES = ("uniform", "mixed")  # make_table.py's --shape: which optional fields the data files carry


def table_dir(files: int, manifests: int, shape: str = "uniform") -> Path:
    """$SCAN_PLANNER_CACHE/bench/<digest>/<files>-files-<manifests>-manifests[-<shape>]: one directory per
    table shape (the uniform shape without a suffix)."""
    root: Path = load_java_env().cache_root()
    suffix = "" if shape == "uniform" else f"-{shape}"
    return root / "bench" / table_digest() / f"{files}-files-{manifests}-manifests{suffix}"


def read_marker(directory: Path) -> dict[str, Any] | None:
    """The table's description (metadata location, shape, filter hints), or None if it is not complete."""
    marker = directory / MARKER
    return json.loads(marker.read_text()) if marker.exists() else None


def peak_rss_bytes(pid: int | str = "self") -> int:
    """The process's peak resident set size (VmHWM of /proc/<pid>/status), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM in /proc/{pid}/status")


def write_json(path: Path, data: Any) -> None:
    """Write atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


# --- Timing one implementation ----------------------------------------------------------------------------

Sample = dict[str, Any]  # one plan: "load_ms", "plan_ms" and what was counted ("files", "tasks", ...)


def measure(
    name: str,
    plan_once: Callable[[], Sample],
    repeat: int,
    budget_s: float,
    rss: Callable[[], int],
    varying: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The cold plan (the process's first), then `repeat` warm plans (at least one, unless 0), fewer past
    `budget_s` seconds.

    Every plan must count the same, except for the counts named in `varying` (Java's worker pool makes its
    task count vary); `seen` lists the values each count took. Peak RSS is read after the cold plan and
    again at the end (warm repeats may hold more in caches).
    """
    cold = plan_once()
    cold["peak_rss_bytes"] = rss()
    progress(name, f"cold: plan {cold['plan_ms']:.0f} ms (table load {cold['load_ms']:.0f} ms) {counts(cold)}")
    warm: list[Sample] = []
    started = time.monotonic()
    while len(warm) < repeat and (not warm or time.monotonic() - started < budget_s):
        warm.append(plan_once())
        progress(name, f"warm {len(warm)}/{repeat}: plan {warm[-1]['plan_ms']:.0f} ms")
    seen = {k: sorted({counts(s)[k] for s in [cold, *warm]}) for k in counts(cold)}
    unstable = {k: v for k, v in seen.items() if len(v) > 1 and k not in varying}
    if unstable:
        raise RuntimeError(f"{name}: plans of the same table counted differently: {unstable}")
    warm_ms = [s["plan_ms"] for s in warm]
    return {
        "cold": cold,
        "warm": {"plan_ms": warm_ms, "median_ms": statistics.median(warm_ms), "last": warm[-1]} if warm else None,
        "peak_rss_bytes": rss(),
        "seen": seen,
        **counts(cold),
    }


def counts(sample: Sample) -> dict[str, int]:
    """What a plan counted: data files and, where the implementation packs them, CombinedScanTasks."""
    return {k: sample[k] for k in ("files", "tasks") if k in sample}


def progress(name: str, message: str) -> None:
    print(f"[{name}] {message}", file=sys.stderr, flush=True)

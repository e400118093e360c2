"""The service's metrics, each declared once here with what it measures, and their Prometheus text
exposition (no client library: the format is a few lines of text, and one process owns its numbers).

The reference page of metrics (docs/reference/metrics.md) is generated from `METRICS`.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

# seconds; planning latencies span a millisecond (warm, small) to many seconds (cold, huge)
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Metric:
    """One series family: its name, Prometheus type, meaning (its HELP line) and label names."""

    name: str
    kind: Literal["counter", "histogram", "gauge"]
    help: str
    labels: tuple[str, ...] = ()


REQUESTS = Metric("scan_planner_requests_total", "counter", "HTTP requests answered", ("method", "route", "status"))
REQUEST_SECONDS = Metric(
    "scan_planner_request_seconds", "histogram", "HTTP request latency, until the last byte", ("method", "route")
)
STAGE_SECONDS = Metric(
    "scan_planner_stage_seconds", "histogram", "Planning time per stage of each fresh plan", ("stage",)
)
DATA_FILES = Metric(
    "scan_planner_data_files_total", "counter", "Data files of fresh plans, planned or skipped", ("outcome",)
)
MANIFESTS = Metric(
    "scan_planner_manifests_total", "counter", "Data manifests of fresh plans, read or skipped", ("outcome",)
)
REST_PLAN_FIELDS = Metric(
    "scan_planner_rest_plan_fields_total", "counter", "REST plan requests carrying each field", ("field",)
)
METRICS_REPORTS = Metric(
    "scan_planner_metrics_reports_total", "counter", "Metrics reports received from REST clients", ("report_type",)
)
SCAN_REPORTS = Metric(
    "scan_planner_scan_reports_total", "counter", "Scan reports sent to the REST catalog, by outcome", ("outcome",)
)
CACHE_HITS = Metric("scan_planner_cache_hits", "gauge", "Cache hits so far", ("cache",))
CACHE_MISSES = Metric("scan_planner_cache_misses", "gauge", "Cache misses so far", ("cache",))
CACHE_ENTRIES = Metric("scan_planner_cache_entries", "gauge", "Entries cached now", ("cache",))
CACHE_BYTES = Metric("scan_planner_cache_bytes", "gauge", "Estimated bytes cached now", ("cache",))
CACHE_EVICTIONS = Metric("scan_planner_cache_evictions", "gauge", "Entries evicted so far", ("cache",))
PLANS_MADE = Metric("scan_planner_plans_made", "gauge", "Plans made (fresh, explained, or rebuilt from a plan id)")
PLANS_RUNNING = Metric("scan_planner_plans_running", "gauge", "Plans being made now")
PLANS_WAITING = Metric("scan_planner_plans_waiting", "gauge", "Plans waiting for their turn now")
PLAN_MEMORY = Metric(
    "scan_planner_plan_memory_bytes",
    "gauge",
    "Estimated bytes counted against plan_memory_bytes now: plans being made, answers being sent",
    ("held_by",),
)
SPILL_PLANS = Metric("scan_planner_plan_spill_plans", "gauge", "Plans spilled to disk so far")
SPILL_BYTES = Metric("scan_planner_plan_spill_bytes", "gauge", "Bytes of spilled plans on disk")
SPILL_EVICTIONS = Metric(
    "scan_planner_plan_spill_evictions", "gauge", "Spilled plans removed to stay within plan_spill_bytes"
)
SPILL_FAILURES = Metric(
    "scan_planner_plan_spill_failures",
    "gauge",
    "Plans that could not be written to disk (full, unwritable): planned again if wanted",
)
INDEX_TIER = Metric(
    "scan_planner_index_tier",
    "gauge",
    "The index's disk tier (index_directory), by what: manifests read from it (hits) or not found there "
    "(misses), files written, write failures, files refused (MAC, layout), files evicted; bytes and files held; "
    "writes waiting or under way (pending); "
    "with index_store, objects put, got and the store's failures",
    ("what",),
)
ACCESS_RELOADS = Metric(
    "scan_planner_access_reloads",
    "gauge",
    "Reloads of the settings file's access policy, tokens and clients so far: ok, or failed (the one in force kept)",
    ("outcome",),
)
GC_FROZEN = Metric(
    "python_gc_frozen_objects", "gauge", "Objects out of the cycle collector's reach (gc.freeze at startup)"
)
GC_COLLECTIONS = Metric("python_gc_collections", "gauge", "Cycle collections so far, by generation", ("generation",))

METRICS: tuple[Metric, ...] = (
    REQUESTS,
    REQUEST_SECONDS,
    STAGE_SECONDS,
    DATA_FILES,
    MANIFESTS,
    REST_PLAN_FIELDS,
    METRICS_REPORTS,
    SCAN_REPORTS,
    CACHE_HITS,
    CACHE_MISSES,
    CACHE_ENTRIES,
    CACHE_BYTES,
    CACHE_EVICTIONS,
    PLANS_MADE,
    PLANS_RUNNING,
    PLANS_WAITING,
    PLAN_MEMORY,
    SPILL_PLANS,
    SPILL_BYTES,
    SPILL_EVICTIONS,
    SPILL_FAILURES,
    INDEX_TIER,
    ACCESS_RELOADS,
    GC_FROZEN,
    GC_COLLECTIONS,
)
Gauge = tuple[Metric, float, dict[str, str]]


class _Histogram:
    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)
        self.total = 0.0
        self.n = 0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(BUCKETS, value)] += 1
        self.total += value
        self.n += 1


class MetricsRegistry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, dict[Labels, float]] = defaultdict(lambda: defaultdict(float))
        self._histograms: dict[str, dict[Labels, _Histogram]] = defaultdict(lambda: defaultdict(_Histogram))
        self._help: dict[str, str] = {}

    def inc(self, metric: Metric, amount: float = 1.0, **labels: str) -> None:
        assert metric.kind == "counter" and set(labels) == set(metric.labels), metric
        with self._lock:
            self._help[metric.name] = metric.help
            self._counters[metric.name][tuple(sorted(labels.items()))] += amount

    def observe(self, metric: Metric, value: float, **labels: str) -> None:
        assert metric.kind == "histogram" and set(labels) == set(metric.labels), metric
        with self._lock:
            self._help[metric.name] = metric.help
            self._histograms[metric.name][tuple(sorted(labels.items()))].observe(value)

    def render(self, gauges: Iterable[Gauge] = ()) -> str:
        """The text format; `gauges` are current values sampled by the caller (cache sizes, ...)."""
        lines: list[str] = []
        with self._lock:
            for name, series in sorted(self._counters.items()):
                lines += [f"# HELP {name} {self._help[name]}", f"# TYPE {name} counter"]
                lines += [f"{name}{_labels(lbl)} {_num(v)}" for lbl, v in sorted(series.items())]
            for name, hists in sorted(self._histograms.items()):
                lines += [f"# HELP {name} {self._help[name]}", f"# TYPE {name} histogram"]
                for lbl, h in sorted(hists.items()):
                    cumulative = 0
                    for bound, count in zip((*BUCKETS, float("inf")), h.counts, strict=True):
                        cumulative += count
                        le = "+Inf" if bound == float("inf") else repr(bound)
                        lines.append(f"{name}_bucket{_labels((*lbl, ('le', le)))} {cumulative}")
                    lines.append(f"{name}_sum{_labels(lbl)} {_num(h.total)}")
                    lines.append(f"{name}_count{_labels(lbl)} {h.n}")
        seen: set[str] = set()
        for metric, value, labels in gauges:
            if metric.name not in seen:
                lines += [f"# HELP {metric.name} {metric.help}", f"# TYPE {metric.name} gauge"]
                seen.add(metric.name)
            lines.append(f"{metric.name}{_labels(tuple(sorted(labels.items())))} {_num(value)}")
        return "\n".join(lines) + "\n"


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    body = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
    return "{" + body + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)

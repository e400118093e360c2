"""Prometheus text exposition of the service's counters and latency histograms (no client library:
the format is a few lines of text, and one process owns its numbers)."""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable

# seconds; planning latencies span a millisecond (warm, small) to many seconds (cold, huge)
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

Labels = tuple[tuple[str, str], ...]


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

    def inc(self, name: str, help_text: str, amount: float = 1.0, **labels: str) -> None:
        with self._lock:
            self._help[name] = help_text
            self._counters[name][tuple(sorted(labels.items()))] += amount

    def observe(self, name: str, help_text: str, value: float, **labels: str) -> None:
        with self._lock:
            self._help[name] = help_text
            self._histograms[name][tuple(sorted(labels.items()))].observe(value)

    def render(self, gauges: Iterable[tuple[str, str, float, dict[str, str]]] = ()) -> str:
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
        for name, help_text, value, labels in gauges:
            if name not in seen:
                lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
                seen.add(name)
            lines.append(f"{name}{_labels(tuple(sorted(labels.items())))} {_num(value)}")
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

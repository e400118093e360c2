"""docs/reference/metrics.md: the Prometheus metrics of `GET /metrics`, from their declarations."""

from __future__ import annotations

from planner_service.metrics import BUCKETS, METRICS
from reference_docs.markdown import GENERATED_NOTE, cell, code, table


def render() -> str:
    rows = [
        (code(m.name), m.kind, ", ".join(code(label) for label in m.labels) or "none", cell(m.help)) for m in METRICS
    ]
    buckets = ", ".join(f"{b:g}" for b in BUCKETS)
    return "\n".join(
        [
            "# Metrics",
            "",
            GENERATED_NOTE.format(source="the declarations in `planner_service/metrics.py`"),
            "`GET /metrics` answers in Prometheus' text format (version 0.0.4), without authentication only",
            "when authentication is off. Counters and histograms count from the process's start; gauges are",
            "sampled when scraped. Each worker process (`workers` > 1) counts its own.",
            "",
            *table(("Metric", "Type", "Labels", "Meaning"), rows),
            "",
            f"Histograms' buckets, in seconds: {buckets} and `+Inf`.",
            "",
        ]
    )

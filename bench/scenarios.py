"""The benchmark's scans of the bench table: unfiltered, a selective column filter, a manifest-pruning filter.

Each scenario's filter is a REST JSON expression (the Iceberg REST spec's `Expression`), so every planner
plans the very same filter: ours reads it with `expression_from_json`, Iceberg Java with
`ExpressionParser.fromJson`, PyIceberg through bench/pyiceberg_filter.py, and the service takes it as the
/plan body's `filter`. The ranges come from the table's table.json (bench/make_table.py's `one_percent`),
which also says how many data files each filter must select.

Stdlib only: plan_bench.py and service_bench.py import it in the project's venv.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str  # one line, for the report
    filter_json: Json | None  # None: no filter
    expected_files: int  # data files the plan must hold
    expected_manifests: int  # data manifests the plan must read (the others pruned by partition summaries)


NAMES = ("full", "ids", "days")


def _between(column: str, low: Any, high: Any, high_op: str) -> Json:
    return {
        "type": "and",
        "left": {"type": "gt-eq", "term": column, "value": low},
        "right": {"type": high_op, "term": column, "value": high},
    }


def scenarios(table: dict[str, Any]) -> dict[str, Scenario]:
    """The scenarios of one bench table (its table.json), by name, in NAMES order."""
    files, manifests = table["data_files"], table["data_manifests"]
    hints = table["one_percent"]
    ids, days = hints["id_range"], hints["day_range"]
    first_day = dt.date.fromisoformat(days["first"])
    after_last = dt.date.fromisoformat(days["last"]) + dt.timedelta(days=1)
    day_manifests = hints["day_range_manifests"]
    return {
        "full": Scenario("full", "no filter: every data file", None, files, manifests),
        "ids": Scenario(
            "ids",
            f"id between {ids['min']} and {ids['max']}: {ids['files'] / files:.0%} of the files, by their id bounds",
            _between("id", ids["min"], ids["max"], "lt-eq"),
            ids["files"],
            manifests,
        ),
        "days": Scenario(
            "days",
            f"ts in [{first_day}, {after_last}): {day_manifests} of {manifests} manifests, by partition summaries",
            _between("ts", f"{first_day}T00:00:00", f"{after_last}T00:00:00", "lt"),
            day_manifests * (files // manifests),
            day_manifests,
        ),
    }


def parse_names(text: str, known: tuple[str, ...] = NAMES) -> list[str]:
    """A comma-separated list of scenario names, checked, in the order given, without duplicates."""
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(f"unknown scenarios {unknown} (choose from {', '.join(known)})")
    return names

"""Reading /plan responses in tests: every split of every task, written out (spark_client's expansion)."""

from __future__ import annotations

from typing import Any

from spark_client.partitions import expand_tasks


def splits(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Each split in task order: {"data-file", "start", "length", "residual-filter", ...}."""
    return [f for payload in expand_tasks(body) for f in payload["task"]["files"]]

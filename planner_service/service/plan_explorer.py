"""Why a scan reads what it reads, for people (the plan explorer at /ui): an explained plan summarized, its
details a page at a time, so that a plan of 200,000 files answers in summaries of a few kilobytes.

Explained plans are made fresh (their decisions are not kept with cached plans) and kept apart, a few by
plan id (Runtime.explained), so that paging through one does not plan it again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planner_service.access.table_access import TableAccess
from planner_service.catalog.base import LoadedTable
from planner_service.expressions.expression_json import expression_to_json
from planner_service.expressions.filter_text import filter_text
from planner_service.planning.admission import Cancellation
from planner_service.planning.explain import KEPT_RULES, Explain
from planner_service.planning.scan_plan import ScanPlan
from planner_service.service import planning_entrance as entrance
from planner_service.service.plan_ids import CanonicalRequest
from planner_service.service.runtime import Runtime
from planner_service.splitting.splits import split_weights
from planner_service.wire.content_file_json import ContentFileEncoder
from planner_service.wire.plan_json import grouping_keys_json, key_ranges_json, plan_head

MAX_PAGE = 1000  # manifests, files or tasks in one page
SHOWN_DATA_FILES = 20  # of the data files a delete file applies to
FILL_BUCKETS = 10  # the histogram of task weights over the split size: tenths, the last one also fuller


@dataclass(frozen=True)
class Page:
    """Which details to list: `offset` and `limit` of manifests, files (of one rule, when `files_rule`; else
    every file, the kept ones first) and tasks."""

    manifests_offset: int = 0
    files_offset: int = 0
    files_rule: str | None = None
    tasks_offset: int = 0
    limit: int = 50


def explore(
    runtime: Runtime,
    table: LoadedTable,
    request: CanonicalRequest,
    page: Page,
    plan_id: str,
    access: TableAccess,
    cancel: Cancellation | None = None,
) -> dict[str, Any]:
    """The explained plan of `request` (its scan explained), summarized, with one page of each detail;
    `plan_id` is the caller's id of the plan. Planned at the planning entrance, audited as a plan answered."""
    caches = _cache_counts(runtime)
    result = runtime.explained.get(request.cache_id)
    fresh = result is None
    if result is None:
        result, _ = entrance.plan(runtime, access, table, request, explain=True, cancel=cancel)
        runtime.explained.put(request.cache_id, result)
    else:
        entrance.audit_answer(access, table.name, result)
    plan = result.plan
    assert plan.explain is not None
    head = plan_head(plan, plan_id)
    del head["schema"], head["partition-specs"]
    used = {name: _delta(caches.get(name), after) for name, after in _cache_counts(runtime).items()}
    return {
        **head,
        "fresh": fresh,
        "cache-hits": {name: hits for name, hits in used.items() if fresh and any(hits.values())},
        "manifests": _manifests(plan.explain, page),
        "files": _files(plan.explain, page),
        "residuals": _residuals(plan),
        "delete-files": _delete_files(plan),
        "tasks": _tasks(plan, page),
    }


def _cache_counts(runtime: Runtime) -> dict[str, tuple[int, int]]:
    return {name: (cache.stats.hits, cache.stats.misses) for name, cache in runtime.caches().items()}


def _delta(before: tuple[int, int] | None, after: tuple[int, int]) -> dict[str, int]:
    hits, misses = before or (0, 0)
    return {"hits": after[0] - hits, "misses": after[1] - misses}


def _window(offset: int, limit: int) -> tuple[int, int]:
    limit = max(0, min(limit, MAX_PAGE))
    return max(0, offset), max(0, offset) + limit


def _manifests(explain: Explain, page: Page) -> dict[str, Any]:
    start, stop = _window(page.manifests_offset, page.limit)
    by_rule: dict[str, int] = {}
    for m in explain.manifests:
        by_rule[m["rule"]] = by_rule.get(m["rule"], 0) + 1
    return {
        "total": len(explain.manifests),
        "kept": sum(1 for m in explain.manifests if m["kept"]),
        "by-rule": by_rule,
        "offset": start,
        "items": explain.manifest_entries(start, stop),
    }


def _files(explain: Explain, page: Page) -> dict[str, Any]:
    """A page of the data files: of one rule's, or of all with the kept files first (what a scan reads is
    what a person looks for first; each group in planning order)."""
    start, stop = _window(page.files_offset, page.limit)
    by_rule = explain.rule_counts()
    return {
        "total": explain.file_count,
        "kept": sum(n for rule, n in by_rule.items() if rule in KEPT_RULES),
        "by-rule": by_rule,
        "rule": page.files_rule,
        "offset": start,
        "items": explain.data_files(start, stop, page.files_rule, kept_first=True),
    }


def _residuals(plan: ScanPlan) -> list[dict[str, Any]]:
    """Each distinct residual (as REST JSON, and as the filter string people read) with how many kept files
    read it, most files first."""
    files = plan.files
    if files is None or not len(files.residuals):
        return []
    counts = np.bincount(files.residual_id, minlength=len(files.residuals))
    order = np.argsort(-counts, kind="stable")
    return [
        {
            "residual": expression_to_json(files.residuals[r]),
            "residual-text": filter_text(files.residuals[r]),
            "files": int(counts[r]),
        }
        for r in order
        if counts[r]
    ]


def _delete_files(plan: ScanPlan) -> list[dict[str, Any]]:
    """Each delete file with how many kept data files it applies to, and the first SHOWN_DATA_FILES of them."""
    files = plan.files
    if files is None or not files.delete_files or files.delete_offsets is None:
        return []
    refs = files.delete_refs
    owners = np.repeat(np.arange(len(files), dtype=np.int64), np.diff(files.delete_offsets))  # the file of each ref
    order = np.argsort(refs, kind="stable")  # refs grouped by delete file, each group in the data files' order
    bounds = np.searchsorted(refs[order], np.arange(len(files.delete_files) + 1))
    meta = plan.table.metadata
    encoder = ContentFileEncoder(meta.specs, meta.schema)
    out = []
    for i, d in enumerate(files.delete_files):
        encoded = encoder.encode(d)
        first = owners[order[bounds[i] : min(bounds[i + 1], bounds[i] + SHOWN_DATA_FILES)]]
        out.append(
            {
                "file-path": encoded["file-path"],
                "content": encoded["content"],
                "file-format": encoded.get("file-format"),
                "record-count": encoded.get("record-count"),
                "applies-to-files": int(bounds[i + 1] - bounds[i]),
                "data-files": files.index.paths(files.rows[first]),
            }
        )
    return out


def _fill_buckets(weights: np.ndarray[Any, np.dtype[np.int64]], split_size: int) -> np.ndarray[Any, Any]:
    """Each task's bucket of the fill histogram: k where its weight is k/FILL_BUCKETS of the split size or more
    (and less than k + 1 tenths), the last bucket also fuller; compared in integers, so that a weight of
    exactly 20% is in the 20-30% bucket, and without overflow for a split size near 2^63."""
    edges = np.array([-(-k * max(split_size, 1) // FILL_BUCKETS) for k in range(1, FILL_BUCKETS)], np.int64)
    return np.searchsorted(edges, weights, side="right")


def _tasks(plan: ScanPlan, page: Page) -> dict[str, Any]:
    """The tasks as packed bins: the fill of each, its weight over the split size (what packing fills: a
    histogram of all), and a page of them with their pieces' files and weights (the open-file cost is the
    least a piece weighs)."""
    tasks, files, options = plan.combined, plan.files, plan.options
    out: dict[str, Any] = {
        "count": len(tasks) if tasks is not None else 0,
        "split-size": options.split_size,
        "open-file-cost": options.open_file_cost,
        "lookback": options.lookback,
    }
    if tasks is None or files is None or not len(tasks):
        return {**out, "fill-histogram": [0] * FILL_BUCKETS, "offset": 0, "items": []}
    columns = files.columns()  # each piece weighed as packing weighed it (splits.split_weights)
    weights = split_weights(
        tasks.length, columns.delete_bytes[tasks.file], columns.delete_counts[tasks.file], options.open_file_cost
    )
    task_weights = np.add.reduceat(weights, tasks.offsets[:-1])  # (every task holds a piece)
    fill = _fill_buckets(task_weights, options.split_size)
    start, stop = _window(page.tasks_offset, page.limit)
    items = []
    keys = grouping_keys_json(plan)
    ranges = key_ranges_json(plan, slice(start, stop))
    for t in range(start, min(stop, len(tasks))):
        pieces = tasks.pieces(t)
        file_ids = tasks.file[pieces.start : pieces.stop]
        starts, lengths = tasks.start[pieces.start : pieces.stop], tasks.length[pieces.start : pieces.stop]
        paths = files.index.paths(files.rows[file_ids])
        piece_weights = weights[pieces.start : pieces.stop].tolist()
        item: dict[str, Any] = {
            "index": t,
            "size-bytes": int(tasks.size_bytes[t]),
            "estimated-row-count": int(tasks.estimated_rows[t]),
            "weight": int(task_weights[t]),
            "files": len(set(file_ids.tolist())),
            "pieces": [
                {"file-path": path, "start": int(s), "length": int(n), "weight": w}
                for path, s, n, w in zip(paths, starts, lengths, piece_weights, strict=True)
            ],
        }
        if plan.grouping is not None:  # the task's partition key, and its range of the sort order
            item["grouping-key"] = keys[int(plan.grouping.task_key[t])]
        if ranges is not None:
            item["key-range"] = ranges[t - start]
        items.append(item)
    return {
        **out,
        "fill-histogram": np.bincount(fill, minlength=FILL_BUCKETS).tolist(),
        "offset": start,
        "items": items,
    }

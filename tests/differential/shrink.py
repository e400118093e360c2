"""Shrinking a divergence to a minimal history and request, each step re-checked against Iceberg Java.

First the history: delta debugging (ddmin) over its ops after the create, then simpler forms of the ops that
remain (the create without a property or a partition field, inserts with fewer rows); a history is kept when,
replayed by java_side.py (ops Spark now refuses are skipped), the request still shows the same kind of
divergence (fuzz.signature; a divergence of a Spark read, grouping or rows, is checked by that read again).
Then the request on the last table: the filter without a subtree (replaced by
a child or true), fewer IN values, each option dropped, no select, the current snapshot.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from planner_service.planning.planner import ScanPlanner
from tests.differential.compare import our_answer, verdict
from tests.differential.driver import JavaProcess, log
from tests.differential.fuzz import SPARK_READS, signature, spark_findings


class Shrinker:
    def __init__(self, java: JavaProcess, planner: ScanPlanner, finding: dict[str, Any], budget_s: float = 300) -> None:
        self.java = java
        self.planner = planner
        self.kind = signature(finding["finding"])
        self.deadline = time.monotonic() + budget_s
        self.checks = 0
        self.best = dict(finding)
        self._table: str | None = None  # the table of the smallest failing history so far

    def shrink(self) -> dict[str, Any]:
        """The finding, minimized as far as the budget allows (with "shrunk": what was tried)."""
        original = (len(self.best["history"]), _size(self.best["request"]["filter"]))
        history = self.best["history"]
        if self._check(history, self.best["request"]) is None:
            log(f"shrink: the finding does not reproduce on a rebuilt table ({self.kind})")
            return {**self.best, "shrunk": {"reproduced": False, "checks": self.checks}}
        head, tail = history[:1], history[1:]
        ddmin(tail, lambda ops: self._check(head + ops, self.best["request"]) is not None, self._in_time)
        self._simplify_ops(self.best["history"])
        self._simplify_request(self.best["request"])  # each success leaves best at the pair that failed
        if self._table is not None:
            self.java.drop(self._table)
        shrunk = {"reproduced": True, "checks": self.checks, "from": original}
        shrunk["to"] = (len(self.best["history"]), _size(self.best["request"]["filter"]))
        return {**self.best, "shrunk": shrunk}

    def _in_time(self) -> bool:
        return time.monotonic() < self.deadline

    def _check(
        self, history: list[dict[str, Any]], request: dict[str, Any], table: str | None = None
    ) -> dict[str, Any] | None:
        """Replay `history` (or reuse `table`), plan `request` on both sides: the finding if it is still of
        the same kind (then it becomes the best so far), else None."""
        self.checks += 1
        built_here = table is None
        if table is None:
            built = self.java.replay(history)
            if built.metadata_location is None:
                self.java.drop(built.table)
                return None
            table, applied = built.table, built.applied
        else:
            applied = self.best["history"]
        keep = False
        try:
            reply = self.java.plan(table, request)
            if "invalid" in reply:
                return None
            location = self.java.send(cmd="table", table=table)["metadata_location"]
            java_answer: Any = reply["answer"]
            ours: Any = our_answer(self.planner, location, reply["request"])
            finding, _ = verdict(java_answer, ours, reply["request"])
            if self.kind.startswith(SPARK_READS):  # a divergence of a Spark read: that read, again
                found = spark_findings(self.java, self.planner, table, location, reply["request"], self.kind)
                finding, java_answer, ours = found[0] if found else (None, None, None)
            if finding is None or signature(finding) != self.kind:
                return None
            keep = True
            self.best = {
                **self.best,
                "finding": finding,
                "history": applied,
                "request": request,
                "resolved": reply["request"],
                "java": java_answer,
                "ours": ours,
            }
            return self.best
        finally:
            if built_here and keep:
                if self._table is not None and self._table != table:
                    self.java.drop(self._table)
                self._table = table
            elif built_here:
                self.java.drop(table)

    def _simplify_ops(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index in range(len(history)):
            for simpler in _simpler_ops(history[index]):
                if not self._in_time():
                    return history
                candidate = [*history[:index], simpler, *history[index + 1 :]]
                if self._check(candidate, self.best["request"]) is not None:
                    history = candidate
        return history

    def _simplify_request(self, request: dict[str, Any]) -> dict[str, Any]:
        changed = True
        while changed and self._in_time():
            changed = False
            for simpler in _simpler_requests(request):
                if self._check(self.best["history"], simpler, self._table) is not None:
                    request, changed = simpler, True
                    break
        return request


def ddmin(items: list[Any], fails: Callable[[list[Any]], bool], in_time: Callable[[], bool]) -> list[Any]:
    """Zeller's delta debugging by complements: a smallest-found sublist of `items` that still `fails`."""
    n = 2
    while len(items) >= 1 and in_time():
        chunk = max(1, -(-len(items) // n))
        for start in range(0, len(items), chunk):
            complement = items[:start] + items[start + chunk :]
            if fails(complement):
                items, n = complement, max(n - 1, 2)
                break
        else:
            if chunk == 1:
                return items
            n = min(len(items), n * 2)
    return items


def _simpler_ops(op: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if op["op"] == "create":
        for key in op["properties"]:
            if key != "write.distribution-mode":
                yield {**op, "properties": {k: v for k, v in op["properties"].items() if k != key}}
        for field in op["partition"]:
            yield {**op, "partition": [f for f in op["partition"] if f != field]}
    if "rows" in op and len(op["rows"]) > 1:
        yield {**op, "rows": op["rows"][: len(op["rows"]) // 2]}
        if op.get("files", 1) > 1:
            yield {**op, "files": 1}


def _simpler_requests(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if request["filter"] is not None:
        yield {**request, "filter": None}
        for simpler in _simpler_filters(request["filter"]):
            yield {**request, "filter": simpler}
    for key in request["options"]:
        yield {**request, "options": {k: v for k, v in request["options"].items() if k != key}}
    if request.get("select") is not None:
        yield {**request, "select": None}
    if request["snapshot"]["kind"] != "current":
        yield {**request, "snapshot": {"kind": "current"}}
    if not request["case_sensitive"]:
        yield {**request, "case_sensitive": True}


def _simpler_filters(node: Any) -> Iterator[Any]:
    """Each way to make one part of a filter simpler: a logical node replaced by a child or true, a
    predicate by true, an IN list cut to one of its values; recursively."""
    if not isinstance(node, dict):
        return
    if node["type"] in ("and", "or"):
        yield node["left"]
        yield node["right"]
        for simpler in _simpler_filters(node["left"]):
            yield {**node, "left": simpler}
        for simpler in _simpler_filters(node["right"]):
            yield {**node, "right": simpler}
    elif node["type"] == "not":
        yield node["child"]
        for simpler in _simpler_filters(node["child"]):
            yield {**node, "child": simpler}
    else:
        yield True
        if len(node.get("values") or ()) > 1:
            for value in node["values"]:
                yield {**node, "values": [value]}


def _size(node: Any) -> int:
    """How many predicates and logical nodes a filter has."""
    if not isinstance(node, dict):
        return 0 if node is None else 1
    return 1 + sum(_size(node[k]) for k in ("left", "right", "child") if k in node)

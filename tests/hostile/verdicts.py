"""Iceberg Java's verdicts on the hostile variants and fuzzed mutations of a table it wrote (java_verdicts.py),
built once per content of their inputs and cached in $SCAN_PLANNER_CACHE/hostile/<digest>/, and how a plan
of ours is held to one (judge)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spark_client.partitions import expand_tasks
from tests.conformance import reference

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "java_verdicts.py"
INPUTS = (SCRIPT, HERE / "variants.py", HERE / "mutations.py", reference.GENERATE, reference.JAVA_ENV)


def load_verdicts(config: pytest.Config) -> dict[str, Any]:
    """The verdicts of the inputs' current content: from the cache, or built now (locked)."""
    java_env = reference.load_java_env()
    target = java_env.cache_root() / "hostile" / reference.generator_digest(INPUTS)
    if not (target / "verdicts.json").exists():
        with java_env.file_lock(target.with_name(target.name + ".lock")):
            if not (target / "verdicts.json").exists():
                reference.generate(config, java_env, target, SCRIPT, "verdicts.json")
    return {"dir": target, **json.loads((target / "verdicts.json").read_text())}


def planned(body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(files, splits) of an inline plan, in the shape java_verdicts.py records Java's."""
    deletes = body.get("delete-files") or []
    out = []
    for payload in expand_tasks(body):  # each task's references are into its own delete files
        own = payload["plan"]["delete-files"]
        for s in payload["task"]["files"]:
            out.append(
                {
                    "path": s["data-file"]["file-path"],
                    "start": s["start"],
                    "length": s["length"],
                    "deletes": sorted(own[i]["file-path"] for i in s["delete-file-references"]),
                }
            )
    out.sort(key=lambda t: (t["path"], t["start"]))
    files = [
        {
            "path": f["data-file"]["file-path"],
            "deletes": sorted(deletes[i]["file-path"] for i in f.get("delete-file-references") or ()),
        }
        for f in body["files"]
    ]
    return sorted(files, key=lambda f: f["path"]), out


def java_files(verdict: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"path": f["path"], "deletes": f["deletes"]} for f in verdict["files"]]


def judge(verdict: dict[str, Any], status: int, body: dict[str, Any]) -> str | None:
    """What is wrong with our answer (`status`, JSON `body`) to a table Java judged so, or None. Refusing
    is always allowed (we check more than Java does); a plan must be Java's plan, of a table Java plans; a
    5xx is wrong but for a 503 on a file that is not there."""
    error = (body.get("error") or {}) if isinstance(body, dict) else {}
    if status >= 500 and not (status == 503 and "missing" in str(error.get("message", ""))):
        return f"{status}: {error.get('message', body)}"
    if status != 200:
        return None if isinstance(error.get("message"), str) else f"{status} without an error message"
    if verdict["stage"] != "planned":
        java = verdict["error"]
        return f"planned what Java refuses to {verdict['stage']} ({java['class']}: {java['message'][:200]})"
    files, tasks = (sorted(items, key=_canonical) for items in planned(body))
    if files != sorted(java_files(verdict), key=_canonical):
        return f"planned other files than Java: {_difference(files, java_files(verdict))}"
    if tasks != sorted(verdict["tasks"], key=_canonical):
        return f"split differently from Java: {_difference(tasks, verdict['tasks'])}"
    return None


def _canonical(item: dict[str, Any]) -> str:
    return json.dumps(item, sort_keys=True)


def _difference(ours: list[dict[str, Any]], java: list[dict[str, Any]]) -> str:
    """What only we have and what only Java has, with paths cut to their file names."""

    def short(item: dict[str, Any]) -> str:
        text = json.dumps(item, sort_keys=True)
        for path in {item["path"], *item.get("deletes", ())}:
            text = text.replace(path, Path(path).name[:24])
        return text

    mine, theirs = [short(i) for i in ours], [short(i) for i in java]
    only_ours = [i for i in mine if mine.count(i) > theirs.count(i)]
    only_java = [i for i in theirs if theirs.count(i) > mine.count(i)]
    return f"only ours {only_ours[:3]}, only Java's {only_java[:3]}"

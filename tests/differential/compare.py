"""Our planner's answer to a differential request, in the shape java_side.py records Java's, and the verdict.

Equality is the conformance suite's (tests/conformance/test_java_parity.py): planFiles() tasks and the
CombinedScanTasks of planTasks() in Java's order, each task's file, byte range, deletes and residual (as
ExpressionParser.toJson writes it); an error must be an error of ours whose message starts with Java's.
The differential run also compares each task's data sequence number, its deletes' offsets, sizes and
sequence numbers, and the field ids of the scan's projected schema (`select`).
"""

from __future__ import annotations

import traceback
from typing import Any

from planner_service.catalog.base import load_by_metadata_location
from planner_service.errors import PlannerError
from planner_service.expressions.expression import TRUE
from planner_service.expressions.expression_json import expression_from_json, expression_to_json
from planner_service.metadata.content_file import EQUALITY_DELETES, POSITION_DELETES, ContentFile
from planner_service.metadata.snapshot_choice import AppendRange, SnapshotChoice
from planner_service.planning.planned_files import FileScanTask
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.scan_request import ScanRequest
from tests.conformance.reference import java_message

_CONTENT = {POSITION_DELETES: "POSITION_DELETES", EQUALITY_DELETES: "EQUALITY_DELETES"}
TASK_FIELDS = (
    "path",
    "start",
    "length",
    "spec_id",
    "record_count",
    "file_size_in_bytes",
    "data_sequence_number",
    "residual",
)
DELETE_FIELDS = ("path", "content", "format", "content_offset", "content_size_in_bytes", "data_sequence_number")


def snapshot_choice(snapshot: dict[str, Any]) -> SnapshotChoice:
    """A resolved conformance snapshot choice as ours (an incremental one is `append_range`'s)."""
    kind, value = snapshot["kind"], snapshot.get("value")
    if kind == "id":
        return SnapshotChoice(snapshot_id=int(snapshot["value"]))
    if kind == "as_of":
        return SnapshotChoice(as_of_timestamp_ms=int(snapshot["value"]))
    if kind == "ref":
        return SnapshotChoice(ref=str(value))
    return SnapshotChoice()


def append_range(snapshot: dict[str, Any]) -> AppendRange | None:
    return AppendRange(snapshot["start"], snapshot["end"]) if snapshot["kind"] == "appends" else None


def scan_request(request: dict[str, Any]) -> ScanRequest:
    """Our ScanRequest for a resolved differential request."""
    row_filter = TRUE if request["filter"] is None else expression_from_json(request["filter"])
    select = request.get("select")
    return ScanRequest(
        snapshot_choice(request["snapshot"]),
        request.get("options") or None,
        row_filter,
        request["case_sensitive"],
        appends=append_range(request["snapshot"]),
        select=None if select is None else tuple(select),
    )


def _delete(d: ContentFile) -> dict[str, Any]:
    return {
        "path": d.path,
        "content": _CONTENT[d.content],
        "format": d.format,
        "content_offset": d.content_offset,
        "content_size_in_bytes": d.content_size_in_bytes,
        "data_sequence_number": d.data_sequence_number,
    }


def task_json(t: FileScanTask) -> dict[str, Any]:
    """Our task as java_side.py records Java's, with only the fields compared."""
    return {
        "path": t.file.path,
        "start": t.start,
        "length": t.length,
        "spec_id": t.file.spec_id,
        "record_count": t.file.record_count,
        "file_size_in_bytes": t.file.file_size_in_bytes,
        "data_sequence_number": t.file.data_sequence_number,
        "residual": expression_to_json(t.residual),
        "deletes": [_delete(d) for d in t.deletes],
    }


def java_task(t: dict[str, Any]) -> dict[str, Any]:
    """Java's recorded task with only the fields compared."""
    out = {k: t[k] for k in TASK_FIELDS}
    out["deletes"] = [{k: d[k] for k in DELETE_FIELDS} for d in t["deletes"]]
    return out


def field_ids(node: Any) -> list[int]:
    """Every field id in a schema's JSON (struct fields, list elements, map keys and values)."""
    found: list[int] = []
    if isinstance(node, dict):
        for key in ("id", "element-id", "key-id", "value-id"):
            if isinstance(node.get(key), int):
                found.append(node[key])
        for value in node.values():
            found += field_ids(value)
    elif isinstance(node, list):
        for value in node:
            found += field_ids(value)
    return found


def our_answer(planner: ScanPlanner, metadata_location: str, request: dict[str, Any]) -> dict[str, Any]:
    """Our plan of a resolved request: {"error": {"message"}} when we refuse it, {"crash": ...} when we break."""
    try:
        table = load_by_metadata_location(planner.io, metadata_location)
        plan = planner.plan(table, scan_request(request))
        files = [task_json(t) for t in plan.file_tasks]
        tasks = [[task_json(t) for t in c.tasks] for c in plan.tasks]
    except PlannerError as err:
        return {"error": {"class": type(err).__name__, "message": java_message(err)}, "files": [], "tasks": []}
    except Exception:  # a crash is a finding whatever Java says
        return {"crash": traceback.format_exc()[-3000:]}
    ids = sorted(field_ids(plan.schema.to_json()))
    return {"error": None, "files": files, "tasks": tasks, "schema_ids": ids}


# Java exceptions whose text is Iceberg's own (our errors carry it); others, such as java.time's
# DateTimeParseException for a malformed literal, only need a refusal of ours
ICEBERG_ERRORS = ("IllegalArgumentException", "ValidationException", "NoSuchTableException")
# Java binds the filter only when it reads a manifest: a plan with nothing to read accepts any filter,
# where we refuse a filter that cannot bind to the table before planning (scan_request.check_on_table)
LAZY_BINDING = "Java plans nothing without binding the filter; we refuse it up front"
OTHER_TEXT = "both refuse; Java's exception is not Iceberg's"
# Iceberg 1.10 bugs: Evaluator.notStartsWith calls String.startsWith on a null identity partition value (in a
# residual); DeleteFileIndex.canContainEqDeletesForFile dereferences the field of an equality delete whose
# column was dropped. Java cannot plan such scans; we plan them (regressions/java-npe-*.json)
JAVA_NPE = "Java throws a NullPointerException (an Iceberg bug); we plan"
# a filter parsed with the table's schema (binary literals need it): Java's typed parser refuses literals that
# its schema-less parser, and ours, convert at binding (a timestamptz with an offset, a number for a date)
SCHEMA_PARSE = "Java's schema-typed ExpressionParser refuses a literal that binding converts"


# Java's Schema.select skips a name the schema lacks and plans; the service refuses it with 400 naming the
# column, by design (bad input is answered, never planned silently: a typo would read fewer columns; Spark +
# Iceberg's own reads refuse an unknown column too). regressions/select-unknown-column.json
UNKNOWN_SELECT = "Java ignores a selected column the schema lacks; we refuse it, naming it"


def verdict(java: dict[str, Any], ours: dict[str, Any], request: dict[str, Any]) -> tuple[str | None, str | None]:
    """(finding, tolerated): what differs between Java's answer and ours, said briefly (None: nothing),
    and which tolerated difference (LAZY_BINDING, UNKNOWN_SELECT, OTHER_TEXT, JAVA_NPE, SCHEMA_PARSE) the answers
    show, if any."""
    if "crash" in ours:
        return f"our planner crashed: {ours['crash'].strip().splitlines()[-1]}", None
    java_error, our_error = java["error"], ours["error"]
    if java_error is None and our_error is not None:
        if not java["files"] and our_error["class"] == "InvalidFilterError":
            return None, LAZY_BINDING
        if our_error["message"].startswith("Cannot select unknown column "):
            return None, UNKNOWN_SELECT
        return f"we refused what Java plans: {our_error['message']}", None
    if java_error is not None:
        if request.get("with_schema") and str(java_error["message"]).startswith("Cannot parse default as"):
            return None, SCHEMA_PARSE
        if our_error is None and java_error["class"] == "java.lang.NullPointerException":
            return None, JAVA_NPE
        if our_error is None:
            return f"we planned what Java refuses: {java_error['class']}: {java_error['message']}", None
        message = java_error["message"]
        iceberg = java_error["class"].rsplit(".", 1)[-1] in ICEBERG_ERRORS and not request.get("with_schema")
        if not iceberg or message is None:
            return None, OTHER_TEXT if message is not None and not our_error["message"].startswith(message) else None
        if not our_error["message"].startswith(message):
            return f"another error: Java's {message!r}, ours {our_error['message']!r}", None
        return None, None
    for what in ("files", "tasks"):
        expected = _tasks(java[what], what == "tasks")
        got = ours[what]
        if len(expected) != len(got):
            return f"{what}: Java has {len(expected)}, we have {len(got)}", None
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            if e != g:
                return f"{what}[{i}]: {_first_field(e, g)}", None
    if isinstance(java["schema_ids"], dict):
        error = java["schema_ids"]["error"]
        return f"Java's scan.schema() throws after planning ({error['message']}); we project", None
    if java["schema_ids"] != ours["schema_ids"]:
        return f"projected schema: Java's ids {java['schema_ids']}, ours {ours['schema_ids']}", None
    return None, None


def _tasks(items: list[Any], combined: bool) -> list[Any]:
    return [[java_task(t) for t in c] for c in items] if combined else [java_task(t) for t in items]


def _first_field(expected: Any, got: Any) -> str:
    if isinstance(expected, list):
        if len(expected) != len(got):
            return f"Java's group has {len(expected)} tasks, ours {len(got)}"
        return next(_first_field(e, g) for e, g in zip(expected, got, strict=True) if e != g)
    key = next(k for k in expected if expected[k] != got.get(k))
    return f"{key}: Java {expected[key]!r}, ours {got.get(key)!r} (file {expected['path'].rsplit('/', 1)[-1]})"

"""POST /explore through a real uvicorn: the explained plan's summaries and pages agree with /plan's answer
for the same request (whose files and tasks the conformance suite holds to Iceberg Java's): every file's
rule and reason, the kept files listed first, the counts by rule, the residuals and delete files with the
files they apply to, and the tasks as /plan packs them, each in the fill bucket its weight puts it in; pages
put together are the whole."""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import pytest

CASES: list[dict[str, Any]] = [
    {"table": "db.identity_part", "filter": "category = 'a' AND id < 5"},
    {"table": "db.mor_position_deletes", "filter": "id > 3"},
    {"table": "db.equality_deletes"},
    {"table": "db.v3_dv", "filter": "id IS NOT NULL"},
    {"table": "db.nested_nan", "filter": "is_nan(f)"},
    {"table": "db.row_groups", "filter": "id >= 100", "options": {"split-size": 1024}},
]


def post(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(f"{url}{path}", json=body, timeout=60)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['table']} {c.get('filter', '')}")
def test_explore_agrees_with_plan(conformance_service: str, case: dict[str, Any]) -> None:
    plan = post(conformance_service, "/plan", {**case, "explain": True})
    explain = plan["explain"]
    pages, offset = [], 0
    while True:
        page = post(conformance_service, "/explore", {**case, "files-offset": offset, "page-size": 5})
        pages.append(page)
        offset += 5
        if offset >= page["files"]["total"]:
            break
    first = pages[0]
    kept_first = sorted(explain["data-files"], key=lambda f: not f["kept"])  # (stable: each in planning order)
    assert [f for p in pages for f in p["files"]["items"]] == kept_first
    assert first["files"]["by-rule"] == dict(Counter(f["rule"] for f in explain["data-files"]))
    assert first["files"]["kept"] == sum(f["kept"] for f in explain["data-files"]) == len(plan["files"])
    assert first["manifests"]["items"] == explain["manifests"][:5]
    assert first["manifests"]["kept"] == sum(m["kept"] for m in explain["manifests"])
    assert first["task-count"] == plan["task-count"] and first["metrics"]["scanned-data-files"] == len(plan["files"])

    used = Counter(f["residual"] for f in plan["files"])
    assert sorted((r["files"], str(r["residual"])) for r in first["residuals"]) == sorted(
        (n, str(plan["residuals"][r])) for r, n in used.items()
    )
    applies = Counter(d for f in plan["files"] for d in f.get("delete-file-references", []))
    assert [d["applies-to-files"] for d in first["delete-files"]] == [
        applies[i] for i in range(len(plan["delete-files"]))
    ]
    assert [d["file-path"] for d in first["delete-files"]] == [d["file-path"] for d in plan["delete-files"]]
    for i, shown in enumerate(first["delete-files"]):
        referring = [f["data-file"]["file-path"] for f in plan["files"] if i in f.get("delete-file-references", [])]
        assert shown["data-files"] == referring[:20]

    tasks = post(conformance_service, "/explore", {**case, "page-size": 1000})["tasks"]
    assert len(tasks["items"]) == len(plan["tasks"])
    assert sum(tasks["fill-histogram"]) == plan["task-count"]
    for shown, task in zip(tasks["items"], plan["tasks"], strict=True):
        assert shown["size-bytes"] == task["size-bytes"]
        assert [(p["file-path"], p["start"], p["length"]) for p in shown["pieces"]] == [
            (plan["files"][f]["data-file"]["file-path"], start, length) for f, start, length in task["splits"]
        ]
        assert all(p["weight"] >= max(p["length"], tasks["open-file-cost"]) for p in shown["pieces"])


@pytest.mark.parametrize(
    ("case", "texts"),
    [(CASES[0], ["id < 5"]), (CASES[2], ["true"]), (CASES[4], ["f IS NAN"])],
    ids=lambda v: str(v),
)
def test_residuals_are_also_filter_strings(conformance_service: str, case: dict[str, Any], texts: list[str]) -> None:
    """Each residual as JSON (what a reader is sent) and as the filter string people write."""
    residuals = post(conformance_service, "/explore", case)["residuals"]
    assert [r["residual-text"] for r in residuals] == texts


def test_the_first_page_lists_the_kept_files_first(demo_service: str) -> None:
    """The report of issue 55: demo.events with region = 'eu' AND id < 100 keeps 5 of its 78 files, and the
    first page of all of them (50 files) held only skipped ones. Now it starts with the files the scan reads."""
    body = {"table": "demo.events", "filter": "region = 'eu' AND id < 100"}
    planned = post(demo_service, "/plan", body)["files"]
    files = post(demo_service, "/explore", body)["files"]
    assert files["total"] > 50 and files["kept"] == len(planned) > 0
    read = [f["data-file"]["file-path"] for f in planned]  # (planning order)
    assert [f["file-path"] for f in files["items"][: len(read)]] == read
    assert all(f["kept"] for f in files["items"][: len(read)]) and not any(
        f["kept"] for f in files["items"][len(read) :]
    )


def test_a_task_is_in_the_fill_bucket_of_its_weight(demo_service: str) -> None:
    """A task of five small files weighs five open-file costs (Iceberg's TableScanUtil: a split weighs at
    least the open-file cost), 15.6% of the 128 MiB split size: the histogram counts it in the bucket of
    10-20% (bucket k holds weights from k/n to (k+1)/n of the split size), not in the first."""
    body = {"table": "demo.events", "filter": "region = 'eu' AND id < 100"}
    plan = post(demo_service, "/plan", body)
    options = plan["split-options"]
    split, open_cost = options["split-size"], options["file-open-cost"]
    (task,) = plan["tasks"]
    weight = sum(max(length, open_cost) for _, _, length in task["splits"])  # (no delete files here)
    assert 0.10 <= weight / split < 0.20  # the report's 15% bin
    tasks = post(demo_service, "/explore", body)["tasks"]
    histogram = tasks["fill-histogram"]
    n = len(histogram)
    expected = [0] * n
    expected[min(weight * n // split, n - 1)] = 1
    assert histogram == expected and histogram[0] == 0
    assert tasks["items"][0]["weight"] == weight


def test_one_rule_a_page_at_a_time(conformance_service: str) -> None:
    case = CASES[0]
    explain = post(conformance_service, "/plan", {**case, "explain": True})["explain"]
    wanted = [f for f in explain["data-files"] if f["rule"] == "partition-value"]
    page = post(conformance_service, "/explore", {**case, "files-rule": "partition-value", "files-offset": 2})
    assert page["files"]["items"] == wanted[2:] and len(wanted) > 2
    second = post(conformance_service, "/explore", case)
    assert second["fresh"] is False  # paging does not plan again


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"table": "db.identity_part", "filter": "category = "}, 400, "Invalid filter at line 1, column 10"),
        ({"table": "db.nope"}, 404, "db.nope"),
        ({"table": "db.identity_part", "files-rule": "luck"}, 400, "files-rule"),
        ({"table": "db.identity_part", "page-size": 5000}, 400, "page-size"),
    ],
)
def test_bad_requests_are_4xx(conformance_service: str, body: dict[str, Any], status: int, says: str) -> None:
    response = httpx.post(f"{conformance_service}/explore", json=body, timeout=60)
    assert response.status_code == status and says in response.json()["error"]["message"], response.text


def test_the_page_and_its_policy(conformance_service: str) -> None:
    page = httpx.get(f"{conformance_service}/ui")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "http" not in page.text.replace("http-equiv", "")  # nothing from elsewhere
    for asset in ("explorer.js", "explorer.css"):
        assert httpx.get(f"{conformance_service}/ui/{asset}").status_code == 200
    assert httpx.get(f"{conformance_service}/ui/../settings.py").status_code == 404
    assert httpx.get(f"{conformance_service}/ui/__init__.py").status_code == 404


@pytest.mark.parametrize("grouping", ["partition", "sort-order"])
def test_grouped_tasks_say_their_key_and_range_as_plan_does(conformance_service: str, grouping: str) -> None:
    body = {"table": "db.sorted_multi", "grouping": grouping, "options": {"split-size": 4096}}
    plan = post(conformance_service, "/plan", body)
    pages, offset = [], 0
    while offset < plan["task-count"]:
        page = post(conformance_service, "/explore", {**body, "tasks-offset": offset, "page-size": 7})
        pages += page["tasks"]["items"]
        offset += 7
    assert [t["grouping-key"] for t in pages] == [t["grouping-key"] for t in plan["tasks"]]
    assert [t.get("key-range") for t in pages] == [t.get("key-range") for t in plan["tasks"]]
    assert ("key-range" in pages[0]) == (grouping == "sort-order")

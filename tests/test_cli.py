"""`scan-planner plan` and `aggregate` end to end: plan's --json output for a filtered scan holds the files
and residuals Iceberg Java planned, aggregate's the values Spark + Iceberg answers from metadata; bad input
exits 1 with one line on stderr (with --json, /plan's JSON error); --select and --explain as /plan's, the
explanation's paths from the table's location and its filter as a filter string."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from planner_service.cli import _relative, main
from tests.aggregate_values import comparable, plain_json
from tests.conformance.read_cases import PARTITION_COUNT_CASES
from tests.conformance.reference import Conformance
from tests.plan_wire import splits


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("case_id", "flag", "text"),
    [
        ("day_part/ts-range", "--filter-json", None),
        (
            "identity_part/partition-and-column",
            "--filter",
            "category = 'c' AND id < 45",
        ),
        ("truncate_part/starts-with-longer", "--filter", "name LIKE 'bandit%'"),
    ],
)
def test_plan_json_matches_java(
    conformance: Conformance, capsys: pytest.CaptureFixture[str], case_id: str, flag: str, text: str | None
) -> None:
    case = conformance.case(case_id)
    location = conformance.tables[case["table"]]["metadata_location"]
    filter_arg = text if text is not None else json.dumps(case["filter"])
    code, out, err = _run(capsys, "plan", "--metadata-location", location, flag, filter_arg, "--json")
    assert code == 0, err
    body = json.loads(out)
    ours = [(f["data-file"]["file-path"], f["residual-filter"]) for f in splits(body)]
    java = [(t["path"], t["residual"]) for combined in case["tasks"] for t in combined]
    assert ours == java


def test_summary_and_errors(conformance: Conformance, capsys: pytest.CaptureFixture[str]) -> None:
    location = conformance.tables["identity_part"]["metadata_location"]
    code, out, _ = _run(capsys, "plan", "--metadata-location", location, "--filter", "category = 'a'")
    assert code == 0 and "1 combined task, 3 file ranges of 3 files" in out and "skipped" in out

    code, out, err = _run(capsys, "plan", "--metadata-location", location, "--filter", "categry = 'a'")
    assert code == 1 and out == ""
    assert err.startswith("scan-planner plan: ") and err.count("\n") == 1
    # the table's columns: id, category, name, ts, amount
    assert (
        "Cannot find field 'categry' (did you mean 'category'?); the columns are id, category, name, ts, amount" in err
    )

    code, out, err = _run(capsys, "plan", "--metadata-location", location, "--filter", "categry = 'a'", "--json")
    assert code == 1 and out == ""
    error = json.loads(err)["error"]
    assert error["code"] == 400 and "Cannot find field 'categry'" in error["message"]

    code, _, err = _run(capsys, "plan", "--metadata-location", location, "--filter-json", "{not json", "--json")
    assert code == 1 and "--filter-json is not valid JSON" in json.loads(err)["error"]["message"]

    code, _, err = _run(capsys, "plan", "--metadata-location", location + ".missing", "--json")
    assert code == 1 and json.loads(err)["error"]["code"] == 404


def test_grouping_by_partition(conformance: Conformance, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI's plan is /plan's: each task's grouping key, keys ascending (nulls first)."""
    location = conformance.tables["identity_part"]["metadata_location"]
    args = ["plan", "--metadata-location", location, "--option", "split-size=2048", "--json"]
    code, out, _ = _run(capsys, *args, "--grouping", "partition")
    assert code == 0
    plan = json.loads(out)
    assert plan["grouping"]["keys"] == [[None], ["a"], ["b"], ["c"]]
    keys = [t["grouping-key"] for t in plan["tasks"]]
    assert keys == sorted(keys, key=lambda k: (k[0] is not None, k[0] or "")) and len(keys) > 4


def test_grouping_by_sort_order(conformance: Conformance, capsys: pytest.CaptureFixture[str]) -> None:
    """--grouping sort-order: the table's sort order in the head, each task's key range; an unsorted table is
    refused with /plan's 400."""
    location = conformance.tables["sorted_ids"]["metadata_location"]
    code, out, _ = _run(capsys, "plan", "--metadata-location", location, "--grouping", "sort-order", "--json")
    assert code == 0
    plan = json.loads(out)
    assert plan["grouping"]["type"] == "sort-order" and plan["grouping"]["keys"] == [[]]
    assert [f["source-id"] for f in plan["grouping"]["sort-order"]["fields"]] == [1]
    ranges = [t["key-range"] for t in plan["tasks"]]
    assert ranges[0] is not None and ranges[-1] is None  # (the file without id bounds: last)
    unsorted = conformance.tables["unpartitioned"]["metadata_location"]
    code, _, err = _run(capsys, "plan", "--metadata-location", unsorted, "--grouping", "sort-order", "--json")
    assert code == 1 and "is unsorted" in json.loads(err)["error"]["message"]


@pytest.mark.parametrize("case_id", ["snapshots/appends-1-to-2", "mor_position_deletes/appends-after-first"])
def test_incremental_append_scans(conformance: Conformance, capsys: pytest.CaptureFixture[str], case_id: str) -> None:
    """--start-snapshot-id [--end-snapshot-id]: the tasks Java's incremental append scan plans."""
    case = conformance.case(case_id)
    location = conformance.tables[case["table"]]["metadata_location"]
    argv = ["plan", "--metadata-location", location, "--start-snapshot-id", str(case["snapshot"]["start"])]
    if case["snapshot"]["end"] is not None:
        argv += ["--end-snapshot-id", str(case["snapshot"]["end"])]
    code, out, err = _run(capsys, *argv, "--json")
    assert code == 0, err
    ours = [(f["data-file"]["file-path"], f["start"], f["length"]) for f in splits(json.loads(out))]
    assert ours == [(t["path"], t["start"], t["length"]) for combined in case["tasks"] for t in combined]

    code, _, err = _run(capsys, "plan", "--metadata-location", location, "--end-snapshot-id", "1", "--json")
    assert code == 1 and "Cannot set only end-snapshot-id" in json.loads(err)["error"]["message"]
    code, _, err = _run(capsys, *argv[:5], "--snapshot-id", "1", "--json")
    assert code == 1 and "when snapshot-id is set" in json.loads(err)["error"]["message"]


def test_limit_keeps_the_first_java_files_that_hold_the_rows(
    conformance: Conformance, capsys: pytest.CaptureFixture[str]
) -> None:
    """--limit N: the prefix of Iceberg Java's planFiles() order whose files (no residual, no deletes) hold N
    records, `cut-short` in the metrics and in the summary; more rows than the table holds: every file."""
    case = conformance.case("many_manifests/current")
    location = conformance.tables["many_manifests"]["metadata_location"]
    java = [f["path"] for f in case["files"]]
    assert len(java) > 4 and all(f["residual"] is True and not f["deletes"] for f in case["files"])
    held = np.cumsum([f["record_count"] for f in case["files"]])
    for wanted in (1, int(held[0]) + 1, int(held[2]), int(held[-1]) + 1):
        code, out, err = _run(capsys, "plan", "--metadata-location", location, "--limit", str(wanted), "--json")
        assert code == 0, err
        body = json.loads(out)
        kept = int(np.searchsorted(held, wanted)) + 1
        assert [f["data-file"]["file-path"] for f in body["files"]] == java[:kept]
        assert body["metrics"]["cut-short"] is (kept < len(java))

    code, out, err = _run(capsys, "plan", "--metadata-location", location, "--limit", "1")
    assert code == 0 and "limit        1 rows: cut short" in out, err
    code, out, err = _run(capsys, "plan", "--metadata-location", location, "--limit", str(int(held[-1]) + 1))
    assert code == 0 and "rows: whole plan" in out, err


def test_limit_with_a_residual_plans_every_java_file(
    conformance: Conformance, capsys: pytest.CaptureFixture[str]
) -> None:
    """A residual left to evaluate: how many rows a file gives is unknown, so the plan is Java's whole one."""
    case = conformance.case("unpartitioned/id-lt")
    location = conformance.tables["unpartitioned"]["metadata_location"]
    argv = ["plan", "--metadata-location", location, "--filter-json", json.dumps(case["filter"]), "--limit", "1"]
    code, out, err = _run(capsys, *argv, "--json")
    assert code == 0, err
    body = json.loads(out)
    assert [f["data-file"]["file-path"] for f in body["files"]] == [f["path"] for f in case["files"]]
    assert body["metrics"]["cut-short"] is False


@pytest.mark.parametrize(("flag", "value"), [("limit", 0), ("limit", -3), ("parallelism", 0)])
def test_limit_and_parallelism_are_refused_as_plan_refuses_them(
    conformance: Conformance, conformance_service: str, capsys: pytest.CaptureFixture[str], flag: str, value: int
) -> None:
    location = conformance.tables["many_manifests"]["metadata_location"]
    code, out, err = _run(capsys, "plan", "--metadata-location", location, f"--{flag}", str(value), "--json")
    assert code == 1 and out == ""
    error = json.loads(err)["error"]
    response = httpx.post(f"{conformance_service}/plan", json={"table": "db.many_manifests", flag: value}, timeout=60)
    assert response.status_code == error["code"] == 400
    assert error["message"] == response.json()["error"]["message"]
    assert error["message"].startswith(f"{flag}: Input should be greater than or equal to 1")


@pytest.mark.parametrize("index", range(len(PARTITION_COUNT_CASES)))
def test_parallelism_gives_spark_and_iceberg_partitions(
    conformance: Conformance, capsys: pytest.CaptureFixture[str], index: int
) -> None:
    """--parallelism P: as many tasks as Spark + Iceberg Java made partitions with that parallelism."""
    recorded = conformance.expected["partition_counts"][index]
    table, _, options = PARTITION_COUNT_CASES[index]
    location = {**conformance.tables, **conformance.expected["sized_tables"]}[table]["metadata_location"]
    argv = ["plan", "--metadata-location", location, "--parallelism", str(recorded["parallelism"])]
    argv += [f"--option={key}={value}" for key, value in options.items()]
    code, out, err = _run(capsys, *argv, "--json")
    assert code == 0, err
    assert len(json.loads(out)["tasks"]) == recorded["partitions"]


@pytest.mark.parametrize("case_id", ["identity_part/whole-partitions", "mor_position_deletes/position-deletes"])
def test_aggregates_as_spark_and_iceberg_answer(
    conformance: Conformance, capsys: pytest.CaptureFixture[str], case_id: str
) -> None:
    """`scan-planner aggregate`: Spark + Iceberg's values where Iceberg answers from metadata; where the
    rows must be read (delete files), each aggregate says why."""
    case = conformance.aggregate(case_id)
    location = conformance.tables[case["table"]]["metadata_location"]
    argv = ["aggregate", *case["aggregates"], "--metadata-location", location]
    if case["spark_filter"] is not None:
        argv += ["--filter", case["spark_filter"]]
    code, out, err = _run(capsys, *argv, "--json")
    assert code == 0, err
    body = json.loads(out)
    values = comparable(
        [plain_json(a["value"], a["type"]) for a in body["aggregates"]], [a["type"] for a in body["aggregates"]]
    )
    if case["pushed"]:
        assert body["exact"] and values == comparable(case["spark_values"], [a["type"] for a in body["aggregates"]])
    else:
        assert not body["exact"] and all("delete files" in a["reason"] for a in body["aggregates"])

    code, out, err = _run(capsys, *argv)
    assert code == 0, err
    assert all(f"  {name} = " in out for name in case["aggregates"])
    assert ("not exact" in out) != case["pushed"]


def test_aggregate_errors(conformance: Conformance, capsys: pytest.CaptureFixture[str]) -> None:
    location = conformance.tables["unpartitioned"]["metadata_location"]
    code, out, err = _run(capsys, "aggregate", "avg(id)", "--metadata-location", location, "--json")
    assert code == 1 and out == ""
    assert "Invalid aggregate 'avg(id)'" in json.loads(err)["error"]["message"]
    code, _, err = _run(capsys, "aggregate", "max(nope)", "--metadata-location", location, "--json")
    message = json.loads(err)["error"]["message"]
    assert code == 1 and message == (
        "Invalid aggregate max(nope): cannot find field 'nope'; the columns are id, category, name, ts, amount"
    )


def test_serve_says_what_to_do_when_the_demo_warehouse_cannot_be_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A home that cannot hold the demo warehouse (here: under a regular file) stops `serve` at once, with the
    reason and the settings that fix it, not a traceback."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("SCAN_PLANNER_HOME", str(blocker / "home"))
    assert main(["serve", "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert "cannot create the demo warehouse (Not a directory" in err and "SCAN_PLANNER_HOME" in err
    assert "Traceback" not in err


def test_a_demo_table_by_name_selected_and_explained_as_plan_answers(
    demo_service: str, demo_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--table without a catalog names a table of the demo warehouse (a bare `plan` plans demo.events);
    --select and --explain are /plan's select and explain: the same schema and the same reasons."""
    monkeypatch.setenv("SCAN_PLANNER_HOME", str(demo_home))
    argv = ["plan", "--table", "demo.events", "--filter", "region = 'eu' AND id < 100"]
    code, out, err = _run(capsys, *argv, "--select", "id", "--select", "amount,ts", "--explain", "--json")
    assert code == 0, err
    ours = json.loads(out)
    body = {"table": "demo.events", "filter": "region = 'eu' AND id < 100", "select": ["id", "amount", "ts"]}
    served = httpx.post(f"{demo_service}/plan", json={**body, "explain": True}, timeout=60).json()
    assert {"id", "amount", "ts"} <= {f["name"] for f in ours["schema"]["fields"]}
    assert ours["schema"] == served["schema"] and _reasons(ours["explain"]) == _reasons(served["explain"])

    code, out, err = _run(capsys, *argv, "--explain")
    assert code == 0, err
    meta = json.loads(Path(served["metadata-location"].removeprefix("file://")).read_text())
    root = meta["location"] + "/"  # the table's location, as its metadata says
    assert f"paths from   {meta['location']}\n" in out and "filter       region = 'eu' AND id < 100\n" in out
    skipped = [m for m in served["explain"]["manifests"] if not m["kept"]]
    skipped += [f for f in served["explain"]["data-files"] if not f["kept"]]
    shown = [(x.get("file-path") or x["manifest-path"]).removeprefix(root) for x in skipped[:5]]
    assert all(p.startswith(("data/", "metadata/")) for p in shown)
    assert skipped and all(f"skipped {p}: " in out for p in shown)

    code, out, err = _run(capsys, "plan", "--table", "demo.nope")
    said = err.splitlines()  # where it looked, then the error
    assert code == 1 and out == "" and said[-1].startswith("scan-planner plan: ") and "demo.nope" in said[-1]


def test_explain_says_paths_from_the_table_location_and_the_filter_as_a_string(
    conformance: Conformance, capsys: pytest.CaptureFixture[str]
) -> None:
    """day_part's files lie in one directory a day (data/ts_day=2024-01-01/...), their names alike: each is
    shown from the table's location; the filter, given as REST JSON, as the filter string it binds to (typed
    literals); the kept files before the skipped ones."""
    case = conformance.case("day_part/ts-range")
    table = conformance.tables[case["table"]]
    argv = ["plan", "--metadata-location", table["metadata_location"], "--filter-json", json.dumps(case["filter"])]
    code, out, err = _run(capsys, *argv, "--explain")
    assert code == 0, err
    after, before = (case["filter"][side]["value"].replace("T", " ") for side in ("left", "right"))
    assert f"filter       ts > TIMESTAMP '{after}' AND ts <= TIMESTAMP '{before}'\n" in out
    code, answer, err = _run(capsys, *argv, "--explain", "--json")
    assert code == 0, err
    explain = json.loads(answer)["explain"]
    root = table["location"] + "/"
    listed = [line.split(None, 2) for line in out.splitlines() if line.startswith(("  manifest ", "  file "))]
    files = sorted(explain["data-files"], key=lambda f: not f["kept"])[:20]
    expected = [
        ["manifest", "kept" if m["kept"] else "skipped", m["manifest-path"].removeprefix(root) + ": " + m["reason"]]
        for m in explain["manifests"]
    ]
    expected += [
        ["file", "kept" if f["kept"] else "skipped", f["file-path"].removeprefix(root) + ": " + f["reason"]]
        for f in files
    ]
    assert listed == expected
    assert any(f["kept"] for f in files) and any(not f["kept"] for f in files)
    assert all(line[2].startswith("data/ts_day=") for line in listed if line[0] == "file")


@pytest.mark.parametrize(
    ("path", "location", "shown"),
    [
        ("s3://b/db/t/data/x.parquet", "s3://b/db/t", "data/x.parquet"),
        ("s3://b/db/t/data/x.parquet", "s3://b/db/t/", "data/x.parquet"),
        ("s3://b/db/t2/data/x.parquet", "s3://b/db/t", "s3://b/db/t2/data/x.parquet"),  # another table's
        ("s3://elsewhere/x.parquet", "s3://b/db/t", "s3://elsewhere/x.parquet"),  # a file added from outside
    ],
)
def test_a_path_outside_the_table_location_stays_whole(path: str, location: str, shown: str) -> None:
    assert _relative(path, location) == shown


def test_a_missing_table_suggests_the_nearest(conformance: Conformance, capsys: pytest.CaptureFixture[str]) -> None:
    """As the service answers it: the catalog's nearest names (the conformance warehouse holds db.identity_part)."""
    warehouse = str(conformance.dir / "warehouse")
    code, _, err = _run(capsys, "plan", "--warehouse", warehouse, "--table", "db.identity_prt")
    assert code != 0 and "Table does not exist: db.identity_prt (did you mean db.identity_part" in err, err


def _reasons(explain: dict[str, Any]) -> dict[str, Any]:
    """An explanation without where each manifest's entries were read from (each process's own caches)."""
    manifests = [{k: v for k, v in m.items() if k != "read-from"} for m in explain["manifests"]]
    return {**explain, "manifests": manifests}

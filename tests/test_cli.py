"""`scan-planner plan` and `aggregate` end to end: plan's --json output for a filtered scan holds the files
and residuals Iceberg Java planned, aggregate's the values Spark + Iceberg answers from metadata; bad input
exits 1 with a JSON error on stderr."""

from __future__ import annotations

import json

import pytest

from planner_service.cli import main
from tests.aggregate_values import comparable, plain_json
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
    assert code == 0 and "combined tasks" in out and "skipped" in out

    code, out, err = _run(capsys, "plan", "--metadata-location", location, "--filter", "categry = 'a'")
    assert code == 1 and out == ""
    error = json.loads(err)["error"]
    assert error["code"] == 400 and "Cannot find field 'categry'" in error["message"]

    code, _, err = _run(capsys, "plan", "--metadata-location", location, "--filter-json", "{not json")
    assert code == 1 and "--filter-json is not valid JSON" in json.loads(err)["error"]["message"]

    code, _, err = _run(capsys, "plan", "--metadata-location", location + ".missing")
    assert code == 1 and json.loads(err)["error"]["code"] == 404


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

    code, _, err = _run(capsys, "plan", "--metadata-location", location, "--end-snapshot-id", "1")
    assert code == 1 and "Cannot set only end-snapshot-id" in json.loads(err)["error"]["message"]
    code, _, err = _run(capsys, *argv[:5], "--snapshot-id", "1")
    assert code == 1 and "when snapshot-id is set" in json.loads(err)["error"]["message"]


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
    code, out, err = _run(capsys, "aggregate", "avg(id)", "--metadata-location", location)
    assert code == 1 and out == ""
    assert "Invalid aggregate 'avg(id)'" in json.loads(err)["error"]["message"]
    code, _, err = _run(capsys, "aggregate", "max(nope)", "--metadata-location", location)
    assert code == 1 and "cannot find field 'nope'" in json.loads(err)["error"]["message"]

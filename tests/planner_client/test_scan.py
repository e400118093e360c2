"""Scan: one object for what a read asks the planner, and the wire bodies it becomes (the service's
PlanRequest and AggregateRequest fields, kebab-case as the REST spec names them)."""

from __future__ import annotations

import re
from dataclasses import fields
from datetime import UTC, datetime
from importlib import resources
from typing import get_type_hints

import pytest

from planner_client import Scan, ScanArgs, plan_request
from planner_client.scan import GROUPINGS
from planner_service.api.request_models import AggregateRequest, PlanRequest
from planner_service.planning.grouping import GROUPINGS as SERVICE_GROUPINGS


def test_a_scan_becomes_a_plan_request() -> None:
    scan = Scan(
        "db.t",
        filter="id < 3",
        columns=["id", "name"],
        as_of=datetime(2024, 1, 1, 0, 0, 1, tzinfo=UTC),
        options={"split-size": 1024},
        limit=10,
        case_sensitive=False,
    )
    body = scan.request(inline_task_limit=0, parallelism=8, task_estimates=False)
    assert body == {
        "table": "db.t",
        "as-of-timestamp-ms": 1704067201000,
        "select": ["id", "name"],
        "filter": "id < 3",
        "case-sensitive": False,
        "options": {"split-size": 1024},
        "limit": 10,
        "inline-task-limit": 0,
        "parallelism": 8,
        "task-estimates": False,
    }
    PlanRequest.model_validate(body)  # the service takes it as it is
    assert plan_request("db.t", limit=10, columns=["id"]) == {"table": "db.t", "select": ["id"], "limit": 10}


def test_an_aggregate_request_has_the_selection_only() -> None:
    scan = Scan("db.t", start_snapshot_id=1, end_snapshot_id=2, filter={"type": "true"}, columns=["x"], limit=3)
    body = scan.aggregate_request(["count(*)"])
    assert body == {
        "table": "db.t",
        "start-snapshot-id": 1,
        "end-snapshot-id": 2,
        "filter": {"type": "true"},
        "aggregates": ["count(*)"],
    }
    AggregateRequest.model_validate(body)
    with pytest.raises(TypeError, match="not a string"):
        scan.aggregate_request("count(*)")


def test_a_limit_of_zero_plans_the_whole_scan() -> None:
    """The service's limit is >= 1: a read of no rows plans whole and reads nothing (Spark's LIMIT 0)."""
    assert "limit" not in Scan("db.t", limit=0).request()
    with pytest.raises(ValueError, match="limit must be >= 0"):
        Scan("db.t", limit=-1)


def test_one_snapshot_choice_and_columns_as_a_list() -> None:
    with pytest.raises(ValueError, match="at most one snapshot: snapshot_id, ref"):
        Scan("db.t", snapshot_id=1, ref="main")
    with pytest.raises(TypeError, match="list of column names"):
        Scan("db.t", columns="id")
    with pytest.raises(TypeError, match="epoch milliseconds"):
        Scan("db.t", as_of="2024-01-01")  # type: ignore[arg-type]


def test_of_sets_fields_over_a_scan() -> None:
    base = Scan("db.t", filter="a = 1", options={"split-size": 1})
    changed = Scan.of(base, columns=["a"], options=None)
    assert (changed.table, changed.filter, changed.columns, dict(changed.options)) == ("db.t", "a = 1", ["a"], {})
    assert Scan.of(base) is base
    with pytest.raises(TypeError, match="unknown scan arguments \\['colums'\\]"):
        Scan.of("db.t", colums=["a"])  # type: ignore[call-arg]


def test_scan_args_name_every_field() -> None:
    """plan_and_read's and aggregate's keyword arguments are exactly the Scan's fields."""
    assert set(get_type_hints(ScanArgs)) == {f.name for f in fields(Scan)} - {"table"}


def test_a_grouping_the_service_does_not_take_is_refused_before_a_request() -> None:
    """The client's list of groupings is the service's (the /plan body's schema), checked when a Scan is made."""
    assert GROUPINGS == SERVICE_GROUPINGS
    schema = PlanRequest.model_json_schema()["properties"]["grouping"]
    assert tuple(schema["enum"]) == SERVICE_GROUPINGS
    for grouping in GROUPINGS:
        assert Scan("db.t", grouping=grouping).request().get("grouping", "none") == grouping
    with pytest.raises(ValueError, match="grouping must be one of none, partition, sort-order, not 'sort'"):
        Scan("db.t", grouping="sort")  # type: ignore[arg-type]


def test_the_explorer_offers_the_service_groupings() -> None:
    """The plan explorer's grouping choices (its page's one list, which its script reads) are the service's."""
    page = (resources.files("planner_service.ui") / "index.html").read_text()
    select = page[page.index('<select id="grouping">') : page.index("</select>", page.index('<select id="grouping">'))]
    assert tuple(re.findall(r'<option value="([^"]+)"', select)) == SERVICE_GROUPINGS
    script = (resources.files("planner_service.ui") / "explorer.js").read_text()
    assert '"sort-order"' not in script and "'sort-order'" not in script

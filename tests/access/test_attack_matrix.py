"""Attacks on a running service with a grants policy: every door asked by principals without the grant, and
nothing of the table in any answer (its name, metadata, files, statistics, credentials or plan ids); a table
a principal may not list answered exactly as one that does not exist; plan ids and plan-task tokens replayed
across principals; listings page by page; a policy reloaded under load, never seen half."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.access.policies import LISTED, MISSING, PLANNED, RULES, bearer, client, rest_path, write_settings
from tests.conformance.reference import Conformance
from tests.conftest import running_service

Door = Callable[[httpx.Client, str], httpx.Response]


@pytest.fixture(scope="module")
def service(conformance: Conformance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("attacks")
    config = write_settings(directory / "service.json", conformance.dir / "warehouse")
    with running_service("--config", str(config), "--log-level", "warning") as url:
        yield url


@pytest.fixture(scope="module")
def alices(service: str) -> dict[str, Any]:
    """What alice made: a native plan id, a REST plan id and its plan-task tokens, and the metadata location."""
    with client(service, "alice") as alice:
        loaded = alice.get(rest_path(PLANNED))
        assert loaded.status_code == 200, loaded.text
        native = alice.post("/plan", json={"table": PLANNED, "inline-task-limit": 0})
        assert native.status_code == 200, native.text
        rest = alice.post(f"{rest_path(PLANNED)}/plan", json={})
        assert rest.status_code == 200 and rest.json()["status"] == "completed", rest.text
        assert rest.json()["plan-tasks"], "page size 1: the plan has further pages"
        return {
            "metadata-location": loaded.json()["metadata-location"],
            "plan-id": native.json()["plan-id"],
            "rest-plan-id": rest.json()["plan-id"],
            "plan-task": rest.json()["plan-tasks"][0],
        }


def _doors(alices: dict[str, Any]) -> dict[str, Door]:
    """Every door that names a table, as a function of the table's name."""

    def plan_task(c: httpx.Client, t: str) -> httpx.Response:
        return c.post(f"{rest_path(t)}/tasks", json={"plan-task": alices["plan-task"]})

    delegation = {"X-Iceberg-Access-Delegation": "vended-credentials"}
    return {
        "plan": lambda c, t: c.post("/plan", json={"table": t}),
        "aggregate": lambda c, t: c.post("/aggregate", json={"table": t, "aggregates": ["count(*)", "max(id)"]}),
        "explore": lambda c, t: c.post("/explore", json={"table": t}),
        "snapshots": lambda c, t: c.get(f"/tables/{t}/snapshots"),
        "refs": lambda c, t: c.get(f"/tables/{t}/refs"),
        "history": lambda c, t: c.get(f"/tables/{t}/history"),
        "load-table": lambda c, t: c.get(rest_path(t)),
        "load-table-vended": lambda c, t: c.get(rest_path(t), headers=delegation),
        "rest-plan": lambda c, t: c.post(f"{rest_path(t)}/plan", json={}),
        "rest-poll": lambda c, t: c.get(f"{rest_path(t)}/plan/{alices['rest-plan-id']}"),
        "rest-cancel": lambda c, t: c.delete(f"{rest_path(t)}/plan/{alices['rest-plan-id']}"),
        "rest-tasks": plan_task,
        "report-metrics": lambda c, t: c.post(f"{rest_path(t)}/metrics", json=_scan_report(t)),
    }


def _scan_report(table: str) -> dict[str, Any]:
    return {
        "report-type": "scan-report",
        "table-name": table,
        "snapshot-id": 1,
        "filter": True,
        "schema-id": 0,
        "projected-field-ids": [],
        "projected-field-names": [],
        "metrics": {},
    }


def _same_as_missing(denied: httpx.Response, missing: httpx.Response, table: str) -> None:
    """Status, error type and message as for a missing table (the names swapped)."""
    assert denied.status_code == missing.status_code, (denied.text, missing.text)
    got, want = denied.json()["error"], missing.json()["error"]
    assert got["type"] == want["type"]
    unnamed = got["message"].replace(table, "T").replace(table.split(".")[1], "N")
    assert unnamed == want["message"].replace(MISSING, "T").replace(MISSING.split(".")[1], "N")


def _leaks(response: httpx.Response, secrets: list[str]) -> list[str]:
    return [s for s in secrets if s in response.text]


@pytest.mark.parametrize("principal", ["mallory", "bob", "carol"])
def test_a_table_it_may_not_list_is_a_table_that_does_not_exist(
    service: str, alices: dict[str, Any], conformance: Conformance, principal: str
) -> None:
    warehouse = str(conformance.dir / "warehouse")
    secrets = [warehouse, "p2.", ".parquet", "storage-credentials", alices["plan-id"][:40], "snapshot-id"]
    with client(service, principal) as c:
        for name, door in _doors(alices).items():
            denied, missing = door(c, PLANNED), door(c, MISSING)
            if name == "rest-cancel":  # DELETE: 204 only for one's own plan
                assert denied.status_code == 404
            _same_as_missing(denied, missing, PLANNED)
            assert not _leaks(denied, secrets), (name, denied.text)
        exists = c.head(rest_path(PLANNED))
        assert exists.status_code == c.head(rest_path(MISSING)).status_code == 404
        by_location = c.post("/plan", json={"metadata-location": alices["metadata-location"]})
        nowhere = alices["metadata-location"].replace("unpartitioned", "no_such_table")
        unknown = c.post("/plan", json={"metadata-location": nowhere})
        assert by_location.status_code == unknown.status_code == 404
        assert by_location.json()["error"]["message"].replace(alices["metadata-location"], "L") == unknown.json()[
            "error"
        ]["message"].replace(nowhere, "L")


def test_plan_ids_and_plan_tasks_do_not_cross_principals(service: str, alices: dict[str, Any]) -> None:
    plan_id = alices["plan-id"]
    with client(service, "alice") as alice:
        assert alice.get(f"/plans/{plan_id}").status_code == 200
        assert alice.get(f"/plans/{plan_id}/tasks/0").status_code == 200
        assert alice.post(f"{rest_path(PLANNED)}/tasks", json={"plan-task": alices["plan-task"]}).status_code == 200
    for principal in ("alice2", "mallory", "bob", "carol"):  # alice2 may plan the table herself
        with client(service, principal) as c:
            for path in (f"/plans/{plan_id}", f"/plans/{plan_id}/tasks/0", f"/plans/{plan_id}/tasks?start=0&end=2"):
                answer = c.get(path)
                assert answer.status_code == 404, (principal, path, answer.text)
                assert answer.json()["error"]["type"] in ("NoSuchPlanIdException", "NoSuchTableException")
                assert ".parquet" not in answer.text
    with client(service, "alice2") as alice2:
        task = alice2.post(f"{rest_path(PLANNED)}/tasks", json={"plan-task": alices["plan-task"]})
        assert task.status_code == 404 and task.json()["error"]["type"] == "NoSuchPlanTaskException"
        poll = alice2.get(f"{rest_path(PLANNED)}/plan/{alices['rest-plan-id']}")
        assert poll.status_code == 404 and poll.json()["error"]["type"] == "NoSuchPlanIdException"
        assert alice2.delete(f"{rest_path(PLANNED)}/plan/{alices['rest-plan-id']}").status_code == 404
        own = alice2.post("/plan", json={"table": PLANNED, "inline-task-limit": 0}).json()["plan-id"]
        assert own != plan_id and alice2.get(f"/plans/{own}").status_code == 200


def test_listing_without_the_privilege_is_forbidden_and_with_it_answered(service: str, alices: dict[str, Any]) -> None:
    with client(service, "bob") as bob:  # list only
        assert bob.head(rest_path(LISTED)).status_code == 204
        for response in (bob.get(rest_path(LISTED)), bob.post("/plan", json={"table": LISTED})):
            assert response.status_code == 403, response.text
            error = response.json()["error"]
            assert error["type"] == "ForbiddenException" and "Principal 'bob' is not authorized" in error["message"]
            assert "metadata" not in response.text.replace("read-metadata", "")
    with client(service, "carol") as carol:  # read-metadata: loads and aggregates, may not plan nor explore
        assert carol.get(rest_path(LISTED)).status_code == 200
        assert carol.get(f"/tables/{LISTED}/snapshots").status_code == 200
        assert carol.post("/aggregate", json={"table": LISTED, "aggregates": ["count(*)"]}).status_code == 200
        for refused in (
            carol.post("/explore", json={"table": LISTED}),  # (it lists the plan's files: a plan)
            carol.post("/plan", json={"table": LISTED}),
            carol.post(f"{rest_path(LISTED)}/plan", json={}),
        ):
            assert refused.status_code == 403 and refused.json()["error"]["type"] == "ForbiddenException"


def test_listings_page_by_page_show_only_what_it_may_list(service: str, conformance: Conformance) -> None:
    with client(service, "mallory") as mallory:
        assert mallory.get("/v1/namespaces").json() == {"namespaces": []}
        assert mallory.get("/v1/namespaces/db").status_code == 404
        assert mallory.head("/v1/namespaces/db").status_code == 404
        assert mallory.get("/v1/namespaces/db/tables").json()["error"]["type"] == "NoSuchNamespaceException"
    with client(service, "alice") as alice:
        assert alice.get("/v1/namespaces").json() == {"namespaces": [["db"]]}
        seen, token = [], None
        for _ in range(10):
            params = {"pageSize": "1", **({"pageToken": token} if token else {})}
            page = alice.get("/v1/namespaces/db/tables", params=params).json()
            seen += [i["name"] for i in page["identifiers"]]
            token = page.get("next-page-token")
            if not token:
                break
        assert seen == [PLANNED.split(".")[1]]
    with httpx.Client(base_url=service, timeout=60, headers=bearer("alice")) as alice:
        names = [i["name"] for i in alice.get("/v1/namespaces/db/tables").json()["identifiers"]]
        assert names == ["unpartitioned"]


def test_metrics_need_their_own_privilege(service: str) -> None:
    for principal in ("alice", "mallory", "carol"):
        with client(service, principal) as c:
            answer = c.get("/metrics")
            assert answer.status_code == 403 and "scan_planner" not in answer.text
    with client(service, "ops") as ops:
        assert ops.get("/metrics").status_code == 200
        assert ops.post("/plan", json={"table": PLANNED}).status_code == 404  # metrics is not a table grant


def test_the_explorer_page_for_a_denied_table_shows_nothing_of_it(service: str) -> None:
    """The page itself is open and holds no data; what it asks for a denied table is a missing table."""
    page = httpx.get(f"{service}/ui", params={"table": PLANNED}, timeout=30)
    assert page.status_code == 200 and PLANNED not in page.text
    with client(service, "mallory") as mallory:
        asked = mallory.post("/explore", json={"table": PLANNED, "filter": "id > 3"})
        assert asked.status_code == 404 and asked.json()["error"]["type"] == "NoSuchTableException"


def test_a_policy_reloaded_under_load_is_never_seen_half(conformance: Conformance, tmp_path: Path) -> None:
    """Two policies that each let alice list exactly one table; while the file flips between them, every
    listing shows exactly one of the two tables, never both or none, and no request fails."""
    first = [{"principals": ["alice"], "tables": [PLANNED], "privileges": ["plan"]}]
    second = [{"principals": ["alice"], "tables": [LISTED], "privileges": ["plan"]}]
    config = write_settings(tmp_path / "service.json", conformance.dir / "warehouse", first)
    seen: set[tuple[str, ...]] = set()
    failures: list[str] = []
    stop = threading.Event()
    with running_service("--config", str(config), "--log-level", "warning") as url:

        def list_tables() -> None:
            with client(url, "alice") as alice:
                while not stop.is_set():
                    answer = alice.get("/v1/namespaces/db/tables")
                    if answer.status_code != 200:
                        failures.append(answer.text)
                        continue
                    seen.add(tuple(sorted(i["name"] for i in answer.json()["identifiers"])))

        workers = [threading.Thread(target=list_tables) for _ in range(3)]
        for worker in workers:
            worker.start()
        try:
            for flip in range(12):
                write_settings(config, conformance.dir / "warehouse", second if flip % 2 == 0 else first)
                stop.wait(0.5)
        finally:
            stop.set()
            for worker in workers:
                worker.join(30)
    assert not failures, failures[:3]
    assert seen == {("unpartitioned",), ("identity_part",)}, seen


def test_a_malformed_policy_is_refused_at_start_and_kept_out_on_reload(
    conformance: Conformance, tmp_path: Path
) -> None:
    bad = [{"principals": ["alice"], "tables": [PLANNED], "privileges": ["plan", "write"]}]
    config = write_settings(tmp_path / "bad.json", conformance.dir / "warehouse", bad)
    with pytest.raises(RuntimeError) as failed, running_service("--config", str(config)):
        pass
    assert "access_rules" in str(failed.value) and "privileges" in str(failed.value)
    config = write_settings(tmp_path / "service.json", conformance.dir / "warehouse")
    with running_service("--config", str(config), "--log-level", "warning") as url, client(url, "alice") as alice:
        assert alice.post("/plan", json={"table": PLANNED}).status_code == 200
        write_settings(config, conformance.dir / "warehouse", [{"principals": ["alice"], "privileges": ["nope"]}])
        stop = threading.Event()
        stop.wait(1.5)
        assert alice.post("/plan", json={"table": PLANNED}).status_code == 200  # the policy in force kept
        config.write_text(json.dumps({"warehouse": "x", "access_rules": RULES, "unknown_setting": 1}))
        stop.wait(1.5)
        assert alice.post("/plan", json={"table": PLANNED}).status_code == 200

"""Attacks on read restrictions, at every door of a real service: a restricted principal must find no hidden
value (a masked column's raw values, as text or as the hex of a bound) and no path of a file none of whose
rows it may see, in any answer, page, error or plan, whatever it asks; a mask stays on a renamed column or
refuses the table; a partition evolution under the mask changes nothing; principals restricted
differently never share an answer; a table whose file paths name a masked column's values (Hive-style
partition directories) is not planned for the principal at all. A SQL catalog written by PyIceberg, one
file per partition."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from tests.conftest import running_service

TOKENS = {"alice": "alice-token", "dave": "dave-token", "bob": "bob-token"}
TABLE, REST = "db.people", "/v1/namespaces/db/tables/people"
TIERS = ("GOLDTIER", "SILVERTIER")  # a masked identity-partition column's raw values
MASKS = {"tier": "mask-alphanum", "ssn": "show-last-4"}
RULES: list[dict[str, Any]] = [
    {"principals": ["alice"], "tables": [TABLE], "privileges": ["plan"], "row_filter": "region = 'eu'",
     "column_masks": MASKS},
    {"principals": ["dave"], "tables": [TABLE], "privileges": ["plan"], "row_filter": "region = 'us'",
     "column_masks": MASKS},
    {"principals": ["bob"], "tables": [TABLE], "privileges": ["plan"]},
]  # fmt: skip
ENFORCING = {"X-Iceberg-Client-Capabilities": "read-restrictions"}


def _ssn(i: int) -> str:
    return f"SSN{i:03d}-77-{i:04d}"


@pytest.fixture
def lake(tmp_path: Path) -> Iterator[dict[str, Any]]:
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    catalog = SqlCatalog("lake", uri=uri, warehouse=f"file://{tmp_path / 'warehouse'}")
    catalog.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "region", StringType(), required=False),
        NestedField(3, "tier", StringType(), required=False),
        NestedField(4, "ssn", StringType(), required=False),
    )
    spec = PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"),
        PartitionField(source_id=3, field_id=1001, transform=IdentityTransform(), name="tier"),
    )
    # paths that do not name partition values (a masked partition column's would be in them: see below)
    unnamed = {"write.object-storage.enabled": "true", "write.object-storage.partitioned-paths": "false"}
    table = catalog.create_table(TABLE, schema=schema, partition_spec=spec, properties=unnamed)
    ids = list(range(40))
    rows = {
        "id": ids,
        "region": [("eu", "us")[i % 2] for i in ids],
        "tier": [TIERS[(i // 2) % 2] for i in ids],
        "ssn": [_ssn(i) for i in ids],
    }
    table.append(pa.Table.from_pydict(rows, schema=schema.as_arrow()))
    paths = {task.file.file_path: task.file.partition for task in table.scan().plan_files()}
    config = tmp_path / "service.json"
    settings = {
        "catalog_uri": uri,
        "catalog_name": "lake",
        "allowed_roots": [str(tmp_path / "warehouse")],
        "auth_tokens": TOKENS,
        "access_rules": RULES,
        "access_reload_seconds": 0.2,
    }
    config.write_text(json.dumps(settings))
    with running_service("--config", str(config), "--log-level", "warning") as url:
        yield {"catalog": catalog, "url": url, "paths": paths, "config": config, "settings": settings}


def _secrets(lake: dict[str, Any], visible_region: str) -> list[str]:
    """What a principal restricted to `visible_region` must never be told: the raw masked values (text and
    upper-case hex, as bounds are sent), the paths of the files of the other region."""
    raw = [*TIERS, *(_ssn(i) for i in range(40))]
    hidden = [p for p, partition in lake["paths"].items() if partition[0] != visible_region]
    assert len(hidden) == 2
    return [*raw, *(v.encode().hex().upper() for v in raw), *hidden, *(p.split("/")[-1] for p in hidden)]


def _answers(client: httpx.Client, headers: dict[str, str]) -> list[httpx.Response]:
    """Every door a restricted principal may knock at, with filters that probe hidden values."""
    out: list[httpx.Response] = []
    probes: list[Any] = [
        None,
        "region = 'us'",  # the hidden rows, asked for
        f"tier = '{TIERS[0]}'",  # a masked column's raw value, probed
        f"ssn = '{_ssn(3)}'",
        "ssn > 'A' AND tier IS NOT NULL",
        "nope = 1",  # an error: does it list anything hidden?
        {"type": "eq", "term": "tier", "value": 5},
    ]
    for probe in probes:
        body: dict[str, Any] = {"table": TABLE} | ({} if probe is None else {"filter": probe})
        out.append(plan := client.post("/plan", json=body, headers=headers))
        by_id = client.post("/plan", json={**body, "inline-task-limit": 0}, headers=headers)
        out.append(by_id)
        if by_id.status_code == 200:
            plan_id = by_id.json()["plan-id"]
            out.append(client.get(f"/plans/{plan_id}", headers=headers))
            out += [client.get(f"/plans/{plan_id}/tasks/{i}", headers=headers) for i in range(3)]
        assert plan.status_code in (200, 400), plan.text
        rest_body = {"stats-fields": ["ssn", "tier"]} | ({"filter": probe} if isinstance(probe, dict) else {})
        out.append(rest := client.post(f"{REST}/plan", json=rest_body, headers=headers))
        for token in rest.json().get("plan-tasks", []) if rest.status_code == 200 else []:
            out.append(client.post(f"{REST}/tasks", json={"plan-task": token}, headers=headers))
        aggregates = ["count(*)", "min(ssn)", "max(tier)", "count(ssn)", "min(id)"]
        out.append(client.post("/aggregate", json={**body, "aggregates": aggregates}, headers=headers))
        out.append(client.post("/explore", json=body, headers=headers))
        out.append(client.post("/plan", json={**body, "explain": True}, headers=headers))
    out.append(client.get(REST, headers=headers))
    out.append(client.get("/v1/namespaces/db/tables", headers=headers))
    return out


@pytest.mark.parametrize(("principal", "region"), [("alice", "eu"), ("dave", "us")])
def test_nothing_hidden_reaches_a_restricted_principal_at_any_door(
    lake: dict[str, Any], principal: str, region: str
) -> None:
    headers = {"Authorization": f"Bearer {TOKENS[principal]}", **ENFORCING}
    secrets = _secrets(lake, region)
    with httpx.Client(base_url=lake["url"], timeout=60) as client:
        answers = _answers(client, headers)
        for answer in answers:
            assert answer.status_code < 500, answer.text
            text = answer.text
            for asked in (TIERS[0], _ssn(3)):  # the principal's own probes, echoed as its filter (JSON, text)
                text = text.replace(f'"value":"{asked}"', "").replace(f"'{asked}'", "")
            leaked = [s for s in secrets if s in text]
            at = text.find(leaked[0]) if leaked else 0
            assert not leaked, (
                answer.request.method,
                answer.request.url,
                leaked,
                answer.text[max(0, at - 300) : at + 100],
            )
        planned = client.post("/plan", json={"table": TABLE}, headers=headers).json()
        files = [f["data-file"] for f in planned["files"]]
        assert len(files) == 2 and {f["partition"][0] for f in files} == {region}  # its region's files alone
        assert {f["partition"][1] for f in files} == {"xxxxxxxx", "xxxxxxxxxx"}  # the tiers, masked
        assert planned["non-null-field-ids"] == [1]  # the required column: null counts count hidden rows
        refused = [a for a in answers if a.status_code == 403]
        assert refused and all("explain" in a.json()["error"]["message"] for a in refused)
        # an unrestricted principal is told all of it (the secrets are real: the test can fail)
        bob = client.post("/plan", json={"table": TABLE}, headers={"Authorization": f"Bearer {TOKENS['bob']}"})
        rest = client.post(
            f"{REST}/plan", json={"stats-fields": ["ssn"]}, headers={"Authorization": "Bearer bob-token"}
        )
        told = bob.text + rest.text
        assert bob.json()["non-null-field-ids"] == [1, 2, 3, 4]
        assert all(t in told for t in TIERS) and all(p in told for p in lake["paths"])
        assert _ssn(0).encode().hex().upper() in told


def test_a_mask_on_a_renamed_column_refuses_the_table(lake: dict[str, Any]) -> None:
    headers = {"Authorization": f"Bearer {TOKENS['alice']}", **ENFORCING}
    with httpx.Client(base_url=lake["url"], timeout=60) as client:
        before = client.get(REST, headers=headers).json()["read-restrictions"]["required-column-projections"]
        planned = client.post("/plan", json={"table": TABLE, "inline-task-limit": 0}, headers=headers).json()
        with lake["catalog"].load_table(TABLE).update_schema() as update:
            update.rename_column("ssn", "national_id")
        # the rule masks 'ssn' by name: the table no longer has it, so the table is refused, never unmasked
        for answer in (
            client.get(REST, headers=headers),
            client.post("/plan", json={"table": TABLE}, headers=headers),
        ):
            assert answer.status_code == 403, answer.text
            assert "access rule 1" in answer.text.lower() and "'ssn'" in answer.text
        # a plan id of the version before the rename binds the rule to that version, as when it was made
        task = client.get(f"/plans/{planned['plan-id']}/tasks/0", headers=headers)
        assert task.status_code == 200
        assert task.json()["plan"]["read-restrictions"]["required-column-projections"] == before
        settings = {**lake["settings"]}
        settings["access_rules"] = [
            {**RULES[0], "column_masks": {"tier": "mask-alphanum", "national_id": "show-last-4"}},
            *RULES[1:],
        ]
        lake["config"].write_text(json.dumps(settings))
        after = _wait_for(lambda: client.get(REST, headers=headers), 200)
        assert after.json()["read-restrictions"]["required-column-projections"] == before  # the same field ids
        answer = client.post("/plan", json={"table": TABLE, "filter": "national_id = 'x'"}, headers=headers)
        assert answer.status_code == 200 and not any(_ssn(i) in answer.text for i in range(40))


def test_partition_evolution_under_a_mask_keeps_the_values_masked(lake: dict[str, Any]) -> None:
    table = lake["catalog"].load_table(TABLE)
    with table.update_spec() as update:
        update.add_identity("ssn")  # a masked column becomes a partition source
    table = lake["catalog"].load_table(TABLE)
    schema = table.schema().as_arrow()
    table.append(pa.Table.from_pylist([{"id": 99, "region": "eu", "tier": TIERS[0], "ssn": _ssn(99)}], schema=schema))
    headers = {"Authorization": f"Bearer {TOKENS['alice']}", **ENFORCING}
    with httpx.Client(base_url=lake["url"], timeout=60) as client:
        planned = client.post("/plan", json={"table": TABLE}, headers=headers)
        assert planned.status_code == 200
        assert _ssn(99) not in planned.text and TIERS[0] not in planned.text
        new = [f["data-file"] for f in planned.json()["files"] if f["data-file"]["spec-id"] == 1]
        assert len(new) == 1 and new[0]["partition"][2] == "xxxnnn-nn-0099"  # show-last-4 of SSN099-77-0099


def test_principals_restricted_differently_never_share_an_answer(lake: dict[str, Any]) -> None:
    with httpx.Client(base_url=lake["url"], timeout=60) as client:
        answers: dict[str, list[set[str]]] = {}
        for name in ("alice", "dave", "bob", "alice"):
            headers = {"Authorization": f"Bearer {TOKENS[name]}", **ENFORCING}
            body = client.post("/plan", json={"table": TABLE}, headers=headers).json()
            answers.setdefault(name, []).append({f["data-file"]["file-path"] for f in body["files"]})
        assert answers["alice"][0] == answers["alice"][1]
        assert not answers["alice"][0] & answers["dave"][0]
        assert answers["bob"][0] == answers["alice"][0] | answers["dave"][0]


def _wait_for(ask: Callable[[], httpx.Response], status: int, seconds: float = 15) -> httpx.Response:
    deadline = time.monotonic() + seconds
    while (answer := ask()).status_code != status and time.monotonic() < deadline:
        time.sleep(0.2)
    assert answer.status_code == status, answer.text
    return answer


def test_files_whose_paths_name_a_masked_value_are_never_planned(lake: dict[str, Any]) -> None:
    table = lake["catalog"].load_table(TABLE)
    with table.transaction() as transaction:  # Iceberg's default layout from now on: .../tier=GOLDTIER/...
        transaction.set_properties({"write.object-storage.enabled": "false"})
    table = lake["catalog"].load_table(TABLE)
    row = {"id": 100, "region": "eu", "tier": TIERS[1], "ssn": _ssn(100)}
    table.append(pa.Table.from_pylist([row], schema=table.schema().as_arrow()))
    assert any(f"tier={TIERS[1]}/" in t.file.file_path for t in table.scan().plan_files())
    headers = {"Authorization": f"Bearer {TOKENS['alice']}", **ENFORCING}
    with httpx.Client(base_url=lake["url"], timeout=60) as client:
        for answer in (
            client.post("/plan", json={"table": TABLE}, headers=headers),
            client.post(f"{REST}/plan", json={}, headers=headers),
        ):
            assert answer.status_code == 403, answer.text
            assert "named by the values of masked column(s) tier" in answer.text
            assert not any(t in answer.text for t in TIERS)
        # where the row filter leaves none of those files, the plan is made
        dave = {"Authorization": f"Bearer {TOKENS['dave']}", **ENFORCING}
        assert client.post("/plan", json={"table": TABLE}, headers=dave).status_code == 200


def test_a_policy_changed_under_load_never_mixes_restrictions(lake: dict[str, Any]) -> None:
    """Plans asked from four threads while the rule flips between the regions every 0.3 s: each answer is
    wholly under one restriction, the one it names (files of that region alone), never a mix or none."""
    headers = {"Authorization": f"Bearer {TOKENS['alice']}", **ENFORCING}
    regions: dict[str, str] = {p: partition[0] for p, partition in lake["paths"].items()}
    seen: list[tuple[str, set[str]]] = []
    failed: list[BaseException] = []
    stop = threading.Event()

    def ask() -> None:
        try:
            asking()
        except BaseException as exc:  # (seen by the test's thread below)
            failed.append(exc)

    def asking() -> None:
        with httpx.Client(base_url=lake["url"], timeout=60, headers=headers) as client:
            while not stop.is_set():
                answer = client.post("/plan", json={"table": TABLE})
                assert answer.status_code == 200, answer.text
                body = answer.json()
                region = body["read-restrictions"]["required-row-filter"]["value"]
                seen.append((region, {regions[f["data-file"]["file-path"]] for f in body["files"]}))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        for k in range(10):
            rule = {**RULES[0], "row_filter": f"region = '{('us', 'eu')[k % 2]}'"}
            lake["config"].write_text(json.dumps({**lake["settings"], "access_rules": [rule, *RULES[1:]]}))
            time.sleep(0.3)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not failed, failed[0]
    assert len(seen) > 20 and {region for region, _ in seen} == {"eu", "us"}
    assert all(files == {region} for region, files in seen)

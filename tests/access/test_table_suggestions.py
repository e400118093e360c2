"""A missing table's 404 suggests the nearest names, drawn only from the tables the caller may list: a table
the caller may not list is answered, suggestions and all, byte for byte as the same name is where no catalog
has it, and it is never suggested to a caller that may not list it. Two running services over tables written
by Iceberg Java: one where db.event_log and secret.ledger exist (pat may list neither), one where they do not."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.access.policies import rest_path
from tests.conformance.reference import Conformance
from tests.conftest import running_service

VISIBLE, HIDDEN, HIDDEN_NAMESPACE = "db.events", "db.event_log", "secret.ledger"
TOKENS = {"pat": "pat-token", "olga": "olga-token", "mallory": "mallory-token"}
RULES = [
    {"principals": ["pat"], "tables": [VISIBLE], "privileges": ["plan"]},  # lists db.events alone
    {"principals": ["olga"], "tables": ["*"], "privileges": ["plan"]},  # lists every table
]
Door = Callable[[httpx.Client, str], httpx.Response]
DOORS: dict[str, Door] = {  # every door that loads a table by name
    "plan": lambda c, t: c.post("/plan", json={"table": t}),
    "aggregate": lambda c, t: c.post("/aggregate", json={"table": t, "aggregates": ["count(*)"]}),
    "explore": lambda c, t: c.post("/explore", json={"table": t}),
    "snapshots": lambda c, t: c.get(f"/tables/{t}/snapshots"),
    "load-table": lambda c, t: c.get(rest_path(t)),
    "rest-plan": lambda c, t: c.post(f"{rest_path(t)}/plan", json={}),
}


def _service(directory: Path, tables: dict[str, str]) -> list[str]:
    config = directory / "service.json"
    config.write_text(json.dumps({"tables": tables, "auth_tokens": TOKENS, "access_rules": RULES}))
    return ["--config", str(config), "--log-level", "warning"]


@pytest.fixture(scope="module")
def services(conformance: Conformance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(the service where the hidden tables exist, the one where they do not); db.events is in both."""
    location = {name: conformance.tables[name]["metadata_location"] for name in ("unpartitioned", "identity_part")}
    visible = {VISIBLE: location["unpartitioned"]}
    hidden = {HIDDEN: location["identity_part"], HIDDEN_NAMESPACE: location["identity_part"]}
    with (
        running_service(*_service(tmp_path_factory.mktemp("with-hidden"), {**visible, **hidden})) as with_hidden,
        running_service(*_service(tmp_path_factory.mktemp("without"), visible)) as without,
    ):
        yield with_hidden, without


def _as(url: str, principal: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKENS[principal]}"}, timeout=60)


@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_table_it_may_not_list_is_answered_byte_for_byte_as_one_that_is_not_there(
    services: tuple[str, str], door: str
) -> None:
    with_hidden, without = services
    with _as(with_hidden, "pat") as denied_to_pat, _as(without, "pat") as absent_for_pat:
        denied, absent = DOORS[door](denied_to_pat, HIDDEN), DOORS[door](absent_for_pat, HIDDEN)
    assert denied.status_code == absent.status_code == 404
    assert denied.content == absent.content
    # pat may list db.events alone: the nearest of what it may list
    assert absent.json()["error"] == {
        "message": f"Table does not exist: {HIDDEN} (did you mean {VISIBLE}?)",
        "type": "NoSuchTableException",
        "code": 404,
    }


def test_a_table_it_may_not_list_is_never_suggested(services: tuple[str, str]) -> None:
    with_hidden, _ = services
    typo = HIDDEN[:-1]  # db.event_lo: in no catalog
    with _as(with_hidden, "pat") as pat, _as(with_hidden, "olga") as olga, _as(with_hidden, "mallory") as mallory:
        to_pat, to_olga = pat.post("/plan", json={"table": typo}), olga.post("/plan", json={"table": typo})
        to_mallory = mallory.post("/plan", json={"table": typo})
        namespace_typo = pat.post("/plan", json={"table": "secrett.ledger"})
    assert to_pat.json()["error"]["message"] == f"Table does not exist: {typo} (did you mean {VISIBLE}?)"
    assert to_olga.json()["error"]["message"] == f"Table does not exist: {typo} (did you mean {HIDDEN} or {VISIBLE}?)"
    assert to_mallory.json()["error"]["message"] == f"Table does not exist: {typo}"  # it may list nothing
    assert namespace_typo.json()["error"]["message"] == "Table does not exist: secrett.ledger"
    with _as(with_hidden, "olga") as olga:
        assert olga.post("/plan", json={"table": "secrett.ledger"}).json()["error"]["message"] == (
            f"Table does not exist: secrett.ledger (did you mean {HIDDEN_NAMESPACE}?)"
        )


def test_a_namespace_it_sees_no_table_of_is_never_suggested(services: tuple[str, str]) -> None:
    with_hidden, without = services
    for url in (with_hidden, without):
        with _as(url, "pat") as pat:
            hidden = pat.get("/v1/namespaces/secrett")
            near = pat.get("/v1/namespaces/dbb/tables")
        assert hidden.status_code == near.status_code == 404
        assert hidden.json()["error"]["message"] == "Namespace does not exist: secrett"
        assert near.json()["error"]["message"] == "Namespace does not exist: dbb (did you mean db?)"
    with _as(with_hidden, "pat") as in_one, _as(without, "pat") as in_other:
        assert in_one.get("/v1/namespaces/secret").content == in_other.get("/v1/namespaces/secret").content
    with _as(with_hidden, "olga") as olga:
        seen = olga.get("/v1/namespaces/secrett").json()["error"]["message"]
        assert seen == "Namespace does not exist: secrett (did you mean secret?)"

"""A listing under a grants policy filters every namespace's tables by what the caller may list: the catalog's
tables are listed once a second for all requests, not once per request (a catalog of many namespaces was
listed whole for each HEAD of a namespace)."""

from __future__ import annotations

from typing import Any

import pytest

from planner_service.access.policy import AccessRule, Policy
from planner_service.access.principals import Principal
from planner_service.access.table_access import TableAccess
from planner_service.api.rest_catalog import _namespaces
from planner_service.service.runtime import Runtime
from planner_service.settings import Settings
from tests.conformance.reference import Conformance


def test_listings_under_a_policy_list_the_catalog_once_a_second(
    conformance: Conformance, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = Runtime.from_settings(Settings(warehouse=str(conformance.dir / "warehouse")), b"k" * 32)
    source = runtime.catalog.sources[0]
    calls: list[Any] = []
    listed = source.list_tables

    def counted(namespace: tuple[str, ...]) -> Any:
        calls.append(namespace)
        return listed(namespace)

    monkeypatch.setattr(source, "list_tables", counted)
    rule = AccessRule.model_validate({"principals": ["alice"], "tables": ["db.unpartitioned"], "privileges": ["list"]})
    policy = Policy([rule])
    access = TableAccess(Principal("alice", "static"), policy)
    try:
        answers = [_namespaces(runtime, access) for _ in range(50)]
    finally:
        runtime.close()
    assert answers[0] == [("db",)] and all(a == answers[0] for a in answers)
    assert 1 <= len(calls) <= 2 * len(runtime.catalog.list_namespaces())  # (at most a refresh within the run)

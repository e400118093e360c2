"""The grants policy's rules (access/policy.py): first match decides, privileges imply their lesser ones, an
empty rule denies, metrics is the service's, globs over names, groups and locations, and nothing but what a
rule gives once the policy exists."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from planner_service.access.policy import AccessRule, Policy, Privilege, location_pattern
from planner_service.access.principals import Principal
from planner_service.settings import Settings

ALICE = Principal("alice", "static")
BOB = Principal("bob", "oidc", frozenset({"analysts"}))
CAROL = Principal("carol", "client", frozenset({"etl", "analysts"}))


def _policy(*rules: dict[str, object]) -> Policy:
    return Policy([AccessRule.model_validate(rule) for rule in rules])


def test_the_first_matching_rule_decides() -> None:
    policy = _policy(
        {"groups": ["analysts"], "tables": ["sales.secret_*"], "privileges": []},
        {"groups": ["analysts"], "namespaces": ["sales"], "privileges": ["read-metadata"]},
        {"principals": ["carol"], "namespaces": ["sales"], "privileges": ["plan", "credentials"]},
    )
    assert policy.on_table(BOB, ("sales",), "secret_pay") == frozenset()
    assert policy.on_table(BOB, ("sales",), "orders") == {Privilege.READ_METADATA, Privilege.LIST}
    assert policy.on_table(CAROL, ("sales",), "orders") == {Privilege.READ_METADATA, Privilege.LIST}  # analysts first
    assert policy.on_table(ALICE, ("sales",), "orders") == frozenset()  # no rule: nothing
    assert policy.on_table(BOB, ("sales", "eu"), "orders") == frozenset()  # `sales` is not `sales.*`


def test_privileges_imply_the_lesser_ones() -> None:
    policy = _policy(
        {"principals": ["alice"], "tables": ["a.t"], "privileges": ["plan"]},
        {"principals": ["alice"], "tables": ["a.u"], "privileges": ["credentials"]},
        {"principals": ["alice"], "tables": ["a.v"], "privileges": ["list"]},
    )
    everything = {Privilege.PLAN, Privilege.READ_METADATA, Privilege.LIST}
    assert policy.on_table(ALICE, ("a",), "t") == everything
    assert policy.on_table(ALICE, ("a",), "u") == {Privilege.CREDENTIALS, Privilege.READ_METADATA, Privilege.LIST}
    assert policy.on_table(ALICE, ("a",), "v") == {Privilege.LIST}


def test_metrics_is_the_services_and_passed_over_for_tables() -> None:
    policy = _policy(
        {"principals": ["*"], "privileges": ["metrics"]},
        {"principals": ["alice"], "privileges": ["plan"]},
    )
    assert policy.on_table(ALICE, ("a",), "t") == {Privilege.PLAN, Privilege.READ_METADATA, Privilege.LIST}
    assert policy.on_service(ALICE) == {Privilege.METRICS} and policy.on_service(BOB) == {Privilege.METRICS}
    denied = _policy({"principals": ["bob"], "privileges": []}, {"principals": ["*"], "privileges": ["metrics"]})
    assert denied.on_service(BOB) == frozenset() and denied.on_service(ALICE) == {Privilege.METRICS}
    with pytest.raises(ValidationError, match="privilege of the service"):
        AccessRule.model_validate({"principals": ["a"], "tables": ["x.y"], "privileges": ["metrics"]})


def test_locations_never_get_credentials() -> None:
    policy = _policy({"principals": ["alice"], "locations": ["s3://lake/a/*"], "privileges": ["plan", "credentials"]})
    assert policy.on_location(ALICE, "s3://lake/a/t/metadata/v1.metadata.json") == {
        Privilege.PLAN,
        Privilege.READ_METADATA,
        Privilege.LIST,
    }
    assert policy.on_location(ALICE, "s3://lake/b/t/metadata/v1.metadata.json") == frozenset()
    assert policy.on_table(ALICE, ("a",), "t") == frozenset()  # a location rule names no table


def test_rules_are_checked_as_settings() -> None:
    for bad in (
        {"tables": ["a.t"], "privileges": ["plan"]},  # nobody
        {"principals": ["a"], "privileges": ["write"]},  # no such privilege
        {"principals": ["a"], "privileges": ["plan"], "table": ["typo"]},  # an unknown key
        {"principals": ["a"]},  # no privileges given at all
    ):
        with pytest.raises(ValidationError):
            Settings.model_validate({"access_rules": [bad]})
    assert Settings(access_rules=[]).access_rules == []  # a policy with no rule: nothing is granted
    assert Settings().access_rules is None  # no policy


def test_decisions_are_kept_per_caller_and_table() -> None:
    policy = _policy({"principals": ["alice"], "tables": ["a.*"], "privileges": ["plan"]})
    for _ in range(3):
        assert Privilege.PLAN in policy.on_table(ALICE, ("a",), "t")
        assert policy.on_table(Principal("alice", "oidc", frozenset({"x"})), ("b",), "t") == frozenset()
    assert Privilege.PLAN not in policy.on_table(BOB, ("a",), "t")


def test_location_patterns_are_written_as_the_locations_read(tmp_path: Path) -> None:
    """Patterns are resolved as requested locations are (the service resolves those: io/roots.Roots.resolve):
    one URI form per store, local directories normalised and their links followed, up to the first glob."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert location_pattern("*") == "*"
    assert location_pattern("s3a://lake/db/t*/*") == "s3://lake/db/t*/*"
    assert location_pattern(f"{tmp_path}/link/../link/db/*") == f"file://{real}/db/*"
    assert location_pattern(f"file://{tmp_path}//link/t?/*") == f"file://{real}/t?/*"
    for bad in ("db/*", "relative/path", "s3://lake/../other/*", "ftp://host/x/*"):
        with pytest.raises(ValueError):
            location_pattern(bad)
    with pytest.raises(ValidationError, match="not absolute"):
        AccessRule.model_validate({"principals": ["a"], "locations": ["db/*"], "privileges": ["plan"]})


def test_a_rule_naming_a_table_caps_its_locations() -> None:
    policy = _policy(
        {"principals": ["*"], "tables": ["a.secret"], "privileges": []},
        {"principals": ["*"], "namespaces": ["b"], "privileges": ["list"]},
        {"principals": ["*"], "privileges": ["plan"]},
    )
    assert policy.by_name(ALICE, ("a",), "secret") == frozenset()  # denied by name
    assert policy.by_name(ALICE, ("b",), "t") == frozenset({Privilege.LIST})
    assert policy.by_name(ALICE, ("a",), "other") is None  # decided by the rule for everything: no cap
    assert policy.by_name(BOB, ("c",), "t") is None


def test_every_matcher_given_must_match_as_in_trino() -> None:
    """`principals` and `groups` both given: the caller must match both (Trino ANDs `user` and `group`);
    `namespaces` and `tables` both given: the table must match both; a table pattern's namespace and name are
    matched apart, so `*` never crosses from one into the other."""
    policy = _policy(
        {
            "principals": ["carol"],
            "groups": ["etl"],
            "namespaces": ["sales"],
            "tables": ["*.orders"],
            "privileges": ["plan"],
        },
        {"principals": ["*"], "tables": ["sales.*"], "privileges": ["list"]},
        {"principals": ["*"], "tables": ["ops.*.*"], "privileges": ["read-metadata"]},
    )
    plan = {Privilege.PLAN, Privilege.READ_METADATA, Privilege.LIST}
    assert policy.on_table(CAROL, ("sales",), "orders") == plan  # carol, in etl, sales, orders: all match
    assert policy.on_table(BOB, ("sales",), "orders") == {Privilege.LIST}  # not carol: the next rule
    assert policy.on_table(Principal("carol", "static"), ("sales",), "orders") == {Privilege.LIST}  # not in etl
    assert policy.on_table(CAROL, ("sales",), "returns") == {Privilege.LIST}  # not orders
    assert policy.on_table(CAROL, ("sales", "eu"), "x") == frozenset()  # `sales.*`: a table of sales, not nested
    assert policy.on_table(CAROL, ("ops", "eu"), "x") == {Privilege.READ_METADATA, Privilege.LIST}
    assert policy.on_table(CAROL, ("salesx",), "y") == frozenset()
    with pytest.raises(ValidationError, match=r"write namespace\.table"):
        AccessRule.model_validate({"principals": ["a"], "tables": ["sales*"], "privileges": ["plan"]})

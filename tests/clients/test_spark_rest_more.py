"""Spark + Iceberg 1.12's REST client through the service, beyond the read matrix of test_spark_rest.py: a
plan answered `submitted` and polled, OAuth2 client credentials and a bearer token through Iceberg's
AuthManager; what Spark pushes into a plan request; a table on S3 read with the plan's storage credentials;
two principals with different grants, their tokens from an OpenID provider."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError

from tests.clients.spark_rest import (
    PLAN,
    POLL,
    TASKS,
    assert_planned_by_the_service,
    assert_reads_match,
    run_reads,
)
from tests.conformance.reference import Conformance, load_java_env
from tests.conftest import running_service
from tests.oidc_provider import oidc_provider
from tests.spark_client.compare import rows
from tests.spark_client.vended import load_vended_table, static_vending, vending_service, write_vended_table

TOKEN = "static-one"
CLIENT_ID, CLIENT_SECRET = "spark", "s3cret"

# --- Submitted plans, polled; OAuth2 and bearer tokens ----------------------------------------------------

AUTH_CASES = ("unpartitioned/full", "mor_position_deletes/full", "v3_dv/id-lt", "snapshots/tag")


@pytest.fixture
def auth_service(conformance: Conformance, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The service with authentication on, every plan answered `submitted` (planned in the background), and
    its pages nested, a chain: the client must fetch each page to learn of the next. A service of each run's
    own: a plan the service holds already (another run's) is answered `completed` at once."""
    config = tmp_path_factory.mktemp("auth") / "service.json"
    settings = {
        "warehouse": str(conformance.dir / "warehouse"),
        "auth_tokens": [TOKEN],
        "oauth_clients": {CLIENT_ID: CLIENT_SECRET},
        "async_plan_min_files": 0,
        "plan_task_page_size": 2,
        "plan_task_fanout": 1,  # nested plan tasks: each page's answer lists the next page
    }
    config.write_text(json.dumps(settings))
    with running_service("--config", str(config)) as url:
        yield url


@pytest.mark.parametrize(
    ("spark", "how"), [("4.1", "oauth2"), ("3.5", "token")], ids=["spark-4.1-oauth2", "spark-3.5-token"]
)
def test_submitted_plans_polled_with_auth(
    conformance: Conformance, auth_service: str, tmp_path: Path, spark: str, how: str
) -> None:
    """OAuth2 client credentials (Iceberg's AuthManager fetches a token from the service's /v1/oauth/tokens)
    or a static bearer token; each plan is answered `submitted`, polled until completed, then its nested pages
    fetched one after the other."""
    catalog = "spark.sql.catalog.sp"
    if how == "oauth2":
        conf = {f"{catalog}.credential": f"{CLIENT_ID}:{CLIENT_SECRET}"}
        conf[f"{catalog}.oauth2-server-uri"] = f"{auth_service}/v1/oauth/tokens"
    else:
        conf = {f"{catalog}.token": TOKEN}
    cases = [conformance.read(case_id) for case_id in AUTH_CASES]
    headers = {"Authorization": f"Bearer {TOKEN}"}
    result = run_reads(tmp_path, spark, "1.12.0", auth_service, cases, conf, headers)
    assert_reads_match(conformance, tmp_path, result)
    assert_planned_by_the_service(result, cases)
    for case in result["cases"]:
        assert case["requests"].get(POLL, 0) >= 1, case  # submitted, then polled
    pages = {case["id"]: case["requests"].get(TASKS, 0) for case in result["cases"]}
    assert pages["mor_position_deletes/full"] >= 3, pages  # a chain of nested pages, followed to its end


# --- What Spark pushes ------------------------------------------------------------------------------------


def test_what_spark_pushes(conformance: Conformance, conformance_service: str, tmp_path: Path) -> None:
    """The request fields Spark + Iceberg 1.12 sends, counted by the service: the projection (`select`), the
    filter, `case-sensitive`, the snapshot, `use-snapshot-schema`, and a LIMIT as `min-rows-requested`; an
    aggregate Iceberg cannot answer from statistics (no `stats-fields` are asked) is read from the files."""
    projected = conformance.read("unpartitioned/ts-range-projected")
    full = conformance.read("unpartitioned/full")
    cases = [
        projected,
        {**full, "id": "limit", "limit": 5},
        {**full, "id": "aggregates", "aggregates": ["min(id)", "max(id)", "count(*)"]},
    ]
    result = run_reads(tmp_path, "4.1", "1.12.0", conformance_service, cases)
    by_id = {case["id"]: case for case in result["cases"]}
    assert_reads_match(conformance, tmp_path, {"cases": [by_id[projected["id"]]]})
    pushed = {key.removeprefix("field ") for key in by_id[projected["id"]]["requests"] if key.startswith("field ")}
    assert pushed == {"select", "filter", "case-sensitive", "snapshot-id", "use-snapshot-schema"}
    limit = by_id["limit"]
    assert limit["requests"].get("field min-rows-requested") == 1
    all_rows = rows(pq.read_table(conformance.dir / full["path"]))
    limited = rows(pq.read_table(tmp_path / limit["path"]))
    assert sum(limited.values()) == 5 and limited - all_rows == Counter()
    ids = pq.read_table(conformance.dir / full["path"]).column("id")
    aggregated = pq.read_table(tmp_path / by_id["aggregates"]["path"]).to_pylist()
    assert aggregated == [{"min(id)": pc.min(ids).as_py(), "max(id)": pc.max(ids).as_py(), "count(1)": len(ids)}]
    assert "field stats-fields" not in by_id["aggregates"]["requests"]
    assert by_id["aggregates"]["requests"].get(PLAN, 0) >= 1


# --- Tables on S3, read with the plan's storage credentials ------------------------------------------------


def test_s3_table_read_with_the_plans_storage_credentials(
    s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A table on S3 (moto on loopback) and a service that vends static credentials: Spark + Iceberg 1.12 with
    no storage settings of its own (no endpoint, no keys, no region) plans through the service and reads
    every row with Iceberg's S3FileIO built from the plan's `storage-credentials` (the aws bundle on the
    classpath, as a user on S3 has it)."""
    catalog = write_vended_table(s3_endpoint, tmp_path_factory.mktemp("s3-table"))
    expected = rows(load_vended_table(catalog, s3_endpoint).scan().to_arrow())
    vending = static_vending(**{"s3.path-style-access": "true"})  # moto, as MinIO: a path-style endpoint
    bundle = str(load_java_env().maven_jar("org.apache.iceberg", "iceberg-aws-bundle", "1.12.0"))
    with vending_service(tmp_path_factory.mktemp("s3-service"), catalog, s3_endpoint, **vending) as url:
        case: dict[str, Any] = {"id": "s3", "namespace": "demo", "table": "events", "columns": None}
        case |= {"spark_filter": None, "snapshot": {"kind": "current"}, "split_size": None}
        result = run_reads(tmp_path, "3.5", "1.12.0", url, [case], extra_jars=[bundle])
    (read,) = result["cases"]
    assert "error" not in read, read
    assert read["requests"].get(PLAN) == 1
    assert rows(pq.read_table(tmp_path / read["path"])) == expected


# --- Two principals with different grants, tokens from an OpenID provider -------------------------------

GRANTED, DENIED = "identity_part/full", "unpartitioned/full"  # Spark's; PyIceberg's the other way round


def test_two_principals_read_what_they_are_granted(conformance: Conformance, tmp_path: Path) -> None:
    """Spark + Iceberg 1.12 and PyIceberg, each fetching client-credentials tokens from a real OpenID provider
    (oidc-provider on loopback) as they are configured for any provider, read through the REST catalog: each
    reads exactly Spark + Iceberg 1.10.2's rows of the table it is granted, and the other table is one that
    does not exist for it."""
    clients = {"spark-etl": ("etl-secret", ["etl"]), "notebook": ("nb-secret", ["analysts"])}
    with oidc_provider(clients) as provider:
        config = tmp_path / "service.json"
        rules = [
            {"principals": ["spark-etl"], "tables": ["db.identity_part"], "privileges": ["plan"]},
            {"groups": ["analysts"], "tables": ["db.unpartitioned"], "privileges": ["plan"]},
            {"principals": ["ops"], "privileges": ["metrics"]},
        ]
        settings = {
            "warehouse": str(conformance.dir / "warehouse"),
            "oidc_issuer": provider.issuer,
            "oidc_audience": "scan-planner",
            "auth_tokens": {"ops": "ops-token"},
            "access_rules": rules,
        }
        config.write_text(json.dumps(settings))
        with running_service("--config", str(config)) as url:
            catalog = "spark.sql.catalog.sp"
            conf = {
                f"{catalog}.credential": "spark-etl:etl-secret",
                f"{catalog}.oauth2-server-uri": provider.token_endpoint,
                f"{catalog}.scope": "catalog",
            }
            cases = [conformance.read(GRANTED), conformance.read(DENIED)]
            result = run_reads(
                tmp_path / "spark", "3.5", "1.12.0", url, cases, conf, {"Authorization": "Bearer ops-token"}
            )
            granted, denied = result["cases"]
            assert_reads_match(conformance, tmp_path / "spark", {"cases": [granted]})
            assert_planned_by_the_service({"cases": [granted]}, cases[:1])
            assert "TABLE_OR_VIEW_NOT_FOUND" in denied.get("error", ""), denied  # as Spark says of a missing table
            properties = {"oauth2-server-uri": provider.token_endpoint, "scan-planning-mode": "server"}
            notebook = RestCatalog("nb", uri=url, credential="notebook:nb-secret", scope="catalog", **properties)
            table = notebook.load_table("db.unpartitioned")
            theirs = pq.read_table(conformance.dir / conformance.read("unpartitioned/full")["path"])
            assert table.scan().to_arrow().num_rows == theirs.num_rows
            with pytest.raises(NoSuchTableError):
                notebook.load_table("db.identity_part")

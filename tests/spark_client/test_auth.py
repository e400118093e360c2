"""The PySpark client on a service with authentication on: the token as an argument, a data source option,
or $SCAN_PLANNER_TOKEN; the executors fetch by-id tasks with the driver's token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner_client import TOKEN_VARIABLE
from spark_client import PlannerServiceError, plan_and_read
from tests.conftest import running_service
from tests.spark_client.compare import rows

pytest.importorskip("pyspark")
TOKEN = "spark-driver-token"


@pytest.fixture(scope="module")
def secured(demo_home: Path, demo_service: str) -> Iterator[str]:
    """The demo warehouse (written by demo_service) on a second service that wants a bearer token."""
    env = {"SCAN_PLANNER_HOME": str(demo_home), "SCAN_PLANNER_AUTH_TOKENS": json.dumps([TOKEN])}
    with running_service(env=env) as url:
        yield url


def test_plan_and_read_passes_its_token_to_the_executors(spark: Any, secured: str, demo_table: Any) -> None:
    expected = rows(demo_table.scan().to_arrow())
    by_id = plan_and_read(spark, "demo.events", service_url=secured, token=TOKEN, inline_task_limit=0)
    assert rows(by_id.toArrow()) == expected
    with pytest.raises(PlannerServiceError) as refused:
        plan_and_read(spark, "demo.events", service_url=secured)
    assert refused.value.status == 401


def test_the_token_from_the_environment(spark: Any, secured: str, demo_table: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv(TOKEN_VARIABLE, TOKEN)
    df = plan_and_read(spark, "demo.events", service_url=secured, inline_task_limit=0)
    assert rows(df.toArrow()) == rows(demo_table.scan().to_arrow())


def test_the_data_source_token_option(spark: Any, secured: str, demo_table: Any) -> None:
    pytest.importorskip("pyspark.sql.datasource", reason="Python data sources need pyspark >= 4.0")
    from spark_client import ScanPlannerDataSource

    spark.dataSource.register(ScanPlannerDataSource)

    def reader() -> Any:  # (a DataFrameReader's options stay on it)
        return spark.read.format("scan-planner").option("service-url", secured).option("inline-task-limit", "0")

    df = reader().option("token", TOKEN).load("demo.events")
    assert rows(df.toArrow()) == rows(demo_table.scan().to_arrow())
    with pytest.raises(Exception, match="401"):
        reader().load("demo.events").collect()


@pytest.fixture(scope="module")
def governed(demo_home: Path, demo_service: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The demo warehouse on a service with a grants policy: `reader` may plan demo.events, `lister` only see it."""
    config = tmp_path_factory.mktemp("governed") / "service.json"
    rules = [
        {"principals": ["reader"], "tables": ["demo.*"], "privileges": ["plan"]},
        {"principals": ["lister"], "tables": ["demo.*"], "privileges": ["list"]},
    ]
    tokens = {"reader": "reader-token", "lister": "lister-token", "nobody": "nobody-token"}
    config.write_text(json.dumps({"auth_tokens": tokens, "access_rules": rules, "demo": True}))
    with running_service("--config", str(config), env={"SCAN_PLANNER_HOME": str(demo_home)}) as url:
        yield url


def test_the_client_reads_only_what_its_principal_may_plan(spark: Any, governed: str, demo_table: Any) -> None:
    """plan_and_read as three principals: the one granted reads every row (its executors fetch tasks by id with
    its token); one that may only list it gets a 403; one that may not see it, the missing table's 404."""
    df = plan_and_read(spark, "demo.events", service_url=governed, token="reader-token", inline_task_limit=0)
    assert rows(df.toArrow()) == rows(demo_table.scan().to_arrow())
    with pytest.raises(PlannerServiceError) as forbidden:
        plan_and_read(spark, "demo.events", service_url=governed, token="lister-token")
    assert forbidden.value.status == 403 and "not authorized" in str(forbidden.value)
    with pytest.raises(PlannerServiceError) as unseen:
        plan_and_read(spark, "demo.events", service_url=governed, token="nobody-token")
    assert unseen.value.status == 404 and "does not exist" in str(unseen.value)

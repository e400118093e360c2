"""Fixtures of the PySpark client tests: the demo table, and one local SparkSession for the whole run
(a Spark JVM takes ~10 s to start, so every module shares it; tests set the SQL confs they need)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.spark_client.vended import load_vended_table, write_vended_table


@pytest.fixture(scope="session")
def demo_table(demo_home: Path, demo_service: str) -> Any:
    """demo.events as PyIceberg sees it (an oracle independent of the planner and of spark_client)."""
    from pyiceberg.catalog.sql import SqlCatalog

    from planner_service.demo import DEMO_CATALOG_NAME, DEMO_TABLE, demo_catalog_uri

    warehouse = demo_home / "demo-warehouse"
    catalog = SqlCatalog(DEMO_CATALOG_NAME, uri=demo_catalog_uri(warehouse), warehouse=f"file://{warehouse}")
    return catalog.load_table(DEMO_TABLE)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A small local Spark 4 session (pyspark from the project's venv), UTC, no UI."""
    pyspark_sql = pytest.importorskip("pyspark.sql")
    # the Python workers must be this interpreter (it has pyarrow, httpx and spark_client), not `python3`
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    for name in ("SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR"):  # another Spark's settings
        os.environ.pop(name, None)
    session = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .appName("scan-planner tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1000")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def vended_catalog(s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """demo.events on moto's S3 (tests/spark_client/vended.py), for the services that vend credentials for it;
    the SQL catalog's path."""
    return write_vended_table(s3_endpoint, tmp_path_factory.mktemp("vended"))


@pytest.fixture(scope="session")
def vended_table(vended_catalog: str, s3_endpoint: str) -> Any:
    """That table as PyIceberg reads it with the service's own keys (the oracle of its rows)."""
    return load_vended_table(vended_catalog, s3_endpoint)

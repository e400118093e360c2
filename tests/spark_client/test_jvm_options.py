"""The Arrow JVM options: which a session lacks, the advice's exact configuration, and plan_and_read saying
it once per application, at INFO (the test session sets the driver's options to -Duser.timezone=UTC only)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from spark_client import jvm_options, plan_and_read
from spark_client.jvm_options import arrow_options_advice, missing_arrow_properties

BOTH = "-Darrow.enable_null_check_for_get=false -Darrow.enable_unsafe_memory_access=true"


@pytest.mark.parametrize(
    ("options", "missing"),
    [
        ("", ["-Darrow.enable_null_check_for_get=false", "-Darrow.enable_unsafe_memory_access=true"]),
        (BOTH, []),
        (f"-Xss4m {BOTH} -Duser.timezone=UTC", []),
        ("-Darrow.enable_null_check_for_get=FALSE", ["-Darrow.enable_unsafe_memory_access=true"]),
        (
            "-Darrow.enable_null_check_for_get=true",
            ["-Darrow.enable_null_check_for_get=false", "-Darrow.enable_unsafe_memory_access=true"],
        ),
    ],
)
def test_missing_arrow_properties(options: str, missing: list[str]) -> None:
    assert missing_arrow_properties(options) == missing


def test_the_advice_names_the_two_flags_and_where_they_go() -> None:
    conf = {"spark.driver.extraJavaOptions": "-Duser.timezone=UTC", "spark.executor.extraJavaOptions": BOTH}
    advice = arrow_options_advice(conf.get)
    assert advice is not None
    assert advice.endswith(f"add to spark.driver.extraJavaOptions before the session starts: {BOTH}")
    assert "spark.executor.extraJavaOptions" not in advice and len(advice) < 450
    assert "crash the JVM" in advice  # what skipping the checks risks, beside what they cost
    both = dict.fromkeys(jvm_options.JAVA_OPTIONS, BOTH)
    assert arrow_options_advice(both.get) is None


def test_plan_and_read_says_it_once(
    spark: Any, demo_service: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jvm_options, "_ADVISED", set())
    with caplog.at_level(logging.INFO, logger="spark_client.jvm_options"):
        for _ in range(2):
            plan_and_read(spark, "demo.events", service_url=demo_service).count()
    (record,) = [r for r in caplog.records if r.name == "spark_client.jvm_options"]
    assert record.levelno == logging.INFO  # in the log, not printed on every read
    message = record.getMessage()  # two flags, not Spark 4's own --add-opens options
    assert "spark.driver.extraJavaOptions" in message and message.endswith(BOTH)
    assert "--add-opens" not in message and len(message) < 450


def test_the_data_source_says_it_once_per_jvm(spark: Any, demo_service: str) -> None:
    """The data source's schema() runs in a Python worker, which cannot see the session's conf: it reads the
    command line of the JVM that started it (the test session's driver, whose options lack both) and says
    so once per JVM; the marker file, named after the JVM's pid, holds what it said."""
    pytest.importorskip("pyspark.sql.datasource")
    import tempfile
    from pathlib import Path

    from spark_client import ScanPlannerDataSource

    jvm: Any = spark.sparkContext._jvm
    marker = Path(tempfile.gettempdir()) / f"scan-planner-arrow-advice-{jvm.ProcessHandle.current().pid()}"
    marker.unlink(missing_ok=True)
    spark.dataSource.register(ScanPlannerDataSource)
    for _ in range(2):
        spark.read.format("scan-planner").option("service-url", demo_service).load("demo.events").schema  # noqa: B018
    said = marker.read_text()
    assert "spark.driver.extraJavaOptions and spark.executor.extraJavaOptions" in said and said.endswith(BOTH)

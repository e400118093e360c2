"""What the Spark + Iceberg REST-client tests share (test_spark_rest.py, test_spark_rest_older.py,
test_spark_rest_more.py): a run of read cases in a Spark of scripts/java_env.py (spark_rest_reads.py), and
what its results must show. One Spark per run, in a process of its own."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.conformance.reference import Conformance, load_java_env
from tests.spark_client.compare import rows

RUNNER = Path(__file__).with_name("spark_rest_reads.py")
PLAN = "POST /v1/namespaces/{namespace}/tables/{table}/plan"
POLL = "GET /v1/namespaces/{namespace}/tables/{table}/plan/{plan_id}"
CANCEL = "DELETE /v1/namespaces/{namespace}/tables/{table}/plan/{plan_id}"
TASKS = "POST /v1/namespaces/{namespace}/tables/{table}/tasks"
NOT_PLANNED = ("empty",)  # no snapshot: planned by the service on Spark 3.5, not at all on 4.1


def subset(case: dict[str, Any]) -> bool:
    """The cases of the older release's runs: every table's full read, and every time travel."""
    return case["id"] == f"{case['table']}/full" or case["snapshot"]["kind"] not in ("current", "appends")


# name: (Spark line, Iceberg release, all the read cases or the subset)
RUNS = {
    "spark-3.5-iceberg-1.12.0": ("3.5", "1.12.0", True),
    "spark-4.1-iceberg-1.12.0": ("4.1", "1.12.0", True),
    "spark-3.5-iceberg-1.11.0": ("3.5", "1.11.0", False),
    "spark-4.1-iceberg-1.11.0": ("4.1", "1.11.0", False),
    "spark-3.5-iceberg-1.10.2": ("3.5", "1.10.2", False),  # no REST scan client: plans in the driver
}
CLIENT_PLANNED = ("1.10.2",)


def run_reads(
    out: Path,
    spark: str,
    iceberg: str,
    uri: str,
    cases: list[dict[str, Any]],
    conf: dict[str, str] | None = None,
    metrics_headers: dict[str, str] | None = None,
    extra_jars: list[str] | None = None,
) -> dict[str, Any]:
    """Read `cases` through the service with Spark `spark` and Iceberg `iceberg` (spark_rest_reads.py)."""
    env = load_java_env().ensure_spark_env(spark, iceberg)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cases.json").write_text(json.dumps(cases))
    cmd = [str(env["python"]), str(RUNNER), "--uri", uri, "--cases", str(out / "cases.json"), "--out", str(out)]
    cmd += ["--jars", ",".join([*env["jars"], *(extra_jars or [])])]
    cmd += [arg for key, value in (conf or {}).items() for arg in ("--conf", f"{key}={value}")]
    cmd += [arg for key, value in (metrics_headers or {}).items() for arg in ("--metrics-header", f"{key}={value}")]
    drop = {"SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "PYTHONPATH"}
    environment = {**{k: v for k, v in os.environ.items() if k not in drop}, "JAVA_HOME": str(env["java_home"])}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=environment, timeout=900)
    assert proc.returncode == 0 and (out / "result.json").exists(), proc.stderr[-4000:]
    result: dict[str, Any] = json.loads((out / "result.json").read_text())
    assert result["spark_version"].startswith(spark)
    return result


def assert_reads_match(conformance: Conformance, out: Path, result: dict[str, Any]) -> None:
    """Every case read Spark + Iceberg 1.10.2's rows, with its Spark schema."""
    wrong = []
    for case in result["cases"]:
        expected = conformance.read(case["id"])
        if "error" in case:
            wrong.append(f"{case['id']}: {case['error'][:500]}")
            continue
        ours, theirs = pq.read_table(out / case["path"]), pq.read_table(conformance.dir / expected["path"])
        if case["spark_schema"] != expected["spark_schema"] or rows(ours) != rows(theirs):
            wrong.append(f"{case['id']}: {ours.num_rows} rows, {expected['rows']} expected")
    assert wrong == []


def assert_planned_by_the_service(result: dict[str, Any], cases: list[dict[str, Any]], client: bool = False) -> None:
    """Each batch read was planned by the service (and its plan closed); incremental reads were not (nor
    any read of a `client` that plans for itself)."""
    by_id = {c["id"]: c for c in cases}
    for case in result["cases"]:
        requests, read = case["requests"], by_id[case["id"]]
        if read["snapshot"]["kind"] == "appends" or client:
            assert PLAN not in requests, case["id"]
        elif read["table"] not in NOT_PLANNED:
            assert requests.get(PLAN, 0) >= 1 and requests.get(CANCEL) == requests.get(PLAN), (case["id"], requests)


Run = tuple[str, list[dict[str, Any]], dict[str, Any]]  # the Iceberg release, the cases, what the run read


def read_runs(every_case: bool) -> Any:
    """The module-scoped `run` fixture over RUNS with `every_case` (all the read cases, or the subset): one
    Spark per run, each run's read cases read through the conformance service."""

    @pytest.fixture(scope="module", params=sorted(name for name, run in RUNS.items() if run[2] == every_case))
    def run(
        request: pytest.FixtureRequest,
        conformance: Conformance,
        conformance_service: str,
        tmp_path_factory: pytest.TempPathFactory,
    ) -> Run:
        spark, iceberg, _ = RUNS[request.param]
        cases = [c for c in conformance.reads if every_case or subset(c)]
        out = tmp_path_factory.mktemp(request.param)
        return iceberg, cases, run_reads(out, spark, iceberg, conformance_service, cases) | {"out": out}

    return run


class ReadsThroughTheService:
    """What every run checks; a module subclasses it beside its `run = read_runs(...)`."""

    def test_every_read_case_has_spark_and_iceberg_rows(self, conformance: Conformance, run: Run) -> None:
        """Each read case of the run, in order, gave Spark + Iceberg 1.10.2's rows."""
        _, cases, result = run
        assert [c["id"] for c in result["cases"]] == [c["id"] for c in cases]
        assert_reads_match(conformance, result["out"], result)

    def test_each_batch_scan_is_planned_by_the_service(self, run: Run) -> None:
        """Batch scans planned by the service (but by 1.10.2's client), their pages fetched, nothing polled."""
        iceberg, cases, result = run
        assert_planned_by_the_service(result, cases, client=iceberg in CLIENT_PLANNED)
        pages = sum(case["requests"].get(TASKS, 0) for case in result["cases"])
        if iceberg not in CLIENT_PLANNED:  # plans of more than 4 tasks came in pages, fetched by the client
            assert pages > len(result["cases"]) / 2
        assert not any(POLL in case["requests"] for case in result["cases"])  # small plans complete at once

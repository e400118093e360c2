"""Spark + Iceberg's own REST catalog client (Iceberg 1.11 and 1.12, RESTTable / RESTTableScan) planning its
scans on the service, on Spark 3.5 and 4.1, configured as a user configures it: the catalog is
`org.apache.iceberg.spark.SparkCatalog` with `type=rest` and the service's `uri`, nothing else. The service
tells Iceberg Java 1.11+ to plan here (`/v1/config` defaults), and Spark then reads each planned task with
Iceberg's own readers.

Every read case of the conformance suite (partitions and their evolution, schema evolution, position and
equality deletes, DVs, v1/v2/v3, ORC/Avro/Parquet, nested types, time travel by id, timestamp, branch and
tag, filters on every type, projections, split sizes) is read through it and must give exactly Spark +
Iceberg 1.10.2's rows and Spark schema, and the service's request counters around each read show that it
was planned by the service: a POST .../plan, plan-task pages fetched (the service pages every 4 tasks here),
and a DELETE when the scan closes. Incremental append reads are planned by the client (Iceberg plans only
batch scans remotely), and a table without a snapshot is not planned on Spark 4.1; both read Spark's rows.
Spark + Iceberg 1.10.2, which has no REST scan client, reads every table and time travel planning in the
driver from the metadata the catalog serves, as before. Further runs: a plan answered `submitted` and
polled, OAuth2 client credentials and a bearer token through Iceberg's AuthManager; two principals with
different grants, their tokens from an OpenID provider. One Spark per run, in a venv of scripts/java_env.py
(spark_rest_reads.py, spark_rest.py). Here the runs of Iceberg 1.12, every read case; those of 1.11 and
1.10.2 (the subset) are test_spark_rest_older.py, the further runs test_spark_rest_more.py: modules of their
own, so that parallel test workers share them out.
"""

from __future__ import annotations

from tests.clients.spark_rest import RUNS, ReadsThroughTheService, read_runs, subset
from tests.conformance.reference import Conformance

run = read_runs(every_case=True)


class TestIceberg112(ReadsThroughTheService):
    pass


def test_the_full_runs_cover_every_read_case(conformance: Conformance) -> None:
    assert any(every_case for _, _, every_case in RUNS.values())
    assert {c["id"] for c in conformance.reads if subset(c)} < {c["id"] for c in conformance.reads}

"""Spark + Iceberg 1.11 (RESTTableScan) on Spark 3.5 and 4.1, and 1.10.2 (no REST scan client: it plans in
its driver from the metadata the catalog serves), through the service's REST catalog: every table's full read
and every time travel must give Spark + Iceberg 1.10.2's rows (test_spark_rest.py says how; spark_rest.py
runs them)."""

from __future__ import annotations

from tests.clients.spark_rest import ReadsThroughTheService, read_runs

run = read_runs(every_case=False)


class TestIceberg111And1102(ReadsThroughTheService):
    pass

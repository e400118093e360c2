"""aggregate(): COUNT(*), COUNT(col), MIN(col), MAX(col) of a table as one Spark row, from the service's
metadata when that is exact, otherwise by reading the rows.

Spark's Python data sources have no aggregate push-down, so this is the function to call where Spark +
Iceberg would answer `SELECT count(*), max(ts) FROM t WHERE ...` from manifests alone:

    from spark_client import aggregate
    aggregate(spark, "db.events", ["count(*)", "max(ts)"], filter="day = '2024-01-01'").show()

The service (POST /aggregate) answers from the data files' record counts and column stats when no file has
deletes, the filter selects whole files, and the stats are present and whole; then no data file is read.
Otherwise plan_and_read reads the rows and Spark aggregates them. Either way the DataFrame has one row, a
column per aggregate named as given in canonical form ("count(*)", "min(id)"), of Spark's types.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from spark_client.client import DEFAULT_SERVICE_URL, PlannerClient, plan_request
from spark_client.dataframe import plan_and_read
from spark_client.schema import spark_ddl
from spark_client.values import to_scalar

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["aggregate", "aggregate_request"]

log = logging.getLogger(__name__)
_AGGREGATE = re.compile(r"\s*(count|min|max)\s*\(\s*(.*?)\s*\)\s*", re.IGNORECASE | re.DOTALL)


def aggregate_request(table: str, aggregates: Sequence[str], **scan: Any) -> dict[str, Any]:
    """A POST /aggregate body: the aggregates and plan_request's table, snapshot and filter arguments."""
    if isinstance(aggregates, str):
        raise TypeError('aggregates is a list such as ["count(*)", "max(ts)"], not a string')
    body = plan_request(table, **scan)
    body["aggregates"] = list(aggregates)
    return body


def aggregate(
    spark: SparkSession,
    table: str,
    aggregates: Sequence[str],
    filter: str | Mapping[str, Any] | None = None,
    snapshot_id: int | None = None,
    as_of: int | datetime | None = None,
    ref: str | None = None,
    service_url: str = DEFAULT_SERVICE_URL,
    storage: Mapping[str, Any] | None = None,
    *,
    case_sensitive: bool = True,
    client: PlannerClient | None = None,
    token: str | None = None,
    start_snapshot_id: int | None = None,
    end_snapshot_id: int | None = None,
) -> DataFrame:
    """One row: each of `aggregates` ("count(*)", "count(col)", "min(col)", "max(col)"; dotted names for
    nested columns) over the rows of `table` that match `filter`, at the snapshot chosen as plan_and_read
    chooses it. From metadata when the service says every aggregate is exact, else read and aggregated by
    Spark (the log says why). The other arguments are plan_and_read's."""
    scan: dict[str, Any] = {"filter": filter, "snapshot_id": snapshot_id, "as_of": as_of, "ref": ref,
                            "case_sensitive": case_sensitive, "start_snapshot_id": start_snapshot_id,
                            "end_snapshot_id": end_snapshot_id}  # fmt: skip
    body = aggregate_request(table, aggregates, **scan)
    if client is not None:
        result = client.aggregate(body)
    else:
        with PlannerClient(service_url, token=token) as own:
            result = own.aggregate(body)
    answered = result["aggregates"]
    if result["exact"]:
        log.info("aggregates of %s from metadata (%d data files, no rows read)", table, result.get("data-files", 0))
        ddl = spark_ddl({"fields": [{**a, "required": False} for a in answered]})  # every column nullable
        return spark.createDataFrame([tuple(to_scalar(a["value"], a["type"]).as_py() for a in answered)], ddl)
    reasons = "; ".join(dict.fromkeys(a["reason"] for a in answered if not a["exact"]))  # once each
    log.info("aggregates of %s read from the rows: %s", table, reasons)
    columns = [_spark_aggregate(a["name"]) for a in answered]
    df = plan_and_read(spark, table, service_url=service_url, storage=storage, client=client, token=token, **scan)
    return df.agg(*columns)


def _spark_aggregate(name: str) -> Column:
    """Spark's aggregate for a canonical name the service gave back ("count(*)", "min(info.a)")."""
    from pyspark.sql import functions as F

    match = _AGGREGATE.fullmatch(name)
    if match is None:
        raise ValueError(f"not an aggregate: {name!r}")
    op, column = match[1].lower(), match[2]
    if column == "*":
        return F.count(F.lit(1)).alias(name)
    fn = {"count": F.count, "min": F.min, "max": F.max}[op]
    return fn(F.col(column)).alias(name)

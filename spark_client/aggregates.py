"""aggregate(): COUNT(*), COUNT(col), MIN(col), MAX(col) of a table as one Spark row, from the service's
metadata when that is exact, otherwise by reading the rows.

Spark's Python data sources have no aggregate push-down, so this is the function to call where Spark +
Iceberg would answer `SELECT count(*), max(ts) FROM t WHERE ...` from manifests alone:

    from spark_client import aggregate
    aggregate(spark, "db.events", ["count(*)", "max(ts)"], filter="day = '2024-01-01'").show()

The service (POST /aggregate) answers from the data files' record counts and column stats when no file has
deletes, the filter selects whole files, and the stats are present and whole; then no data file is read.
Otherwise the rows are read, one Spark partition per task as plan_and_read reads them, but only the columns
the aggregates name (and the filter's where its statistics do not decide it: COUNT(*) of row groups they
decide is taken from the footers), and each task is aggregated where it is read (partial_aggregates.py):
the driver combines one row per task, when aggregate() is called. Either way the DataFrame has one row, a
column per aggregate named as given in canonical form ("count(*)", "min(id)"), of Spark's types.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Unpack

import pyarrow as pa

from iceberg_io import StorageConfig
from planner_client import PlannerClient, Scan, ScanArgs
from spark_client.dataframe import arrow_schema, map_tasks, output_schema, plan_for_spark, read_plan
from spark_client.partial_aggregates import AggregateColumn, PartialAggregates, combine
from spark_client.partitions import expand_tasks, is_inline
from spark_client.planner import planner
from spark_client.reader import DEFAULT_BATCH_SIZE
from spark_client.restrictions import query_salt
from spark_client.schema import spark_arrow_type, spark_schema, to_spark_batch
from spark_client.values import to_scalar
from spark_client.vended import Storage, vended_storage

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["DRIVER_READ_BYTES", "aggregate", "read_aggregates"]

log = logging.getLogger(__name__)
# Scans whose read columns are estimated at most this many bytes are aggregated in the driver rather than by a
# Spark job: a job's fixed cost (its stage, a Python worker per task: ~150 ms on a local session) outweighs
# decoding that much. 0: always a Spark job.
DRIVER_READ_BYTES = 128 * 1024 * 1024
_AGGREGATE = re.compile(r"\s*(count|min|max)\s*\(\s*(.*?)\s*\)\s*", re.IGNORECASE | re.DOTALL)


def aggregate(
    spark: SparkSession,
    table: str | Scan,
    aggregates: Sequence[str],
    *,
    service_url: str | None = None,
    storage: Storage = None,
    client: PlannerClient | None = None,
    token: str | None = None,
    driver_read_bytes: int = DRIVER_READ_BYTES,
    **scan: Unpack[ScanArgs],
) -> DataFrame:
    """One row: each of `aggregates` ("count(*)", "count(col)", "min(col)", "max(col)"; dotted names for
    nested columns) over the rows of a scan (`table` and `scan` as plan_and_read takes them; its columns,
    options and limit play no part). From metadata when the service says every aggregate is exact, else read
    and aggregated by Spark (the log says why); a scan whose read columns are estimated at most
    `driver_read_bytes` (default 128 MiB; estimated_read_bytes) is read in the driver, with no Spark job (0:
    always a job). The other arguments are plan_and_read's."""
    chosen = Scan.of(Scan.of(table, **scan), columns=None, options=None, limit=None)
    with planner(client, service_url, token) as service:
        result = service.aggregate(chosen, aggregates)
    answered = result["aggregates"]
    if result["exact"]:
        log.info(
            "aggregates of %s from metadata (%d data files, no rows read)", chosen.table, result.get("data-files", 0)
        )
        fields = {"fields": [{**a, "required": False} for a in answered]}  # every column nullable
        values = [pa.array([to_scalar(a["value"], a["type"])]) for a in answered]
        row = to_spark_batch(pa.RecordBatch.from_arrays(values, names=[a["name"] for a in answered]), fields)
        return local_frame(spark, row, spark_schema(fields))
    reasons = "; ".join(dict.fromkeys(a["reason"] for a in answered if not a["exact"]))  # once each
    log.info("aggregates of %s read from the rows: %s", chosen.table, reasons)
    columns = list(dict.fromkeys(c for _, c in (_parse(a["name"]) for a in answered) if c is not None))
    plan, url, token = plan_for_spark(spark, Scan.of(chosen, columns=columns), "aggregate", client, service_url, token)
    names = [a["name"] for a in answered]
    return read_aggregates(spark, plan, names, storage, url, token, driver_read_bytes=driver_read_bytes)


def read_aggregates(
    spark: SparkSession,
    plan: Mapping[str, Any],
    names: Sequence[str],
    storage: Storage,
    service_url: str,
    token: str | None,
    *,
    driver_read_bytes: int = DRIVER_READ_BYTES,
) -> DataFrame:
    """One row: the aggregates `names` (canonical, as the service gives them back) of a plan's rows, each task
    aggregated where it is read (partial_aggregates.py) and the partial rows combined in the driver, at
    once; min and max of a nested column (a struct Spark orders) are left to Spark over the column's rows.
    An inline plan whose read is estimated at most `driver_read_bytes` (estimated_read_bytes) is read in the
    driver, a thread a task."""
    aggregates = [_parse(name) for name in names]
    paths = [() if column is None else _path(plan["schema"], column) for _, column in aggregates]
    tops = list(dict.fromkeys(path[0] for path in paths if path))
    read_schema = output_schema(plan, tops)
    # the partial values' Spark types: None for a count (a long), the column's for min and max
    types = [
        None if op == "count" else _spark_type(read_schema, path)
        for (op, _), path in zip(aggregates, paths, strict=True)
    ]
    if not all(typ is None or _is_atomic(typ) for typ in types):
        df = read_plan(spark, plan, columns=tops, storage=storage, service_url=service_url, token=token)
        return df.agg(*[_spark_aggregate(name) for name in names])
    columns = [AggregateColumn(op, path) for (op, _), path in zip(aggregates, paths, strict=True)]
    partials = PartialAggregates(columns, arrow_schema(read_schema), DEFAULT_BATCH_SIZE)
    if driver_read_bytes > 0 and is_inline(plan) and estimated_read_bytes(plan) <= driver_read_bytes:
        rows = _in_driver(plan, partials, vended_storage(plan, storage))
    else:
        schema = _struct([f"p{i}" for i in range(len(names))], types)
        rows = _collect_arrow(map_tasks(spark, plan, partials, schema, storage, service_url, token))
    values = combine([op for op, _ in aggregates], rows)
    row = pa.RecordBatch.from_arrays(
        [pa.array([v], f.type) for v, f in zip(values, rows.schema, strict=True)], names=list(names)
    )
    return local_frame(spark, row, _struct(names, types))


def estimated_read_bytes(plan: Mapping[str, Any]) -> int:
    """The decoded size of an inline plan's columns over its rows, as Spark + Iceberg estimates a scan's size
    (rows times Spark's default size of each read column's type): each split's rows pro rata of its file's
    bytes. Only the plan's columns are counted (an aggregate plans the few it reads), whatever the files'
    other columns weigh: planned bytes would count them all (two int and double columns of a 15-column
    table: 72 MB against 290 MB of files)."""
    width = sum(_value_bytes(spark_arrow_type(f["type"])) for f in plan["schema"]["fields"])
    files = plan["files"]
    rows = 0.0
    for task in plan["tasks"]:
        for index, _, length in task["splits"]:
            data_file = files[index]["data-file"]
            rows += data_file["record-count"] * length / max(1, int(data_file["file-size-in-bytes"]))
    return int(rows * width)


def _value_bytes(typ: pa.DataType) -> int:
    """Spark's DataType.defaultSize of the Spark type whose Arrow form is `typ` (schema.spark_arrow_type)."""
    if pa.types.is_struct(typ):
        return sum(_value_bytes(typ.field(i).type) for i in range(typ.num_fields))
    if pa.types.is_map(typ):
        return _value_bytes(typ.key_type) + _value_bytes(typ.item_type)
    if pa.types.is_list(typ):
        return _value_bytes(typ.value_type)
    if pa.types.is_decimal(typ):
        return 8 if typ.precision <= 18 else 16
    if pa.types.is_boolean(typ):
        return 1
    if pa.types.is_string(typ):
        return 20
    if pa.types.is_binary(typ):
        return 100
    return 4 if typ.bit_width == 32 else 8  # int, float, date; long, double, timestamps


def local_frame(spark: SparkSession, row: pa.RecordBatch, schema: StructType) -> DataFrame:
    """A DataFrame of one row computed in the driver: on pyspark 4 a local relation made from Arrow, which
    Spark answers without a job (a list would become an RDD, one job at every action); on 3.5 from a list."""
    import pyspark

    if int(pyspark.__version__.split(".")[0]) >= 4:
        return spark.createDataFrame(pa.Table.from_batches([row]), schema)
    return spark.createDataFrame([tuple(row.to_pylist()[0].values())], schema)


def _in_driver(plan: Mapping[str, Any], partials: PartialAggregates, storage: StorageConfig) -> pa.Table:
    """The partial rows of a small inline plan, its tasks read in this process (pyarrow decodes without the
    GIL: a thread a task, up to the cores) instead of a Spark job, whose fixed cost is more than theirs."""
    payloads = expand_tasks(plan, query_salt(plan))
    if not payloads:
        return partials.schema.empty_table()
    with ThreadPoolExecutor(
        min(len(payloads), os.cpu_count() or 1), thread_name_prefix="scan-planner-aggregate"
    ) as pool:
        rows = list(pool.map(lambda payload: next(iter(partials(payload, partials.schema, storage, 0))), payloads))
    return pa.Table.from_batches(rows, schema=partials.schema)


def _collect_arrow(df: DataFrame) -> pa.Table:
    """A DataFrame's rows as Arrow (pyspark 4's toArrow; pyspark 3.5's batches, which toPandas uses)."""
    to_arrow = getattr(type(df), "toArrow", None)
    if to_arrow is not None:
        table: pa.Table = to_arrow(df)
        return table
    batches = type(df)._collect_as_arrow(df)  # type: ignore[attr-defined]
    return pa.Table.from_batches(batches, schema=arrow_schema(df.schema))


def _parse(name: str) -> tuple[str, str | None]:
    """("count" | "min" | "max", the column or None for count(*)) of a canonical aggregate name."""
    match = _AGGREGATE.fullmatch(name)
    if match is None:
        raise ValueError(f"not an aggregate: {name!r}")
    op, column = match[1].lower(), match[2]
    return op, None if column == "*" else column


def _path(schema: Mapping[str, Any], column: str) -> tuple[str, ...]:
    """The names of a (dotted) column through the plan's structs: as written, else ignoring case."""
    for exact in (True, False):
        fields, path = schema["fields"], []
        for part in column.split("."):
            found = [f for f in fields if (f["name"] == part if exact else f["name"].lower() == part.lower())]
            if len(found) != 1:
                break
            path.append(found[0]["name"])
            typ = found[0]["type"]
            fields = typ["fields"] if isinstance(typ, dict) and typ.get("type") == "struct" else []
        else:
            return tuple(path)
    raise ValueError(f"column {column!r} is not in the plan's schema")


def _spark_type(schema: StructType, path: Sequence[str]) -> Any:
    typ: Any = schema
    for name in path:
        typ = typ[name].dataType
    return typ


def _is_atomic(typ: Any) -> bool:
    from pyspark.sql.types import ArrayType, MapType, StructType

    return not isinstance(typ, ArrayType | MapType | StructType)


def _struct(names: Sequence[str], types: Sequence[Any]) -> StructType:
    """A row of aggregates: a long per count (type None), the column's Spark type per min and max."""
    from pyspark.sql.types import LongType, StructField, StructType

    return StructType([StructField(n, LongType() if t is None else t) for n, t in zip(names, types, strict=True)])


def _spark_aggregate(name: str) -> Column:
    """Spark's aggregate for a canonical name the service gave back ("count(*)", "min(info.a)")."""
    from pyspark.sql import functions as F

    op, column = _parse(name)
    if column is None:
        return F.count(F.lit(1)).alias(name)
    fn = {"count": F.count, "min": F.min, "max": F.max}[op]
    return fn(F.col(column)).alias(name)

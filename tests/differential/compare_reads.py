"""Our side of the Spark reads (spark_reads.py) and their verdicts: our grouping="partition" plan's task groups
against Spark + Iceberg's input partitions, and the rows our client's reader reads over our plan against the
rows Spark reads.

Grouping is compared as tests/planning/test_grouping.py compares the conformance cases: each task's grouping
key (our internal values; a decimal as its text, binary as hex, as java_side writes Java's) with its
(path, start, length)s, as a multiset (Iceberg orders the groups by hash, we by key), with Spark's
parallelism (local[2]) for the adaptive split size. Rows: spark_client.read_task over each task of our
plan (its /plan JSON, encode_plan's, split by partitions.expand_tasks), which applies the scan's filter
with SQL's null rules as Spark does; the requested columns, each row's values in read_cases.plain_value's
form, sorted. Restricted rows: the same, planned under the request's "restriction" (a ScanRestriction of its
spec form: the row filter parsed from the JSON that Spark's WHERE was written from, the masks by field id),
so that the plan carries `read-restrictions` and read_task enforces them; against Spark SQL's rows of
spark_reads.restricted_query.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import re
import traceback
from decimal import Decimal
from typing import Any

import orjson
import pyarrow as pa

from planner_service.catalog.base import load_by_metadata_location
from planner_service.errors import PlannerError
from planner_service.expressions.expression import TRUE
from planner_service.planning.planner import ScanPlanner
from planner_service.planning.read_restriction import ScanRestriction
from planner_service.wire.plan_json import encode_plan
from spark_client.partitions import expand_tasks
from spark_client.reader import read_task
from spark_client.schema import arrow_schema
from tests.conformance.read_cases import plain_value
from tests.differential.compare import JAVA_NPE, scan_request
from tests.planning.conformance_plans import task_pieces

SPARK_PARALLELISM = 2  # java_side's SparkSession is local[2]


def our_groups(planner: ScanPlanner, metadata_location: str, request: dict[str, Any]) -> dict[str, Any]:
    """Our grouping="partition" plan of the request without its filter and select: {"groups"}, or
    {"error": message} when we refuse it, {"crash": ...} when we break."""
    try:
        table = load_by_metadata_location(planner.io, metadata_location)
        scan = dataclasses.replace(
            scan_request(request), row_filter=TRUE, select=None, grouping="partition", parallelism=SPARK_PARALLELISM
        )
        plan = planner.plan(table, scan)
        if plan.combined is None or not len(plan.combined):
            return {"groups": []}
        tasks = task_pieces(plan)
        keys = (
            [()] * len(tasks) if plan.grouping is None else [plan.grouping.keys[int(k)] for k in plan.grouping.task_key]
        )
    except PlannerError as err:
        return {"error": err.message}
    except Exception:
        return {"crash": traceback.format_exc()[-3000:]}
    return {
        "groups": [{"key": [_key_value(v) for v in key], "tasks": task} for key, task in zip(keys, tasks, strict=True)]
    }


def _key_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex().upper()
    return value


# Spark cannot read a snapshot, grouped, once a partition field's source column was renamed since: Iceberg
# reports the key's transforms by the current schema's names and Spark resolves them against the snapshot's
SPARK_KEY_NAMES = "Spark's grouped read of an older snapshot resolves the key by current column names"
# nor once a partition field's source column was promoted since (int to long): Iceberg hands Spark the key's
# values as the current type's (Long) under the snapshot's type (int), and Spark's key conversion throws
# "Unknown type for int field. Type name: java.lang.Long" (seed 730046; regressions/grouping-old-snapshot-
# promoted-partition-source.json replays its plan)
SPARK_KEY_TYPES = "Spark's grouped read of an older snapshot types the key's values by current column types"
SPARK_REFUSES_ROWS = "Spark refuses a read that Java plans (the filter's column is not the snapshot's)"
# The service refuses to plan a restricted read whose files' paths name a masked column's partition values
# (Hive-style directories, Iceberg's default): by design (planning/read_restriction.py), Spark has no such rule
OUR_MASKED_PATHS = "we refuse a restricted plan whose file paths name masked partition values (by design)"


def grouping_verdict(java: dict[str, Any], ours: dict[str, Any]) -> tuple[str | None, str | None]:
    """(finding, tolerated): what differs between Spark's task groups and ours (None: nothing), and which
    tolerated difference (SPARK_KEY_NAMES, SPARK_KEY_TYPES, or compare.JAVA_NPE: Spark's planning meets the
    Iceberg bug that Java's does) they show, if any."""
    if "crash" in ours:
        return f"grouping: our planner crashed: {ours['crash'].strip().splitlines()[-1]}", None
    if "error" in java or "error" in ours:
        if "error" in java and "error" in ours:
            return None, None
        if "error" in java:
            if "Unable to resolve " in java["error"]:
                return None, SPARK_KEY_NAMES
            if re.match(
                r"java\.lang\.IllegalStateException: Unknown type for \w+ field\. Type name: ",
                java["error"],
            ):
                return None, SPARK_KEY_TYPES
            if java["error"].startswith("java.lang.NullPointerException"):
                return None, JAVA_NPE
            return f"grouping: we group what Spark refuses: {java['error']}", None
        return f"grouping: we refused what Spark groups: {ours['error']}", None
    expected, got = _group_counter(java["groups"]), _group_counter(ours["groups"])
    if expected == got:
        return None, None
    missing, extra = expected - got, got - expected
    if {k for k, _ in missing} != {k for k, _ in extra}:
        spark_keys, our_keys = sorted({k for k, _ in missing}), sorted({k for k, _ in extra})
        return f"grouping keys: only Spark's {spark_keys}, only ours {our_keys}", None
    first = next(iter(missing))[0]
    return f"grouping tasks: {len(missing)} of Spark's task groups differ from ours (first key {first})", None


def _group_counter(groups: list[dict[str, Any]]) -> collections.Counter[tuple[str, tuple[tuple[Any, ...], ...]]]:
    return collections.Counter((json.dumps(g["key"] or []), tuple(tuple(t) for t in g["tasks"])) for g in groups)


def our_rows(
    planner: ScanPlanner, metadata_location: str, request: dict[str, Any], restricted: bool = False
) -> dict[str, Any]:
    """The rows our client's reader reads over our plan of the request (`restricted`: planned and read under
    its "restriction"): {"columns", "rows"}, or {"error"} when we refuse to plan it, {"crash": ...} when
    planning or reading breaks."""
    try:
        table = load_by_metadata_location(planner.io, metadata_location)
        scan = scan_request(request)
        if restricted:
            scan = dataclasses.replace(scan, restriction=ScanRestriction.from_json(request["restriction"]))
        plan = planner.plan(table, scan)
        body = orjson.loads(b"".join(encode_plan(plan)))
        schema = arrow_schema(body["schema"])
        tasks = expand_tasks(body)  # each task with its files written out, as plan_and_read sends them
        batches = [batch for t in tasks for batch in read_task(t["task"], t["plan"])]
        read = pa.Table.from_batches(batches, schema=schema)
    except PlannerError as err:
        return {"error": err.message}
    except Exception:
        return {"crash": traceback.format_exc()[-3000:]}
    select = request.get("select")
    if select is not None:
        read = read.select(select)
    columns = read.column_names
    values = [[_plain_arrow(v, f.type) for v in read.column(f.name).to_pylist()] for f in read.schema]
    rows = [list(row) for row in zip(*values, strict=True)] if values else []
    return {"columns": columns, "rows": sorted(rows, key=json.dumps)}


def _plain_arrow(value: Any, type_: pa.DataType) -> Any:
    """A value of a pyarrow column as java_side writes Spark's: structs as objects, maps as sorted pairs."""
    if value is None:
        return None
    if pa.types.is_struct(type_):
        return {
            type_.field(i).name: _plain_arrow(value[type_.field(i).name], type_.field(i).type)
            for i in range(type_.num_fields)
        }
    if pa.types.is_map(type_):
        pairs = [[_plain_arrow(k, type_.key_type), _plain_arrow(v, type_.item_type)] for k, v in value]
        return sorted(pairs, key=json.dumps)
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return [_plain_arrow(v, type_.value_type) for v in value]
    return plain_value(value)


def rows_verdict(java: dict[str, Any], ours: dict[str, Any], read: str = "rows") -> tuple[str | None, str | None]:
    """(finding, tolerated): what differs between the rows Spark reads and ours (None: nothing), the finding
    starting with `read` (which read it is). Spark refusing a read Java planned (a filter's column the
    snapshot's schema lacks, say) compares nothing."""
    if "error" in java:
        return None, SPARK_REFUSES_ROWS
    if "crash" in ours:
        return f"{read}: our read crashed: {ours['crash'].strip().splitlines()[-1]}", None
    if "error" in ours:
        return f"{read}: we refused what Spark reads: {ours['error']}", None
    if java["columns"] != ours["columns"]:
        return f"{read}: Spark's columns {java['columns']}, ours {ours['columns']}", None
    if java["rows"] == ours["rows"]:
        return None, None
    expected = collections.Counter(json.dumps(r) for r in java["rows"])
    got = collections.Counter(json.dumps(r) for r in ours["rows"])
    missing, extra = list((expected - got).elements()), list((got - expected).elements())
    firsts = [f"first only Spark's {missing[0][:200]}"] if missing else []
    firsts += [f"first only ours {extra[0][:200]}"] if extra else []
    counts = f"Spark reads {len(java['rows'])}, we read {len(ours['rows'])}"
    return f"{read}: {counts} ({len(missing)} only Spark's, {len(extra)} only ours); {'; '.join(firsts)}", None


def restricted_verdict(
    java: dict[str, Any], ours: dict[str, Any], plain: dict[str, Any]
) -> tuple[str | None, str | None]:
    """rows_verdict of the restricted rows (Spark's `java`, `ours`), beside Spark's unrestricted read of the
    request (`plain`): Spark refusing only the restricted query is a finding too, since its restriction is
    over the columns that read has (a mistake in restricted_query's SQL, most likely)."""
    if "error" in java and "error" not in plain:
        return f"restricted rows: Spark refuses the restricted query: {java['error']}", None
    if "are named by the values of masked column" in ours.get("error", ""):
        return None, OUR_MASKED_PATHS
    return rows_verdict(java, ours, "restricted rows")

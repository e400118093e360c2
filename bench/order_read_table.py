"""Give the read benchmark's narrow table (bench.reads) the sort order its rows were written in: ts ascending.

    <java venv python> bench/order_read_table.py --warehouse DIR [--jars A.jar,B.jar]

make_read_table.py writes ts growing with id and each write task a contiguous id range, so every data file
is sorted by ts and the daily files do not overlap; the table just does not say so. This commits the order
with Iceberg Java's own API (Table.replaceSortOrder().asc(ts, NULLS_FIRST), what Spark's ALTER TABLE ...
WRITE ORDERED BY ts commits): a metadata-only commit, no data written. Done once: a table that has the order
is left as it is. Runs in the pyspark 3.5 venv of scripts/java_env.py (bench/grouping_bench.py starts it);
prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from common import load_java_env
from make_read_table import CATALOG, SHAPES, start_spark


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warehouse", type=Path, required=True)
    parser.add_argument("--jars", help="comma-separated jars (default: from scripts/java_env.py)")
    args = parser.parse_args()
    jars = args.jars.split(",") if args.jars else list(load_java_env().ensure_java_env()["jars"])
    spark = start_spark(jars, args.warehouse)
    try:
        name = f"{CATALOG}.{SHAPES['narrow'].table}"
        jvm = spark.sparkContext._jvm
        table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)
        committed = table.sortOrder().isUnsorted()
        if committed:
            # (py4j does not find the interface's default asc(name): the term and null order, as it calls)
            ts = jvm.org.apache.iceberg.expressions.Expressions.ref("ts")
            table.replaceSortOrder().asc(ts, jvm.org.apache.iceberg.NullOrder.NULLS_FIRST).commit()
            table.refresh()
        print(json.dumps({"table": name, "sort_order": str(table.sortOrder()), "committed": committed}))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

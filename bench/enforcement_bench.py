"""What enforcing read restrictions costs a Spark read, from the user's seat: the same rows of a wide table read
with plan_and_read by two principals of one service, in one run:

- open: no restriction; the row filter written as the caller's own filter (`filter=`);
- restricted: the same filter as its rule's row filter, and two masks (mask-alphanum on a string column,
  truncate-to-month on a timestamp column): the reader applies the filter on the raw values, then the masks.

Both read every column of every matching row to Spark's `noop` sink (local[2]), alternately, --repeat times
after a warm-up each; the figure is the median wall time from plan_and_read to the end of the action, and
the restricted read's share of it over the open one's. The table: `--rows` rows of 16 columns (longs,
doubles, strings, a timestamp, a date), 16 Parquet files, written by PyIceberg into a SQL catalog
(cached under $SCAN_PLANNER_CACHE/bench/enforcement/<rows>).

    .venv/bin/python bench/enforcement_bench.py [--rows 4000000] [--repeat 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import progress, write_json
from service import served

REPO = Path(__file__).resolve().parent.parent
TABLE = "bench.wide"
FILTER = "region = 'eu' AND amount_0 >= 0.25"  # about 3/8 of the rows; no statistics decide the second part
MASKS = {"email": "mask-alphanum", "ts": "truncate-to-month"}
TOKENS = {"open": "open-token-0123456789", "restricted": "restricted-token-0123456789"}
FILES = 16


def _cache() -> Path:
    return Path(os.environ.get("SCAN_PLANNER_CACHE", Path.home() / ".cache" / "scan-planner")) / "bench" / "enforcement"


def ensure_table(rows: int) -> Path:
    """The warehouse directory holding the table (its catalog.db beside), built first when missing."""
    import numpy as np
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    directory = _cache() / str(rows)
    if (directory / "done").exists():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("bench", uri=f"sqlite:///{directory / 'catalog.db'}", warehouse=f"file://{directory}")
    catalog.create_namespace_if_not_exists("bench")
    if catalog.table_exists(TABLE):
        catalog.drop_table(TABLE)
    rng = np.random.default_rng(7)
    per_file = rows // FILES
    table = None
    for k in range(FILES):
        ids = np.arange(k * per_file, (k + 1) * per_file)
        columns: dict[str, Any] = {
            "id": ids,
            "region": pa.array(np.array(["eu", "us", "apac", "latam"])[ids % 4]),
            "email": pa.array([f"customer{i}@example{i % 97}.com" for i in ids.tolist()]),
            "ts": pa.array(
                int((dt.datetime(2024, 1, 1) - dt.datetime(1970, 1, 1)).total_seconds()) * 1_000_000
                + rng.integers(0, 365 * 86_400_000_000, per_file),
                pa.int64(),
            ).cast(pa.timestamp("us")),
            "day": pa.array(rng.integers(19_700, 20_100, per_file), pa.int32()).cast(pa.date32()),
        }
        for j in range(6):
            columns[f"amount_{j}"] = rng.random(per_file)
        for j in range(3):
            columns[f"count_{j}"] = rng.integers(0, 1_000_000, per_file)
        for j in range(2):
            columns[f"note_{j}"] = pa.array([f"note {j}-{i % 1000}" for i in ids.tolist()])
        batch = pa.table(columns)
        if table is None:
            table = catalog.create_table(TABLE, schema=batch.schema)
        table.append(batch)
        progress("enforcement", f"table: file {k + 1}/{FILES}")
    (directory / "done").write_text(str(rows))
    return directory


def _service_config(directory: Path, home: Path) -> Path:
    settings = {
        "catalog_uri": f"sqlite:///{directory / 'catalog.db'}",
        "catalog_name": "bench",
        "allowed_roots": [str(directory)],
        "auth_tokens": {name: token for name, token in TOKENS.items()},
        "access_rules": [
            {"principals": ["open"], "tables": [TABLE], "privileges": ["plan"]},
            {"principals": ["restricted"], "tables": [TABLE], "privileges": ["plan"], "row_filter": FILTER,
             "column_masks": MASKS},
        ],
    }  # fmt: skip
    config = home / "service.json"
    config.write_text(json.dumps(settings))
    return config


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4_000_000, help="rows of the table (4000000)")
    parser.add_argument("--repeat", type=int, default=5, help="timed reads per principal (5)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    directory = ensure_table(args.rows)
    sys.path.insert(0, str(REPO))
    from pyspark.sql import SparkSession

    from spark_client import plan_and_read

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    load = os.getloadavg()[0]
    progress("enforcement", f"load average {load:.2f}; {args.repeat} reads per principal")
    times: dict[str, list[float]] = {name: [] for name in TOKENS}
    with tempfile.TemporaryDirectory(prefix="enforcement-bench-") as home:
        config = _service_config(directory, Path(home))
        with served(["--config", str(config), "--log-level", "warning"], REPO, {"SCAN_PLANNER_HOME": home}) as s:

            def read(name: str) -> float:
                started = time.perf_counter()
                scan: dict[str, Any] = {"filter": FILTER} if name == "open" else {}
                df = plan_and_read(spark, TABLE, service_url=s.url, token=TOKENS[name], **scan)
                df.write.format("noop").mode("overwrite").save()
                return time.perf_counter() - started

            for name in TOKENS:
                read(name)  # warm-up: the plan made, Spark's workers started
            for k in range(args.repeat):
                for name in TOKENS if k % 2 == 0 else reversed(TOKENS):
                    times[name].append(read(name))
                progress("enforcement", f"{k + 1}/{args.repeat}")
    spark.stop()
    medians = {name: statistics.median(t) for name, t in times.items()}
    share = medians["restricted"] / medians["open"] - 1
    report = {
        "rows": args.rows,
        "repeat": args.repeat,
        "load_average": load,
        "filter": FILTER,
        "masks": MASKS,
        "median_s": {name: round(m, 3) for name, m in medians.items()},
        "samples_s": {name: [round(x, 3) for x in t] for name, t in times.items()},
        "enforcement_share": round(share, 4),
    }
    print(f"open {medians['open']:.2f} s, restricted {medians['restricted']:.2f} s: enforcement {share:+.1%}")
    if args.out:
        write_json(args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

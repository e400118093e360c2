"""The embedded demo warehouse: real Iceberg tables written with PyIceberg into a SQL (sqlite) catalog, so
that a fresh machine can plan (and later serve) something without any configuration: `demo.events`, and
`demo.customers`, a second table for the access-control walkthrough (docs/guides/access-control.md) to grant
one and not the other."""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

log = logging.getLogger(__name__)

DEMO_TABLE = "demo.events"
CUSTOMERS_TABLE = "demo.customers"
DEMO_TABLES = (DEMO_TABLE, CUSTOMERS_TABLE)
DEMO_CATALOG_NAME = "demo"
DEMO_VERSION = "2"  # what `.complete` holds: 2 added demo.customers (a warehouse of 1 gets it at start)


def default_demo_dir() -> Path:
    base = Path(os.environ.get("SCAN_PLANNER_HOME", Path.home() / ".local" / "share" / "scan-planner"))
    return base / "demo-warehouse"


def demo_catalog_uri(directory: Path) -> str:
    return f"sqlite:///{directory / 'catalog.db'}"


def ensure_demo_warehouse(directory: Path | None = None) -> Path:
    """Create the demo warehouse once (idempotent): table demo.events, partitioned by day(ts) and region,
    with four snapshots (three appends and a delete) and a tag `first-load`; table demo.customers. A
    warehouse made before demo.customers existed gets it, its demo.events kept as it is."""
    directory = directory or default_demo_dir()
    marker = directory / ".complete"
    made = marker.read_text().strip() if marker.exists() else None
    if made == DEMO_VERSION:
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    log.info("creating demo warehouse", extra={"directory": str(directory), "from-version": made})
    catalog = _demo_catalog(directory)
    if made is None:
        write_demo_table(catalog)
    write_customers_table(catalog)
    marker.write_text(DEMO_VERSION + "\n")
    return directory


def _demo_catalog(directory: Path) -> Catalog:
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(DEMO_CATALOG_NAME, uri=demo_catalog_uri(directory), warehouse=f"file://{directory}")


def write_demo_table(catalog: Catalog) -> None:
    """Write demo.events through a PyIceberg catalog (replacing it if present)."""
    import pyarrow as pa
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import DayTransform, IdentityTransform
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestamptzType

    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "ts", TimestamptzType(), required=True),
        NestedField(3, "region", StringType(), required=False),
        NestedField(4, "amount", DoubleType(), required=False),
    )
    spec = PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="ts_day"),
        PartitionField(source_id=3, field_id=1001, transform=IdentityTransform(), name="region"),
    )
    table = _fresh_table(catalog, DEMO_TABLE, schema, spec)
    arrow_schema = schema.as_arrow()
    start = datetime(2024, 1, 1, tzinfo=UTC)
    regions = ["eu", "us", "apac"]
    for batch in range(3):
        rows = range(batch * 300, (batch + 1) * 300)
        table.append(
            pa.Table.from_pydict(
                {
                    "id": list(rows),
                    "ts": [start + timedelta(hours=i) for i in rows],
                    "region": [regions[i % 3] for i in rows],
                    "amount": [round(i * 1.25, 2) for i in rows],
                },
                schema=arrow_schema,
            )
        )
        if batch == 0:
            first = table.current_snapshot()
            assert first is not None
            table.manage_snapshots().create_tag(first.snapshot_id, "first-load").commit()
    table.delete("region = 'apac'")


def write_customers_table(catalog: Catalog) -> None:
    """Write demo.customers through a PyIceberg catalog (replacing it if present): 30 customers, one append,
    unpartitioned; a table one principal of the walkthrough is granted and the other not."""
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    schema = Schema(
        NestedField(1, "customer_id", LongType(), required=True),
        NestedField(2, "name", StringType(), required=False),
        NestedField(3, "email", StringType(), required=False),
        NestedField(4, "region", StringType(), required=False),
    )
    table = _fresh_table(catalog, CUSTOMERS_TABLE, schema)
    ids = range(1, 31)
    table.append(
        pa.Table.from_pydict(
            {
                "customer_id": list(ids),
                "name": [f"Customer {i}" for i in ids],
                "email": [f"customer{i}@example.com" for i in ids],
                "region": [("eu", "us", "apac")[i % 3] for i in ids],
            },
            schema=schema.as_arrow(),
        )
    )


def _fresh_table(catalog: Catalog, name: str, schema: Any, spec: Any = None) -> Any:
    """Table `name` of the demo namespace made anew (dropped first when present)."""
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC

    catalog.create_namespace_if_not_exists("demo")
    if catalog.table_exists(name):
        catalog.drop_table(name)
    return catalog.create_table(name, schema=schema, partition_spec=spec or UNPARTITIONED_PARTITION_SPEC)

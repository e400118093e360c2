"""The embedded demo warehouse: a real Iceberg table written with PyIceberg into a SQL (sqlite) catalog,
so that a fresh machine can plan (and later serve) something without any configuration."""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

log = logging.getLogger(__name__)

DEMO_TABLE = "demo.events"
DEMO_CATALOG_NAME = "demo"


def default_demo_dir() -> Path:
    base = Path(os.environ.get("SCAN_PLANNER_HOME", Path.home() / ".local" / "share" / "scan-planner"))
    return base / "demo-warehouse"


def demo_catalog_uri(directory: Path) -> str:
    return f"sqlite:///{directory / 'catalog.db'}"


def ensure_demo_warehouse(directory: Path | None = None) -> Path:
    """Create the demo warehouse once (idempotent): table demo.events, partitioned by day(ts) and region,
    with four snapshots (three appends and a delete) and a tag `first-load`."""
    directory = directory or default_demo_dir()
    marker = directory / ".complete"
    if marker.exists():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    log.info("creating demo warehouse", extra={"directory": str(directory)})
    _write_demo(directory)
    marker.write_text("ok\n")
    return directory


def _write_demo(directory: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog(DEMO_CATALOG_NAME, uri=demo_catalog_uri(directory), warehouse=f"file://{directory}")
    write_demo_table(catalog)


def write_demo_table(catalog: Catalog) -> None:
    """Write demo.events through a PyIceberg catalog (replacing it if present)."""
    import pyarrow as pa
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import DayTransform, IdentityTransform
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestamptzType

    catalog.create_namespace_if_not_exists("demo")
    if catalog.table_exists(DEMO_TABLE):
        catalog.drop_table(DEMO_TABLE)
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
    table = catalog.create_table(DEMO_TABLE, schema=schema, partition_spec=spec)
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

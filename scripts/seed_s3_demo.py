"""Write the demo table demo.events into an S3 warehouse and register it in the SQL catalog the planner reads.

    SCAN_PLANNER_CATALOG_URI=sqlite:////data/catalog.db SCAN_PLANNER_S3_ENDPOINT=http://127.0.0.1:9000 \\
    SCAN_PLANNER_S3_ACCESS_KEY_ID=... SCAN_PLANNER_S3_SECRET_ACCESS_KEY=... \\
        python scripts/seed_s3_demo.py --warehouse s3://lake/warehouse

The catalog, its name and the S3 store come from the planner's own settings (planner_service/settings.py), so
a planner given the same SCAN_PLANNER_* environment serves what this wrote: docker-compose.yml's `seed` service
runs it that way before the `planner` starts. The bucket is created if missing; an existing table is kept
(pass --replace to write it again).
"""

from __future__ import annotations

import argparse
import sys
import time

from pyiceberg.catalog.sql import SqlCatalog

from iceberg_io import new_s3_filesystem
from planner_service.demo import DEMO_TABLE, write_demo_table
from planner_service.errors import PlannerError
from planner_service.io.locations import parse_location
from planner_service.io.roots import Roots
from planner_service.service.runtime import storage_config
from planner_service.settings import Settings, load_settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write demo.events into an S3 warehouse and the planner's SQL catalog")
    parser.add_argument("--warehouse", required=True, help="where tables go: s3://bucket/prefix")
    parser.add_argument("--replace", action="store_true", help="write demo.events again if it exists")
    parser.add_argument("--wait", type=float, default=60, help="seconds to wait for the S3 store (default 60)")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
        if not settings.catalog_uri:
            parser.error("set SCAN_PLANNER_CATALOG_URI: the SQL catalog the planner will read")
        location = parse_location(args.warehouse)
        if location.scheme != "s3":
            parser.error(f"--warehouse must be an s3:// location, not {args.warehouse}")
        if settings.allowed_roots:  # else the planner would refuse the table
            Roots(settings.allowed_roots).check(args.warehouse)
    except PlannerError as exc:
        print(f"seed: {exc.message}", file=sys.stderr)
        return 1

    _create_bucket(settings, location.path.split("/")[0], args.wait)
    uri = settings.catalog_uri if "://" in settings.catalog_uri else f"sqlite:///{settings.catalog_uri}"
    catalog = SqlCatalog(settings.catalog_name, uri=uri, warehouse=args.warehouse, **_pyiceberg_s3(settings))
    if catalog.table_exists(DEMO_TABLE) and not args.replace:
        print(f"seed: {DEMO_TABLE} already in the catalog, kept", file=sys.stderr)
        return 0
    write_demo_table(catalog)
    print(f"seed: wrote {DEMO_TABLE}: {catalog.load_table(DEMO_TABLE).metadata_location}", file=sys.stderr)
    return 0


def _create_bucket(settings: Settings, bucket: str, wait_seconds: float) -> None:
    """Create the bucket (a no-op if it exists), retrying while the store is still starting."""
    fs = new_s3_filesystem(storage_config(settings).s3, allow_bucket_creation=True)
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            fs.create_dir(bucket)
            return
        except OSError as exc:
            if time.monotonic() >= deadline:
                raise
            print(f"seed: waiting for S3 at {settings.s3_endpoint}: {exc}", file=sys.stderr)
            time.sleep(2)


def _pyiceberg_s3(settings: Settings) -> dict[str, str]:
    """The settings' S3 store as PyIceberg FileIO properties."""
    properties = {
        "s3.endpoint": settings.s3_endpoint,
        "s3.region": settings.s3_region,
        "s3.access-key-id": settings.s3_access_key_id,
        "s3.secret-access-key": settings.s3_secret_access_key,
        "s3.session-token": settings.s3_session_token,
        "s3.force-virtual-addressing": str(not settings.s3_path_style).lower(),
    }
    return {key: value for key, value in properties.items() if value is not None}


if __name__ == "__main__":
    raise SystemExit(main())

"""Where an Iceberg table's files live and how to reach them: one location parser, one typed storage
configuration read from Iceberg's property names (`s3.*`, `gcs.*`, `adls.*`) and one pyarrow filesystem
factory, shared by the planning service's FileIO and the executors' reader; and a reader of the files a
plan carries presigned URLs for (presigned.py). It needs pyarrow, and httpx for presigned URLs.

    config = StorageConfig.from_properties({"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "eu-west-1"})
    fs, path = resolve("s3://bucket/warehouse/db/t/data/f.parquet", config)
"""

from __future__ import annotations

from iceberg_io.config import AzureConfig, GcsConfig, S3Config, StorageConfig
from iceberg_io.filesystems import filesystem, new_s3_filesystem, open_input_file, read_range, resolve
from iceberg_io.locations import InvalidLocation, Location, join, parse_location

__all__ = [
    "AzureConfig",
    "GcsConfig",
    "InvalidLocation",
    "Location",
    "S3Config",
    "StorageConfig",
    "filesystem",
    "join",
    "new_s3_filesystem",
    "open_input_file",
    "parse_location",
    "read_range",
    "resolve",
]

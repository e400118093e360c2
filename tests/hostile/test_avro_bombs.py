"""Hostile Avro metadata planted in a served warehouse: compression bombs in manifest lists and manifests
(deflate, zstandard, snappy), blocks whose declared record counts are absurd or leave bytes behind. Each is
a 422 naming the file, found while the service's memory stays within its limits, and nothing decoded from
it reaches a plan; the service plans the intact table afterwards.

The tables are copies of the demo table written by PyIceberg; their Avro files are replaced by containers
made here with the original file's own schema, so that only the part under test is wrong.
"""

from __future__ import annotations

import functools
import io
import json
import os
import shutil
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import fastavro
import httpx
import pytest
from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog

from planner_service.demo import DEMO_TABLE, write_demo_table
from tests.conftest import running_service
from tests.hostile.avro_bytes import varint, zigzag
from tests.hostile.fuzzing import peak_rss_mb, service_pid

MIB = 1024 * 1024
LIMIT = 32 * MIB  # the service's max_inflated_bytes in these tests
BOMB = 512 * MIB  # what each bomb inflates to (16 times the limit; 2 KB to 500 KB on disk)
SYNC = b"\x5a" * 16


def container(schema: Any, codec: str, blocks: list[tuple[int, bytes]]) -> bytes:
    """An Avro object container, written by hand (fastavro would not write a lying block): the header
    (schema, codec), then each (record count, block bytes)."""
    header = io.BytesIO()
    meta = {"avro.schema": json.dumps(schema).encode(), "avro.codec": codec.encode()}
    header.write(b"Obj\x01" + zigzag(len(meta)))
    for key, value in meta.items():
        header.write(zigzag(len(key)) + key.encode() + zigzag(len(value)) + value)
    header.write(zigzag(0) + SYNC)
    for count, data in blocks:
        header.write(zigzag(count) + zigzag(len(data)) + data + SYNC)
    return header.getvalue()


@functools.cache
def deflated_zeros(size: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = b"\0" * MIB
    return b"".join(compressor.compress(chunk) for _ in range(size // MIB)) + compressor.flush()


def zstd_zeros(size: int) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(b"\0" * MIB) * (size // MIB)  # frames of 1 MiB each


def snappy_claiming(size: int) -> bytes:
    """A snappy block whose header claims `size` bytes (a CRC follows; the body is short)."""
    return varint(size) + b"\0" * 16 + b"\0\0\0\0"


def schema_of(path: Path) -> Any:
    with path.open("rb") as f:
        return fastavro.reader(f).writer_schema


@pytest.fixture(scope="module")
def hostile_tables(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, dict[str, str]]]:
    """Copies of the demo table, each with one file replaced: (service URL, its pid, table -> that file)."""
    root = tmp_path_factory.mktemp("hostile")
    db = root / "catalog.db"
    planted: dict[str, str] = {}
    cases = (
        "intact",
        "list-deflate",
        "list-zstd",
        "list-snappy",
        "list-count",
        "list-leftover",
        "manifest-deflate",
        "manifest-zstd",
    )
    for kind in cases:
        catalog = PyIcebergSqlCatalog("hostile", uri=f"sqlite:///{db}", warehouse=f"file://{root / kind}")
        write_demo_table(catalog)
        catalog.rename_table(DEMO_TABLE, f"demo.{kind.replace('-', '_')}")
        table = catalog.load_table(f"demo.{kind.replace('-', '_')}")
        snapshot = table.current_snapshot()
        assert snapshot is not None
        manifest_list = Path(snapshot.manifest_list.removeprefix("file://"))
        manifests = [m for m in snapshot.manifests(table.io) if m.added_files_count or m.existing_files_count]
        manifest = Path(manifests[0].manifest_path.removeprefix("file://"))
        target, schema = (
            (manifest, schema_of(manifest))
            if kind.startswith("manifest")
            else (manifest_list, schema_of(manifest_list))
        )
        blocks = {
            "list-deflate": ("deflate", [(BOMB // 64, deflated_zeros(BOMB))]),
            "list-zstd": ("zstandard", [(BOMB // 64, zstd_zeros(BOMB))]),
            "list-snappy": ("snappy", [(10, snappy_claiming(BOMB))]),
            "list-count": ("null", [(10**12, b"\0" * 100)]),
            "list-leftover": ("null", [(1, _real_records(manifest_list, 1) + b"trailing bytes")]),
            "manifest-deflate": ("deflate", [(BOMB // 64, deflated_zeros(BOMB))]),
            "manifest-zstd": ("zstandard", [(BOMB // 64, zstd_zeros(BOMB))]),
        }.get(kind)
        if blocks is not None:
            if kind.startswith("manifest"):  # the manifest list records the manifest's length: keep it right
                data = container(schema, *blocks)
                target.write_bytes(data)
                _fix_manifest_length(manifest_list, manifest, len(data))
            else:
                target.write_bytes(container(schema, *blocks))
            planted[f"demo.{kind.replace('-', '_')}"] = str(target)
    env = {"SCAN_PLANNER_MAX_INFLATED_BYTES": str(LIMIT)}
    with running_service("--catalog-uri", str(db), "--catalog-name", "hostile", env=env) as url:
        yield url, service_pid(url), planted
    shutil.rmtree(root, ignore_errors=True)


def _real_records(manifest_list: Path, count: int) -> bytes:
    """The first `count` records of a manifest list, encoded without a container (one block's bytes)."""
    with manifest_list.open("rb") as f:
        reader = fastavro.reader(f)
        schema = reader.writer_schema
        records = [r for _, r in zip(range(count), reader, strict=False)]
    out = io.BytesIO()
    for record in records:
        fastavro.schemaless_writer(out, schema, record)
    return out.getvalue()


def _fix_manifest_length(manifest_list: Path, manifest: Path, length: int) -> None:
    """Rewrite the manifest list with `manifest`'s new length (the service refuses a longer file)."""
    with manifest_list.open("rb") as f:
        reader = fastavro.reader(f)
        schema, codec = reader.writer_schema, reader.codec
        entries = cast(Iterator[dict[str, Any]], reader)  # a manifest list holds records
        records = [
            {**r, "manifest_length": length} if r["manifest_path"].endswith(manifest.name) else r for r in entries
        ]
    with manifest_list.open("wb") as f:
        fastavro.writer(f, schema, records, codec=codec)


@pytest.mark.parametrize(
    ("table", "reason"),
    [
        ("demo.list_deflate", "inflate past 33,554,432 bytes"),
        ("demo.list_zstd", "inflate past 33,554,432 bytes"),
        ("demo.list_snappy", "inflate past 33,554,432 bytes"),
        ("demo.list_count", "declares 1,000,000,000,000 records"),
        ("demo.list_leftover", "records end 14 bytes before the block does"),
        ("demo.manifest_deflate", "inflate past 33,554,432 bytes"),
        ("demo.manifest_zstd", "inflate past 33,554,432 bytes"),
    ],
)
def test_bombs_and_bad_blocks_are_refused_naming_the_file(
    hostile_tables: tuple[str, int, dict[str, str]], table: str, reason: str
) -> None:
    url, _, planted = hostile_tables
    with httpx.Client(base_url=url, timeout=60) as client:
        response = client.post("/plan", json={"table": table})
        assert response.status_code == 422, response.text[:500]
        message = response.json()["error"]["message"]
        assert planted[table] in message and reason in message, message
        assert client.get("/health").json()["status"] == "ok"
        assert client.post("/plan", json={"table": "demo.intact"}).status_code == 200


def test_memory_stays_bounded_through_every_bomb_at_once(hostile_tables: tuple[str, int, dict[str, str]]) -> None:
    """All the bombs planned together, twice: the service's peak RSS grows by a few times the inflation limit
    (each bomb costs at most the limit while it inflates), not by the gigabyte each claims."""
    from concurrent.futures import ThreadPoolExecutor

    url, pid, planted = hostile_tables
    before = peak_rss_mb(pid, "VmHWM")
    with ThreadPoolExecutor(len(planted)) as pool, httpx.Client(base_url=url, timeout=60) as client:
        statuses = list(pool.map(lambda t: client.post("/plan", json={"table": t}).status_code, [*planted] * 2))
    assert set(statuses) <= {422, 503}, statuses  # 503: admission asked some to come back
    grown = peak_rss_mb(pid, "VmHWM") - before
    assert grown < 8 * LIMIT / MIB, f"peak RSS grew by {grown:.0f} MB"
    assert os.path.exists(f"/proc/{pid}")  # still serving

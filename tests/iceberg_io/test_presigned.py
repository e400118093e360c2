"""A file read through a presigned URL (iceberg_io/presigned.py), against a store answered by httpx's
MockTransport as S3 answers range GETs: pyarrow reads a Parquet file through it as from disk, with a few
requests; a refused URL (403) says to plan again and never shows the URL; a missing object is
FileNotFoundError; other faults are OSErrors a reader may retry. The store itself (moto on loopback, with S3's
check of signatures and expiry) is tests/read_restrictions/test_presigned_files.py's."""

from __future__ import annotations

import io
import re
from collections.abc import Callable

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from iceberg_io.presigned import READ_BYTES, TAIL_BYTES, PresignedFile, PresignedUrlRefused

URL = "http://store.test/bucket/data/f.parquet?X-Amz-Signature=SECRET-SIGNATURE"
LOCATION = "s3://bucket/data/f.parquet"
EXPIRED = b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"


def _parquet(rows: int) -> bytes:
    table = pa.table({"id": list(range(rows)), "name": [f"n{i % 7}" for i in range(rows)]})
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=max(1, rows // 4))
    return sink.getvalue()


def _store(data: bytes, ranges: bool = True) -> tuple[httpx.Client, list[str]]:
    """A client of a store holding `data` (answering ranges as S3 does, or, without `ranges`, always the whole
    object), and the Range headers it was asked with."""
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.headers["range"])
        if not ranges:
            return httpx.Response(200, content=data)
        first, last = re.fullmatch(r"bytes=(\d*)-(\d*)", request.headers["range"]).groups()  # type: ignore[union-attr]
        start = max(0, len(data) - int(last)) if not first else int(first)
        end = len(data) if not first or not last else min(len(data), int(last) + 1)
        if start >= len(data):
            return httpx.Response(416, headers={"Content-Range": f"bytes */{len(data)}"})
        headers = {"Content-Range": f"bytes {start}-{end - 1}/{len(data)}"}
        return httpx.Response(206, content=data[start:end], headers=headers)

    return httpx.Client(transport=httpx.MockTransport(answer)), asked


@pytest.mark.parametrize("ranges", [True, False], ids=["ranges", "whole-object"])
def test_pyarrow_reads_a_parquet_file_through_it(ranges: bool) -> None:
    data = _parquet(50_000)
    client, asked = _store(data, ranges)
    source = pa.PythonFile(PresignedFile(LOCATION, URL, client), mode="r")
    assert pq.ParquetFile(source, pre_buffer=True).read() == pq.read_table(io.BytesIO(data))
    assert asked[0] == f"bytes=-{TAIL_BYTES}"  # the size and the footer, at once
    assert len(asked) <= 2 + len(data) // READ_BYTES


def test_seeks_and_reads_as_a_file() -> None:
    data = bytes(range(256)) * 4000
    client, asked = _store(data)
    f = PresignedFile(LOCATION, URL, client)
    assert f.seek(0, io.SEEK_END) == len(data) and f.read(10) == b""
    f.seek(1000)
    assert f.read(300_000) == data[1000:301_000] and f.tell() == 301_000
    assert f.seek(-5, io.SEEK_CUR) == 300_995 and f.read(5) == data[300_995:301_000]  # (from the kept block)
    buffer = bytearray(7)
    f.seek(3)
    assert f.readinto(buffer) == 7 and bytes(buffer) == data[3:10]
    assert len(asked) == 3


def test_an_empty_object() -> None:
    client, _ = _store(b"")
    f = PresignedFile(LOCATION, URL, client)
    assert f.seek(0, io.SEEK_END) == 0 and f.read() == b""


def _answering(status: int, body: bytes = b"") -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(status, content=body)))


def test_a_refused_url_says_to_plan_again_and_never_shows_the_url() -> None:
    f = PresignedFile(LOCATION, URL, _answering(403, EXPIRED))
    with pytest.raises(PresignedUrlRefused) as refused:
        f.read(10)
    message = str(refused.value)
    assert message == (
        f"The plan's presigned URL for {LOCATION} expired or was refused (the store answered 403: AccessDenied, "
        "Request has expired): plan the scan again"
    )
    assert "SECRET-SIGNATURE" not in message and "http" not in message
    assert refused.value.__cause__ is None and refused.value.__context__ is None  # (no httpx error behind it)


def _raising(error: Callable[[httpx.Request], Exception]) -> httpx.Client:
    def answer(request: httpx.Request) -> httpx.Response:
        raise error(request)

    return httpx.Client(transport=httpx.MockTransport(answer))


@pytest.mark.parametrize(
    ("client", "error", "text"),
    [
        (_answering(404), FileNotFoundError, f"File not found: {LOCATION}"),
        (_answering(503, b"<Error><Code>SlowDown</Code></Error>"), OSError, "the store answered HTTP 503: SlowDown"),
        (_raising(lambda r: httpx.ConnectError(f"cannot reach {r.url}", request=r)), OSError, "ConnectError"),
    ],
    ids=["missing", "throttled", "unreachable"],
)
def test_other_faults(client: httpx.Client, error: type[Exception], text: str) -> None:
    with pytest.raises(error) as raised:
        PresignedFile(LOCATION, URL, client).read(10)
    assert text in str(raised.value) and "SECRET-SIGNATURE" not in str(raised.value)
    assert not isinstance(raised.value, PresignedUrlRefused)


def test_a_body_cut_short_is_an_oserror() -> None:
    short = httpx.Response(206, content=b"abc", headers={"Content-Range": "bytes 0-9/100"})
    f = PresignedFile(LOCATION, URL, httpx.Client(transport=httpx.MockTransport(lambda request: short)))
    with pytest.raises(OSError, match="cut the read short"):
        f.read(10)

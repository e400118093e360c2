"""Files read through presigned URLs: a plan made under read restrictions carries, for each of its files on
S3, a GET URL the service signed for that one object and a short while (the plan's `file-urls`), so that a
reader with no storage access of its own reads exactly the planned files and no others.

`PresignedFile` is a seekable, read-only file over HTTP range GETs of such a URL (httpx), which pyarrow
reads as any file (`pa.PythonFile`): Parquet footers and column chunks, ORC stripes, Avro blocks. Its first
read of the end of the file asks for the last TAIL_BYTES (a suffix range), which tells the object's size
and holds the footer; each other read asks for at least READ_BYTES, and the last block read is kept.

A URL is a bearer credential for its object: it never appears in an error message. A store that refuses it
(S3 answers 403 once it has expired, or for a URL that was altered) fails the read with PresignedUrlRefused,
which says to plan again (no retry helps); a store that is not reached, or cuts a read short, is an OSError
that a reader may retry."""

from __future__ import annotations

import io
import os
import re
import threading

import httpx
import pyarrow as pa

__all__ = ["PresignedFile", "PresignedUrlRefused", "open_presigned"]

TAIL_BYTES = 64 * 1024  # the end of the file asked for first: a Parquet or ORC footer, mostly
READ_BYTES = 256 * 1024  # the least a read asks for (Avro's reader reads a few KiB at a time)
CONNECT_SECONDS = 10.0
READ_SECONDS = 60.0
_CODE = re.compile(rb"<Code>([A-Za-z]+)</Code>")
_MESSAGE = re.compile(rb"<Message>([^<]{1,200})</Message>")


class PresignedUrlRefused(PermissionError):
    """The store refused a file's presigned URL (expired, or altered): only a new plan has a good one."""


def open_presigned(location: str, url: str) -> pa.NativeFile:
    """The file at `location`, read through its presigned `url`, as a pyarrow random-access file."""
    return pa.PythonFile(PresignedFile(location, url), mode="r")


class PresignedFile(io.RawIOBase):
    """A read-only, seekable file over range GETs of a presigned URL (`location` names it in errors), asked
    with `client` (default: the process's)."""

    def __init__(self, location: str, url: str, client: httpx.Client | None = None) -> None:
        super().__init__()
        self.location = location
        self._url = url
        self._client = client
        self._position = 0
        self._size: int | None = None
        self._kept = (0, b"")  # the last bytes read: (their offset, the bytes)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            position = offset
        elif whence == io.SEEK_CUR:
            position = self._position + offset
        elif whence == io.SEEK_END:
            position = self.size() + offset
        else:
            raise ValueError(f"Invalid whence {whence}")
        if position < 0:
            raise OSError(f"Cannot seek {self.location} to {position}")
        self._position = position
        return position

    def size(self) -> int:
        """The object's size (asked with the file's last TAIL_BYTES, which are kept)."""
        if self._size is None:
            self._get_tail()
        assert self._size is not None
        return self._size

    def read(self, size: int | None = -1) -> bytes:
        end = self.size() if size is None or size < 0 else self._position + size
        if self._size is not None:
            end = min(end, self._size)
        if end <= self._position:
            return b""
        data = self._bytes(self._position, end)
        self._position += len(data)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        memoryview(buffer).cast("B")[: len(data)] = data
        return len(data)

    def _bytes(self, start: int, end: int) -> bytes:
        """Bytes start .. end - 1 (fewer at the end of the file): from the kept block, else asked for."""
        offset, kept = self._kept
        if not (offset <= start and end <= offset + len(kept)):
            wanted = max(end, start + READ_BYTES)
            if self._size is not None:
                wanted = min(wanted, self._size)
            offset, kept = start, self._get(start, wanted)
            self._kept = (offset, kept)
        return kept[start - offset : end - offset]

    def _get_tail(self) -> None:
        """Ask for the last TAIL_BYTES (all of a smaller file): they tell the size, and are kept. A store that
        takes no suffix range (Azure Blob: its SAS URLs carry `sig=`, S3's `X-Amz-Signature=`) is asked for
        its first byte first, whose Content-Range tells the size."""
        if "X-Amz-Signature=" not in self._url:
            first = self._request("bytes=0-0")
            size = 0 if first.status_code == 416 else _total(first.headers.get("content-range"))
            if first.status_code == 200:
                size = len(first.content)
            if size is None:
                raise OSError(f"Cannot read {self.location}: the store's answer tells no size of it")
            self._size = size
            start = max(0, size - TAIL_BYTES)
            self._kept = (start, self._get(start, size) if size else b"")
            return
        response = self._request(f"bytes=-{TAIL_BYTES}")
        if response.status_code == 416:  # (an empty object has no last bytes)
            self._size, self._kept = 0, (0, b"")
            return
        data = response.content
        total = _total(response.headers.get("content-range")) if response.status_code == 206 else len(data)
        if total is None or len(data) > total:
            raise OSError(f"Cannot read {self.location}: the store's answer tells no size of it")
        self._size, self._kept = total, (total - len(data), data)

    def _get(self, start: int, end: int) -> bytes:
        """Bytes start .. end - 1 of the object, as the store sends them (a short read is an OSError)."""
        response = self._request(f"bytes={start}-{end - 1}")
        if response.status_code == 416:
            return b""
        data = response.content
        if response.status_code == 200:  # (a store that ignores ranges sends the whole object)
            self._size = len(data)
            data = data[start:end]
        elif self._size is None:
            self._size = _total(response.headers.get("content-range"))
        wanted = end - start if self._size is None else max(0, min(end, self._size) - start)
        if len(data) < wanted:
            raise OSError(f"Cannot read {self.location}: the store cut the read short ({len(data)} of {wanted} bytes)")
        return data

    def _request(self, byte_range: str) -> httpx.Response:
        try:
            response = (self._client or _client()).get(self._url, headers={"Range": byte_range})
        except httpx.HTTPError as exc:  # never its text: it may hold the URL
            raise OSError(f"Cannot read {self.location} through its presigned URL: {type(exc).__name__}") from None
        status = response.status_code
        if status == 403:
            raise PresignedUrlRefused(
                f"The plan's presigned URL for {self.location} expired or was refused (the store answered 403"
                f"{_store_error(response.content)}): plan the scan again"
            )
        if status == 404:
            raise FileNotFoundError(f"File not found: {self.location}")
        if status not in (200, 206, 416):
            raise OSError(
                f"Cannot read {self.location} through its presigned URL: the store answered HTTP {status}"
                f"{_store_error(response.content)}"
            )
        return response


def _total(content_range: str | None) -> int | None:
    """The object's size from `Content-Range: bytes a-b/size` (None: not told)."""
    if not content_range or "/" not in content_range:
        return None
    total = content_range.rsplit("/", 1)[1].strip()
    return int(total) if total.isdigit() else None


def _store_error(body: bytes) -> str:
    """`: <Code> (<Message>)` of an S3 error answer, when it has one."""
    code, message = _CODE.search(body[:4096]), _MESSAGE.search(body[:4096])
    if code is None:
        return ""
    text = code.group(1).decode()
    return f": {text}" + (f", {message.group(1).decode(errors='replace')}" if message else "")


_CLIENTS: dict[int, httpx.Client] = {}  # one HTTP client per process (Spark's Python workers fork)
_LOCK = threading.Lock()


def _client() -> httpx.Client:
    """This process's client (connections kept; connecting retried twice, as a reader retries a read)."""
    with _LOCK:
        client = _CLIENTS.get(os.getpid())
        if client is None:
            timeout = httpx.Timeout(READ_SECONDS, connect=CONNECT_SECONDS)
            transport = httpx.HTTPTransport(retries=2)
            client = _CLIENTS[os.getpid()] = httpx.Client(timeout=timeout, follow_redirects=False, transport=transport)
        return client

"""FileIO over pyarrow.fs: local paths, file:, s3: (s3a:, s3n:), gs:, Azure's and hdfs: locations, through the
filesystems iceberg_io makes (one factory for the service, the executors and the scripts)."""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pyarrow.fs as pafs

import iceberg_io
from iceberg_io import StorageConfig
from planner_service.cache import LruCache
from planner_service.errors import CorruptMetadataError, MissingFileError, StorageError
from planner_service.io.locations import Location, parse_location
from planner_service.io.roots import Roots, under


class FileNotFound(MissingFileError):
    """The location does not exist (callers make it a missing table, or a lost manifest)."""


class UnreadableFile(CorruptMetadataError):
    """Not a regular file (a directory, a FIFO, a device), or longer than a read may be."""


class _ShortRead(Exception):
    """The store sent fewer bytes than the object has (it says how many)."""


T = TypeVar("T")
PARSED_CACHE_BYTES = 64 * 1024 * 1024
MAX_FILE_BYTES = 512 * 1024 * 1024  # the default ceiling of one read (settings: max_file_bytes)
# The most the blocks of one Avro file (a manifest list, a manifest) may inflate to, in all (settings:
# max_inflated_bytes): Iceberg writes manifests of 8 MiB (commit.manifest.target-size-bytes), about 40 MiB
# inflated, so 256 MiB leaves room for six times that; a compression bomb is stopped there.
MAX_INFLATED_BYTES = 256 * 1024 * 1024
MAX_SCOPED_PREFIXES = 1024  # storage configurations kept by prefix
TAIL_BYTES = 16  # read again alone to tell a store's cut-short body from a corrupt file (read_checked)
SHORT_READ_ATTEMPTS = 3  # reads of a file whose body the store cut short, in all
SHORT_READ_BACKOFF_SECONDS = 0.1  # before the second attempt; doubled before each next one


class FileIO:
    """Reads whole files and lists directories; every location is checked against the roots first (the
    service's are its configured roots; without `roots`, a library reads anywhere).

    Files that never change once written (metadata.json) can be read parsed through `read_parsed`, which
    keeps the parsed value by location (the roots are checked on every call, hit or miss)."""

    def __init__(
        self,
        storage: StorageConfig | None = None,
        roots: Roots | None = None,
        max_bytes: int = MAX_FILE_BYTES,
        max_inflated: int = MAX_INFLATED_BYTES,
    ) -> None:
        """`storage`: how to reach the object stores; `max_inflated`: the most the blocks of one Avro file
        read through it may inflate to (its readers' limit)."""
        self.storage = storage or StorageConfig()
        self.roots = roots or Roots.everywhere()
        self.max_bytes = max_bytes
        self.max_inflated = max_inflated
        self._scoped: dict[Location, StorageConfig] = {}  # the configuration of reads under a prefix (vended)
        self._lock = threading.Lock()
        self.parsed: LruCache[Any] = LruCache(PARSED_CACHE_BYTES, lambda entry: entry[1])

    def read_parsed(self, location: str, kind: str, parse: Callable[[bytes], T]) -> T:
        """`parse(bytes of an immutable file)`, kept by (kind, location) and weighed by 8x the file's size."""
        self.roots.check(location)  # whatever the cache holds
        key = f"{kind}\0{location}"
        hit = self.parsed.get(key)
        if hit is None:
            hit = self.read_checked(location, lambda data: (parse(data), 8 * len(data) + 1024))
            self.parsed.put(key, hit)
        value: T = hit[0]
        return value

    def read(self, location: str, length: int | None = None) -> bytes:
        """The whole file: a regular file (never a directory, FIFO or device), of at most `max_bytes`, and
        at most `length` bytes when the caller knows its length (a manifest list records each manifest's).

        The store's transient faults (throttling, 5xx, resets, timeouts) are retried by its client (the AWS
        SDK's standard strategy: 3 attempts with backoff); a read that ends before the size the store gives
        for the object is read again, at most SHORT_READ_ATTEMPTS times in all, then fails as a StorageError:
        a fault of the store, never taken for a corrupt file (read_checked also catches a body cut short
        behind a matching Content-Length, once a parse fails)."""
        return self.read_checked(location, lambda data: data, length)

    def read_checked(self, location: str, parse: Callable[[bytes], T], length: int | None = None) -> T:
        """`parse` of the file's bytes (as `read` reads them), where a parse that fails (CorruptMetadataError)
        on bytes the store did not hold is a read cut short: read again.

        pyarrow's S3 reads return the length asked for even when the store sends less (a body cut short
        behind a Content-Length that matches it): the rest is whatever the buffer held. So when a file from
        an object store does not parse, it is read again to see whether the store holds these bytes: its
        last TAIL_BYTES on their own (a body too short to be cut), then the whole file. If either differs
        from the first read, the store cut that read short (read again, at most SHORT_READ_ATTEMPTS times in
        all, then a StorageError); if both agree, the store holds these bytes and the file is corrupt (the
        error stands). (The tail alone is not enough: a read broken early, its header garbled, can still end
        with the file's own last bytes.)"""
        for attempt in range(1, SHORT_READ_ATTEMPTS + 1):
            try:
                data = self.read_once(location, length)
                try:
                    return parse(data)
                except CorruptMetadataError as corrupt:
                    if (misread := self._misread(location, data, length)) is not None:
                        raise _ShortRead(misread) from corrupt
                    raise
            except _ShortRead as short:
                if attempt == SHORT_READ_ATTEMPTS:
                    raise StorageError(
                        f"Cannot read {location}: the store cut the read short ({short}) {attempt} times; retry later"
                    ) from None
                time.sleep(SHORT_READ_BACKOFF_SECONDS * 2 ** (attempt - 1))
        raise AssertionError("unreachable")

    def _misread(self, location: str, data: bytes, length: int | None) -> str | None:
        """How `data` differs from what the store holds (its tail read alone, then the whole file read again);
        None when it does not, or for a local file (nothing pads its reads)."""
        loc = self.roots.check(location)
        if loc.scheme == "file":
            return None
        if len(data) >= TAIL_BYTES:
            try:
                fs, path = self._fs(loc)
                with fs.open_input_file(path) as stream:
                    tail = stream.read_at(TAIL_BYTES, len(data) - TAIL_BYTES)
            except (OSError, ValueError) as exc:
                raise StorageError(f"Cannot read {location}: {_reason(exc, loc)}") from None
            if bytes(tail) != data[-TAIL_BYTES:]:
                return f"its last {TAIL_BYTES} bytes read alone differ"
        if self.read_once(location, length) != data:
            return "a second read of it differs"
        return None

    def read_once(self, location: str, length: int | None = None) -> bytes:
        """The whole file, read once (`read` without its retries of reads the store cut short)."""
        loc = self.roots.check(location)
        cap = self.max_bytes if length is None or length <= 0 else min(length, self.max_bytes)
        try:
            fs, path = self._fs(loc)
            if loc.scheme == "file" and not stat.S_ISREG(os.stat(loc.path).st_mode):  # (follows symlinks)
                raise UnreadableFile(f"Cannot read {location}: not a regular file")
            with fs.open_input_file(path) as stream:
                size = stream.size()  # (the store's, from its HEAD answer)
                data = stream.read(min(size, cap + 1))
        except FileNotFoundError:
            raise FileNotFound(f"File not found: {location}") from None
        except (OSError, ValueError) as exc:
            if "not found" in str(exc).lower() or "NoSuchKey" in str(exc):
                raise FileNotFound(f"File not found: {location}") from None
            raise StorageError(f"Cannot read {location}: {_reason(exc, loc)}") from None
        if size > cap:
            what = "its recorded length" if cap == length else "the max_file_bytes setting"
            raise UnreadableFile(f"Cannot read {location}: longer than {cap:,} bytes ({what})")
        if len(data) < size:
            raise _ShortRead(f"{len(data):,} of its {size:,} bytes")
        return bytes(data)

    def write(self, location: str, data: bytes) -> None:
        """Write `data` as the whole object (or file) at `location`, within the roots: only the service's own
        stores are written (the index's shared store), never a table's. StorageError when the store refuses."""
        loc = self.roots.check(location)
        try:
            fs, path = self._fs(loc)
            if loc.scheme == "file":
                fs.create_dir(os.path.dirname(path), recursive=True)
            with fs.open_output_stream(path) as stream:
                stream.write(data)
        except (OSError, ValueError) as exc:
            raise StorageError(f"Cannot write {location}: {_reason(exc, loc)}") from None

    def exists(self, location: str) -> bool:
        return bool(self._info(location).type != pafs.FileType.NotFound)

    def is_directory(self, location: str) -> bool:
        """A directory (on an object store: a prefix with objects under it)."""
        return bool(self._info(location).type == pafs.FileType.Directory)

    def list_names(self, location: str, directories_only: bool = False) -> list[str]:
        """Base names directly under a directory (only its subdirectories, with `directories_only`); empty
        if it does not exist."""
        loc = self.roots.check(location)
        try:
            fs, path = self._fs(loc)
            infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        except OSError as exc:
            raise StorageError(f"Cannot list {location}: {_reason(exc, loc)}") from None
        return sorted(i.base_name for i in infos if not directories_only or i.type == pafs.FileType.Directory)

    def _info(self, location: str) -> pafs.FileInfo:
        loc = self.roots.check(location)
        try:
            fs, path = self._fs(loc)
            return fs.get_file_info(path)
        except OSError as exc:
            raise StorageError(f"Cannot stat {location}: {_reason(exc, loc)}") from None

    def use_storage_properties(self, prefix: str, properties: Mapping[str, str]) -> None:
        """Reads under `prefix` use these storage properties (Iceberg's keys, e.g. a catalog's vended
        `s3.access-key-id`) over the service's own settings; the longest prefix wins. Local prefixes need none."""
        loc = parse_location(prefix)
        if loc.scheme == "file":
            return
        with self._lock:
            if loc not in self._scoped and len(self._scoped) >= MAX_SCOPED_PREFIXES:
                self._scoped.clear()  # (each table's load sets its own again)
            try:
                self._scoped[loc] = self.storage.with_properties(properties)
            except ValueError as exc:  # (a catalog vended what no store takes)
                raise StorageError(f"Cannot read under {prefix}: {exc}") from None

    def storage_for(self, loc: Location) -> StorageConfig:
        """The storage configuration a location is read with: the service's own, or the one set for the
        longest prefix that holds it (use_storage_properties)."""
        if loc.scheme == "file":
            return self.storage
        with self._lock:
            scoped = [prefix for prefix in self._scoped if under(loc, (prefix,))]
            return self._scoped[max(scoped, key=lambda p: len(p.path))] if scoped else self.storage

    def _fs(self, loc: Location) -> tuple[pafs.FileSystem, str]:
        """The filesystem a location is read from, and the path within it."""
        return iceberg_io.filesystem(loc, self.storage_for(loc))


def _reason(exc: BaseException, loc: Location) -> str:
    """Why storage failed, without the resolved path (a client sees the location it gave, not where a link
    led): the OS's reason for local files, the store's message for S3."""
    if loc.scheme == "file":
        if isinstance(exc, OSError) and (exc.strerror or exc.errno):
            return exc.strerror or os.strerror(exc.errno or 0)
        return type(exc).__name__
    return _store_reason(str(exc).replace(loc.path, "<location>"))


_STORE_FAULTS = (  # what the AWS SDK's message holds -> what happened, and what to do
    (
        re.compile(r"ACCESS_DENIED|AccessDenied|HTTP status 403"),
        "the store denied access (403): check the service's S3 credentials and the bucket's policy",
    ),
    (re.compile(r"HTTP status (503)|SLOW_DOWN|SlowDown"), "the store is throttling or unavailable (503); retry later"),
    (re.compile(r"HTTP status (5\d\d)"), "the store failed (HTTP {0}); retry later"),
    (
        re.compile(r"curlCode: 28|[Tt]imeout was reached|timed out"),
        "the store did not answer within the S3 timeouts (s3_connect_timeout_seconds, s3_request_timeout_seconds)",
    ),
    (re.compile(r"curlCode: 18|partial file"), "the store cut the read short; retry later"),
    (
        re.compile(r"curlCode: (6|7)\b|[Cc]ouldn't connect|[Cc]ould not resolve"),
        "cannot connect to the store (s3_endpoint)",
    ),
)


def _store_reason(message: str) -> str:
    """The SDK's message made plain where it names a known fault (it stays, after it, for the log)."""
    for pattern, reason in _STORE_FAULTS:
        found = pattern.search(message)
        if found:
            return f"{reason.format(*found.groups())} [{message}]"
    return message

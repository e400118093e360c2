"""FileIO over pyarrow.fs: local paths, file:, s3: (s3a:, s3n:), gs:, Azure's and hdfs: locations, through the
filesystems spark_client.storage makes (one factory for the service, the executors and the scripts)."""

from __future__ import annotations

import os
import re
import stat
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any, TypeVar

import pyarrow.fs as pafs

from planner_service.cache import LruCache
from planner_service.errors import CorruptMetadataError, MissingFileError, StorageError
from planner_service.io.locations import Location, parse_location
from planner_service.io.roots import Roots, under
from planner_service.io.storage_config import S3Config, s3_config
from spark_client import storage  # the filesystems, as the executors' reader makes them (not the reader itself)


class FileNotFound(MissingFileError):
    """The location does not exist (callers map this to a missing table or a 503 for a lost manifest)."""


class UnreadableFile(CorruptMetadataError):
    """Not a regular file (a directory, a FIFO, a device), or longer than a read may be (422)."""


T = TypeVar("T")
PARSED_CACHE_BYTES = 64 * 1024 * 1024
MAX_FILE_BYTES = 512 * 1024 * 1024  # the default ceiling of one read (settings: max_file_bytes)
# The most the blocks of one Avro file (a manifest list, a manifest) may inflate to, in all (settings:
# max_inflated_bytes): Iceberg writes manifests of 8 MiB (commit.manifest.target-size-bytes), about 40 MiB
# inflated, so 256 MiB leaves room for six times that; a compression bomb is stopped there.
MAX_INFLATED_BYTES = 256 * 1024 * 1024
MAX_SCOPED_PREFIXES = 1024  # storage configurations kept by prefix (and filesystems by configuration)


class FileIO:
    """Reads whole files and lists directories; every location is checked against the roots first (the
    service's are its configured roots; without `roots`, a library reads anywhere).

    Files that never change once written (metadata.json) can be read parsed through `read_parsed`, which
    keeps the parsed value by location (the roots are checked on every call, hit or miss)."""

    def __init__(
        self,
        s3: S3Config | None = None,
        roots: Roots | None = None,
        max_bytes: int = MAX_FILE_BYTES,
        properties: Mapping[str, str] | None = None,
        max_inflated: int = MAX_INFLATED_BYTES,
    ) -> None:
        """`s3`: S3's settings; `properties`: the other stores' as Iceberg's storage properties (gcs.*,
        adls.*, as spark_client.storage takes them); `max_inflated`: the most the blocks of one Avro file
        read through it may inflate to (its readers' limit)."""
        self._s3_config = s3 or S3Config()
        self._properties = dict(properties or {})
        self.roots = roots or Roots.everywhere()
        self.max_bytes = max_bytes
        self.max_inflated = max_inflated
        self._local = pafs.LocalFileSystem()
        self._s3: dict[S3Config, pafs.S3FileSystem] = {}  # a filesystem per configuration in use
        self._scoped: dict[Location, dict[str, str]] = {}  # storage properties for reads under a prefix (vended)
        self._lock = threading.Lock()
        self.parsed: LruCache[Any] = LruCache(PARSED_CACHE_BYTES, lambda entry: entry[1])

    def read_parsed(self, location: str, kind: str, parse: Callable[[bytes], T]) -> T:
        """`parse(bytes of an immutable file)`, kept by (kind, location) and weighed by 8x the file's size."""
        self.roots.check(location)  # whatever the cache holds
        key = f"{kind}\0{location}"
        hit = self.parsed.get(key)
        if hit is None:
            data = self.read(location)
            hit = (parse(data), 8 * len(data) + 1024)
            self.parsed.put(key, hit)
        value: T = hit[0]
        return value

    def read(self, location: str, length: int | None = None) -> bytes:
        """The whole file: a regular file (never a directory, FIFO or device), of at most `max_bytes`, and
        at most `length` bytes when the caller knows its length (a manifest list records each manifest's)."""
        loc = self.roots.check(location)
        cap = self.max_bytes if length is None or length <= 0 else min(length, self.max_bytes)
        try:
            fs, path = self._fs(loc)
            if loc.scheme == "file" and not stat.S_ISREG(os.stat(loc.path).st_mode):  # (follows symlinks)
                raise UnreadableFile(f"Cannot read {location}: not a regular file")
            with fs.open_input_stream(path) as stream:
                data = stream.read(cap + 1)
        except FileNotFoundError:
            raise FileNotFound(f"File not found: {location}") from None
        except (OSError, ValueError) as exc:
            if "not found" in str(exc).lower() or "NoSuchKey" in str(exc):
                raise FileNotFound(f"File not found: {location}") from None
            raise StorageError(f"Cannot read {location}: {_reason(exc, loc)}") from None
        if len(data) > cap:
            what = "its recorded length" if cap == length else "the max_file_bytes setting"
            raise UnreadableFile(f"Cannot read {location}: longer than {cap:,} bytes ({what})")
        return bytes(data)

    def exists(self, location: str) -> bool:
        return self._info(location).type != pafs.FileType.NotFound

    def is_directory(self, location: str) -> bool:
        """A directory (on an object store: a prefix with objects under it)."""
        return self._info(location).type == pafs.FileType.Directory

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
            self._scoped[loc] = dict(properties)

    def _fs(self, loc: Location) -> tuple[pafs.FileSystem, str]:
        """The filesystem a location is read from, and the path within it."""
        if loc.scheme == "file":
            return self._local, loc.path
        with self._lock:
            scoped = [prefix for prefix in self._scoped if under(loc, (prefix,))]
            vended = self._scoped[max(scoped, key=lambda p: len(p.path))] if scoped else {}
        if loc.scheme == "s3":
            config = s3_config(vended, self._s3_config) if vended else self._s3_config
            with self._lock:
                fs = self._s3.get(config)
                if fs is None:
                    if len(self._s3) >= MAX_SCOPED_PREFIXES:
                        self._s3.clear()
                    fs = self._s3[config] = storage.new_s3_filesystem(**asdict(config))
            return fs, loc.path
        properties = {**self._properties, **vended}
        if loc.scheme == "gs":
            return storage.gcs_filesystem(properties), loc.path
        if loc.scheme == "azure":
            account, _, path = loc.path.partition("/")
            return storage.azure_filesystem(account, properties), path
        return storage.hdfs_filesystem(loc.uri), "/" + loc.path.partition("/")[2]


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

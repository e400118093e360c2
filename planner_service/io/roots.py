"""Where the service may read: its roots. A location outside them is refused before any I/O.

A service's roots are what it was configured to serve: the `allowed_roots` setting when given (the whole
list), otherwise the warehouse, the explicit tables' directories, the demo warehouse and the tables its SQL
catalog names. Local locations are resolved (`..`, symlinks) before they are compared, so a link inside a
root that points outside is outside; object-store keys (S3, GCS,
Azure, HDFS) with `.` or `..` segments are refused. Library use (the CLI,
tests, benchmarks) reads anywhere with `Roots.everywhere()`."""

from __future__ import annotations

import logging
import os
import posixpath
import stat
import threading
import time
from collections.abc import Callable, Iterable

from planner_service.errors import LocationNotAllowedError
from planner_service.io.locations import Location, parse_location

log = logging.getLogger(__name__)

REFRESH_SECONDS = 1.0  # a refused location asks the catalogs again at most this often; directories resolved
MAX_KNOWN_DIRECTORIES = 4096  # resolved directories kept (all forgotten at once beyond)


def table_root(metadata_location: str) -> str:
    """The directory of a table from one of its metadata files: the parent of `metadata/`, else the
    file's own directory (a custom write.metadata.path)."""
    directory = posixpath.dirname(metadata_location.rstrip("/"))
    return posixpath.dirname(directory) if posixpath.basename(directory) == "metadata" else directory


def table_directory(metadata_location: str) -> Location:
    """The directory of the table of `metadata_location`, as storage reads it (local paths resolved)."""
    return directory_of(parse_location(absolute(metadata_location)))


def directory_of(metadata_file: Location, realpath: Callable[[str], str] = os.path.realpath) -> Location:
    """The directory of the table of a parsed metadata file location (a local one resolved by `realpath`)."""
    directory = table_root(metadata_file.path)
    return Location(metadata_file.scheme, realpath(directory) if metadata_file.scheme == "file" else directory)


def absolute(location: str) -> str:
    """A configured location with a relative local path made absolute (against the working directory)."""
    loc = parse_location(location)
    return os.path.abspath(loc.path) if loc.scheme == "file" and not loc.path.startswith("/") else location


class Roots:
    """The roots a location must lie under: fixed ones, tables a catalog vouched for, and catalogs asked
    again (at most every REFRESH_SECONDS) when a location is outside both."""

    def __init__(self, roots: Iterable[str] = (), *, everywhere: bool = False, follow_catalogs: bool = False) -> None:
        self.unrestricted = everywhere
        self.follow_catalogs = follow_catalogs
        self._fixed = tuple(_root(r) for r in roots)
        self._tables: frozenset[Location] = frozenset()  # replaced, never changed in place
        self._catalogs: list[Callable[[], Iterable[str]]] = []
        self._lock = threading.Lock()
        self._asked_at = float("-inf")
        self._directories: dict[str, tuple[str, float]] = {}  # directory -> (its realpath, when resolved)

    @classmethod
    def everywhere(cls) -> Roots:
        return cls(everywhere=True)

    def describe(self) -> list[str]:
        """The roots as locations (for the startup log; never for a client)."""
        if self.unrestricted:
            return ["*"]
        return sorted({r.uri for r in self._fixed} | {r.uri for r in self._tables})

    def follow(self, metadata_locations: Callable[[], Iterable[str]]) -> None:
        """A catalog's tables, by their metadata locations, are roots (asked when a location is refused)."""
        if self.follow_catalogs:
            self._catalogs.append(metadata_locations)

    def trust(self, metadata_location: str) -> None:
        """A catalog named this table: its directory is a root (when the roots follow catalogs)."""
        if self.follow_catalogs:
            root = _root(table_root(metadata_location))
            if root in self._tables:
                return
            with self._lock:
                self._tables = self._tables | {root}

    def resolve(self, location: str) -> Location:
        """The location storage reads for `location`, whether or not it lies within the roots: parsed (scheme
        aliases, `file:` URIs, percent-encoding, and `.`, `..`, `//` in local paths) and, for an absolute local
        path, its links resolved. What access is decided on."""
        loc = parse_location(location)
        if loc.scheme == "file" and loc.path.startswith("/"):
            return Location("file", self._realpath(loc.path))
        return loc

    def table_directory(self, resolved: Location) -> Location:
        """The directory of the table of a resolved metadata file, its directories' resolution kept."""
        return directory_of(resolved, self._realpath)

    def check(self, location: str) -> Location:
        """The location to read (local paths resolved), or LocationNotAllowedError."""
        loc = parse_location(location)
        if self.unrestricted:
            return loc
        if loc.scheme == "file" and not loc.path.startswith("/"):
            raise LocationNotAllowedError(f"Location {location} is not absolute: give a full path or URI")
        if loc.is_object_store and any(part in (".", "..") for part in loc.path.split("/")):
            raise LocationNotAllowedError(f"Location {location} has '.' or '..' segments")
        if not self._within(loc):  # by its text, before touching the file system
            raise LocationNotAllowedError(f"Location {location} is outside the roots this service serves")
        if loc.scheme == "file":
            real = Location("file", self._realpath(loc.path))
            if real != loc and not self._within(real, ask=False):
                raise LocationNotAllowedError(f"Location {location} resolves outside the roots this service serves")
            return real
        return loc

    def configured(self, loc: Location) -> bool:
        """Whether `loc` lies under a root the service was configured with (not one a catalog vouched for)."""
        return self.unrestricted or under(loc, self._fixed)

    def _realpath(self, path: str) -> str:
        """os.path.realpath, with each directory's resolution kept for REFRESH_SECONDS: a plan reads
        hundreds of manifests from one directory, and resolving each anew is a lstat per path component.
        The file itself is looked at every time (a link there is resolved in full)."""
        directory, name = posixpath.split(path)
        if name in ("", ".", "..") or not directory:
            return os.path.realpath(path)
        now = time.monotonic()
        known = self._directories.get(directory)
        if known is None or now - known[1] > REFRESH_SECONDS:
            if len(self._directories) >= MAX_KNOWN_DIRECTORIES:
                self._directories.clear()
            known = self._directories[directory] = (os.path.realpath(directory), now)
        try:
            if stat.S_ISLNK(os.lstat(posixpath.join(known[0], name)).st_mode):
                return os.path.realpath(path)
        except OSError:
            pass  # missing: the read that follows says so
        return posixpath.join(known[0], name)

    def _within(self, loc: Location, ask: bool = True) -> bool:
        if under(loc, self._fixed) or under(loc, self._tables):
            return True
        return ask and self._ask_catalogs() and under(loc, self._tables)

    def _ask_catalogs(self) -> bool:
        """Refresh the tables from the catalogs, unless they were asked within REFRESH_SECONDS."""
        if not self._catalogs:
            return False
        with self._lock:
            if time.monotonic() - self._asked_at < REFRESH_SECONDS:
                return True
            self._asked_at = time.monotonic()
        found: set[Location] = set()  # asked outside the lock: trust() never waits for a slow catalog
        for metadata_locations in self._catalogs:
            try:
                found.update(_root(table_root(m)) for m in metadata_locations())
            except Exception as exc:  # a catalog that cannot answer adds nothing; the location stays refused
                log.warning("cannot list a catalog's tables for the roots", extra={"error": str(exc)})
        with self._lock:
            self._tables = self._tables | found
        return True


def _root(location: str) -> Location:
    loc = parse_location(absolute(location))
    return Location("file", os.path.realpath(loc.path)) if loc.scheme == "file" else loc


def under(loc: Location, roots: Iterable[Location]) -> bool:
    """Whether `loc` is one of `roots` or lies beneath one."""
    return any(loc.within(root) for root in roots)

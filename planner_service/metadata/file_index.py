"""A columnar table of live content files: one row per file, partitions interned.

A manifest decodes into one FileIndex (metadata/manifest.py); the FileIndexes of a snapshot's manifests,
concatenated in Java's planning order, form the snapshot's index, which planning prunes in one vectorized
pass. Partition tuples are interned: `partitions` lists each distinct (spec id, values) once and
`partition_id` points every row at its tuple, so partition pruning, residuals and the delete index work
per distinct partition, not per file. Paths are held as their directory, interned the same way
(`directories`, `directory_id`), and their name (the frame's file_name column). Columns that no entry has
(no first_row_id, no key_metadata, statistics not decoded) are held as polars' Null type, which costs no
memory. Python objects (ContentFile) are made only for the rows that need them (delete files,
explanations).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, cast

import numpy as np
import polars as pl

from planner_service.metadata.content_file import SPLITTABLE_FORMATS, ContentFile
from planner_service.metadata.conversions import java_equality_key
from planner_service.metadata.null_free import NullFree, intersect
from planner_service.metadata.stats_columns import StatsColumns

Int32Array = np.ndarray[Any, np.dtype[np.int32]]
Int64Array = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
Partition = tuple[int, tuple[Any, ...]]  # (spec id, internal values in spec field order)
T = TypeVar("T")

STATS_COLUMNS = ("value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds")
# column_sizes (field 108) is not kept: planning never reads it
CORE_COLUMNS = (
    "content",
    "file_name",
    "file_format",
    "record_count",
    "file_size_in_bytes",
    "data_sequence_number",
    "file_sequence_number",
    "snapshot_id",
    "split_offsets",
    "equality_ids",
    "sort_order_id",
    "key_metadata",
    "first_row_id",
    "referenced_data_file",
    "content_offset",
    "content_size_in_bytes",
)


@dataclass(frozen=True)
class FileIndex:
    frame: pl.DataFrame  # CORE_COLUMNS + STATS_COLUMNS, one row per live file
    partitions: tuple[Partition, ...]
    partition_id: Int32Array  # row -> index into `partitions`
    directories: tuple[str, ...]  # each distinct directory of the paths (up to its last '/')
    directory_id: Int32Array  # row -> index into `directories`
    has_stats: bool = True  # False: STATS_COLUMNS are all null, the statistics were not decoded
    # the field ids every row's null_value_counts gives 0 for (metadata/null_free.py; None: no rows)
    null_free: NullFree = frozenset()
    # the proofs of the parts (manifests) this index was made of, part k's rows from part_starts[k] on
    # (None: one part, proven by `null_free`); null_free_of(rows) proves what exactly those rows' parts prove
    part_starts: Int64Array | None = None
    part_null_free: tuple[NullFree, ...] = ()
    # its columns are the pages of an index file (metadata/index_file.py), mapped: the system's page cache, not
    # this process's memory
    mapped: bool = False
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return self.frame.height

    @property
    def nbytes(self) -> int:
        """An estimate of the memory held (the frame, the row arrays, decoded statistics)."""
        return int(self.frame.estimated_size()) + 8 * len(self) + self.interned_bytes

    @property
    def interned_bytes(self) -> int:
        """An estimate of the memory its interned partitions and directories hold (Python objects)."""
        return 64 * len(self.partitions) + 8 * len(self.directories)  # (directories are shared, and few)

    @classmethod
    def concat(cls, parts: Sequence[FileIndex]) -> FileIndex:
        """The rows of `parts` one after the other, partitions re-interned across them."""
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return empty_index()
        interner = _Interner()
        remapped = [interner.ids(part.partitions)[part.partition_id] for part in parts]
        directories: dict[str, int] = {}
        remaps: dict[int, Int32Array] = {}  # by the directories tuple's identity: parts decoded together share one
        directory_ids = []
        for part in parts:
            remap = remaps.get(id(part.directories))
            if remap is None:
                new_ids = (directories.setdefault(d, len(directories)) for d in part.directories)
                remap = remaps[id(part.directories)] = np.fromiter(new_ids, np.int32, len(part.directories))
            directory_ids.append(remap[part.directory_id])
        frames = [p.frame for p in parts]
        try:
            frame = pl.concat(frames, how="vertical", rechunk=False)
        except pl.exceptions.SchemaError:  # a column no entry of some parts has (held as Null there)
            frame = pl.concat(frames, how="vertical_relaxed", rechunk=False)
        partition_id = np.concatenate(remapped).astype(np.int32, copy=False)
        directory_id = np.concatenate(directory_ids).astype(np.int32, copy=False)
        offsets = np.cumsum([0] + [len(p) for p in parts[:-1]])
        starts = np.concatenate([p.proof_starts() + offset for p, offset in zip(parts, offsets.tolist(), strict=True)])
        return cls(
            frame,
            tuple(interner.partitions),
            partition_id,
            tuple(directories),
            directory_id,
            all(p.has_stats for p in parts),
            intersect(p.null_free for p in parts),
            starts.astype(np.int64),
            tuple(proof for p in parts for proof in p.proofs()),
        )

    def proof_starts(self) -> Int64Array:
        """The first row of each part (a single part, from row 0, when not made of parts)."""
        return np.zeros(1, np.int64) if self.part_starts is None else self.part_starts

    def proofs(self) -> tuple[NullFree, ...]:
        """Each part's null-free proof, in the order of proof_starts()."""
        return (self.null_free,) if self.part_starts is None else self.part_null_free

    def null_free_of(self, rows: Int64Array) -> NullFree:
        """The field ids proven null-free for the rows `rows`: what the parts (manifests) holding them prove
        together, not what every part of the index does (None: no rows)."""
        if not len(rows):
            return None
        if self.part_starts is None or len(rows) == len(self):  # (rows are unique: then they are every row)
            return self.null_free
        held = np.unique(np.searchsorted(self.part_starts, rows, side="right") - 1)
        return intersect(self.part_null_free[k] for k in held.tolist())

    def take(self, rows: Int64Array) -> FileIndex:
        """Rows `rows` (ascending) as an index of their own: their values copied out of this index's buffers
        (which it no longer keeps alive) with only their partitions."""
        used, partition_id = np.unique(self.partition_id[rows], return_inverse=True)
        partitions = tuple(self.partitions[i] for i in used.tolist())
        in_use, directory_id = np.unique(self.directory_id[rows], return_inverse=True)
        directories = tuple(self.directories[i] for i in in_use.tolist())
        part_of_row = np.searchsorted(self.proof_starts(), rows, side="right") - 1
        held, first = np.unique(part_of_row, return_index=True)
        proofs = self.proofs()
        kept = tuple(proofs[k] for k in held.tolist())
        return FileIndex(
            self.frame[rows],
            partitions,
            partition_id.reshape(-1).astype(np.int32),
            directories,
            directory_id.reshape(-1).astype(np.int32),
            self.has_stats,
            intersect(kept) if len(rows) else None,  # what the parts of these rows prove, exactly
            first.astype(np.int64),
            kept,
        )

    def paths(self, rows: Int64Array | None = None) -> list[str]:
        """The file paths of `rows` (all rows by default), in that order."""
        names = self.frame.get_column("file_name")
        ids = self.directory_id
        if rows is not None:
            names, ids = _take(names, rows), ids[rows]
        directories = self.directories
        return [directories[d] + n for d, n in zip(ids.tolist(), names.to_list(), strict=True)]

    def column(self, name: str) -> pl.Series:
        """A column in its canonical type (one that no entry has is held as Null and made here, all null)."""
        series = self.frame.get_column(name)
        return series.cast(INDEX_SCHEMA[name]) if series.dtype == pl.Null else series

    # -- columns as arrays (computed once, kept) ---------------------------------------------------------

    def ints(self, column: str) -> Int64Array:
        """An integer column as int64 (nulls as 0), made afresh: a few milliseconds per million rows, where
        keeping it would cost each cached index 8 bytes a file."""
        return np.asarray(self.column(column).fill_null(0).to_numpy(), dtype=np.int64)

    @property
    def spec_id(self) -> Int32Array:
        def make() -> Int32Array:
            specs = np.fromiter((s for s, _ in self.partitions), np.int32, len(self.partitions))
            return specs[self.partition_id] if len(self.partitions) else self.partition_id

        return self.memo("spec_id", make)

    def memo(self, key: str, make: Callable[[], T]) -> T:
        """`make()`, computed once for this index and kept with it (a derived column, rendered snippets)."""
        out = self._cache.get(key)
        if out is None:
            out = self._cache[key] = make()
        return cast(T, out)

    @property
    def formats(self) -> tuple[np.ndarray[Any, Any], list[str | None]]:
        """The file formats as written: (each row's index into the distinct ones, the distinct ones)."""
        return self.memo("formats", self._formats)

    def _formats(self) -> tuple[np.ndarray[Any, Any], list[str | None]]:
        column = self.column("file_format")
        distinct = column.drop_nulls().unique(maintain_order=True)
        codes = pl.Series(range(len(distinct)), dtype=pl.Int64)
        ids = column.replace_strict(distinct, codes, default=len(distinct), return_dtype=pl.Int64)
        small = np.int16 if len(distinct) < 2**15 else np.int64  # a few distinct formats: 2 bytes a file
        return np.asarray(ids.fill_null(len(distinct)).to_numpy(), small), [*distinct.to_list(), None]

    @property
    def splittable(self) -> BoolArray:
        def make() -> BoolArray:
            ids, formats = self.formats
            by_format = np.array([f is not None and f.upper() in SPLITTABLE_FORMATS for f in formats], bool)
            splittable: BoolArray = by_format[ids]
            return splittable

        return self.memo("splittable", make)

    def split_offsets(self, rows: Int64Array) -> tuple[Int64Array, Int64Array]:
        """The split offsets of `rows` (ascending row numbers): (count per row, all offsets flat in row order).
        Made afresh (tens of milliseconds per million rows), not kept: 28 bytes a file that an index held
        would cost every cached snapshot."""
        column = self.column("split_offsets")
        if len(rows) != len(self):  # rows are ascending and unique: all of them, or a subset
            column = column.gather(rows)
        counts = np.asarray(column.list.len().fill_null(0).to_numpy(), dtype=np.int64)
        flat = np.asarray(column.explode().drop_nulls().to_numpy(), dtype=np.int64)
        return counts, flat

    @property
    def stats(self) -> StatsColumns:
        """Column statistics, decoded per field id on first use and kept with the index."""
        self._require_stats()
        return self.memo("stats", lambda: StatsColumns(self.frame))

    def with_statistics(self, stats: pl.DataFrame, mapped: bool = False) -> FileIndex:
        """This index with its STATS_COLUMNS taken from `stats` (one row per row of it; `mapped`: pages of an
        index file); the other columns are shared, not copied."""
        if stats.height != len(self) or list(stats.columns) != list(STATS_COLUMNS):
            raise ValueError(f"Statistics of {stats.height} rows {stats.columns} for an index of {len(self)} rows")
        frame = self.frame.with_columns(stats.get_columns())
        return replace(self, frame=frame, has_stats=True, mapped=self.mapped and mapped, _cache={})

    def _require_stats(self) -> None:
        if not self.has_stats:  # a planner bug, never a user's: planning asks for what it needs
            raise RuntimeError("This index was decoded without column statistics")

    # -- rows as objects ---------------------------------------------------------------------------------

    def content_files(
        self, rows: Sequence[int] | Int64Array | None = None, with_stats: bool = False
    ) -> list[ContentFile]:
        """ContentFile objects for `rows` (all rows by default), in that order."""
        if with_stats:
            self._require_stats()
        if rows is None:
            frame, pids, paths = self.frame, self.partition_id, self.paths()
        else:
            index = np.asarray(rows, dtype=np.int64)
            frame, pids, paths = _take(self.frame, index), self.partition_id[index], self.paths(index)
        cols: list[list[Any]] = [paths if c == "file_name" else frame.get_column(c).to_list() for c in CORE_COLUMNS]
        (
            content,
            path,
            fmt,
            records,
            size,
            data_seq,
            file_seq,
            snap,
            offsets,
            eq_ids,
            sort_id,
            key_meta,
            first_row,
            ref_file,
            c_off,
            c_size,
        ) = cols
        fmt_upper = {f: f.upper() for f in set(fmt)}
        partitions = self.partitions
        out = []
        for i, pid in enumerate(pids.tolist()):
            spec_id, values = partitions[pid]
            out.append(
                ContentFile(
                    content[i],
                    path[i],
                    fmt_upper[fmt[i]],
                    spec_id,
                    values,
                    records[i],
                    size[i],
                    data_seq[i],
                    file_seq[i],
                    snap[i],
                    _tuple(offsets[i]),
                    _tuple(eq_ids[i]),
                    sort_id[i],
                    key_meta[i],
                    first_row[i],
                    ref_file[i],
                    c_off[i],
                    c_size[i],
                )
            )
        if with_stats:
            stats = [[_map(v) for v in frame.get_column(c).to_list()] for c in STATS_COLUMNS]
            for f, values, nulls, nans, lower, upper in zip(out, *stats, strict=True):
                f.value_counts, f.null_value_counts = values, nulls
                f.nan_value_counts, f.lower_bounds, f.upper_bounds = nans, lower, upper
        return out


FEW_ROWS = 64  # rows taken as one-row slices: a gather walks every chunk of every column (400 in a snapshot)
Rows = TypeVar("Rows", pl.DataFrame, pl.Series)


def _take(values: Rows, rows: Int64Array) -> Rows:
    """values[rows]: a few rows (a task's files, fetched by an executor) as slices, 5x faster than a gather
    on a many-chunk index; more by a gather."""
    if 0 < len(rows) <= FEW_ROWS:
        return pl.concat([values.slice(int(r), 1) for r in rows.tolist()], rechunk=False)
    return values[rows] if isinstance(values, pl.DataFrame) else values.gather(rows)


def empty_index() -> FileIndex:
    none = np.zeros(0, dtype=np.int32)
    return FileIndex(pl.DataFrame(schema=INDEX_SCHEMA), (), none, (), none)


class _Interner:
    """Distinct partitions in first-seen order, equal as Java's equals() says (java_equality_key)."""

    def __init__(self) -> None:
        self.partitions: list[Partition] = []
        self._ids: dict[tuple[int, tuple[Any, ...]], int] = {}

    def ids(self, partitions: Sequence[Partition]) -> Int32Array:
        out = np.empty(len(partitions), dtype=np.int32)
        for i, (spec_id, values) in enumerate(partitions):
            key = (spec_id, tuple(java_equality_key(v) for v in values))
            pid = self._ids.get(key)
            if pid is None:
                pid = self._ids[key] = len(self.partitions)
                self.partitions.append((spec_id, values))
            out[i] = pid
        return out


def intern_partitions(
    spec_id: int,
    partition: pl.Series,
    first_row: np.ndarray[Any, Any],
    convert: Sequence[Callable[[Any], Any] | None] = (),
) -> tuple[tuple[Partition, ...], Int32Array]:
    """Distinct partition tuples of a struct column (first-seen order) and each row's index into them;
    `first_row`: the first row of each row's group of equal partitions, grouped by polars; `convert`:
    per field, what turns a stored value into Iceberg's internal one (None: it already is).

    Float fields are grouped again in Python: Java compares them by bits (-0.0 is not 0.0, NaN equals
    NaN), which only java_equality_key reproduces."""
    n = len(partition)
    dtype = partition.dtype
    fields = dtype.fields if isinstance(dtype, pl.Struct) else []
    if not fields:
        return ((spec_id, ()),), np.zeros(n, dtype=np.int32)
    if any(f.dtype.is_float() for f in fields):
        rows = zip(*_values(partition, convert), strict=True)
        interner = _Interner()
        ids = interner.ids([(spec_id, values) for values in rows])
        return tuple(interner.partitions), ids
    is_first = first_row == np.arange(n)  # a group's first row points at itself: numbered in row order
    firsts = np.flatnonzero(is_first)
    inverse = (np.cumsum(is_first, dtype=np.int32) - 1)[first_row]
    tuples = zip(*_values(partition.gather(firsts), convert), strict=True)
    return tuple((spec_id, t) for t in tuples), inverse


def _values(partition: pl.Series, convert: Sequence[Callable[[Any], Any] | None]) -> list[list[Any]]:
    columns = [s.to_list() for s in partition.struct.unnest()]
    for i, conversion in enumerate(convert):
        if conversion is not None:
            columns[i] = [conversion(v) for v in columns[i]]
    return columns


_COUNT_MAP = pl.List(pl.Struct({"key": pl.Int32, "value": pl.Int64}))
_BOUND_MAP = pl.List(pl.Struct({"key": pl.Int32, "value": pl.Binary}))
CANONICAL_SCHEMA: dict[str, pl.DataType] = {
    "status": pl.Int32(),
    "content": pl.Int32(),
    "file_path": pl.String(),
    "file_format": pl.String(),
    "record_count": pl.Int64(),
    "file_size_in_bytes": pl.Int64(),
    "data_sequence_number": pl.Int64(),
    "file_sequence_number": pl.Int64(),
    "snapshot_id": pl.Int64(),
    "split_offsets": pl.List(pl.Int64),
    "equality_ids": pl.List(pl.Int32),
    "sort_order_id": pl.Int32(),
    "key_metadata": pl.Binary(),
    "first_row_id": pl.Int64(),
    "referenced_data_file": pl.String(),
    "content_offset": pl.Int64(),
    "content_size_in_bytes": pl.Int64(),
    "value_counts": _COUNT_MAP,
    "null_value_counts": _COUNT_MAP,
    "nan_value_counts": _COUNT_MAP,
    "lower_bounds": _BOUND_MAP,
    "upper_bounds": _BOUND_MAP,
}


# an index's frame: the decoded columns with each path's name in place of the path
INDEX_SCHEMA = {("file_name" if name == "file_path" else name): typ for name, typ in CANONICAL_SCHEMA.items()}


def _tuple(values: list[Any] | None) -> tuple[Any, ...] | None:
    return None if values is None else tuple(values)


def _map(entries: list[dict[str, Any]] | None) -> dict[int, Any] | None:
    return None if entries is None else {e["key"]: e["value"] for e in entries}

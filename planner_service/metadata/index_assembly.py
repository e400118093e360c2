"""A list of manifests' assembled index on disk (a snapshot's, or those a filter may match), by reference to the
segments that hold its manifests (metadata/index_file.py): so that a process planning a snapshot another
process planned maps one file and the segments instead of assembling the index manifest by manifest (reading
each manifest's interned values, interning them again across the manifests, concatenating thousands of parts).

An assembly holds, in the envelope of index files (its MAC checked before it is parsed): each row's partition
and directory ids across the whole index (int32 columns), and as JSON the manifests in order (the reader's
keys) with the segment and slot of each (and of its statistics, for an assembly with them), the interned
partitions and directories, and each manifest's first row and null-free proof. Each slot is checked to hold
the manifest the assembly names; the slots' rows must add up to the assembly's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from planner_service.metadata.file_index import FileIndex, Int32Array, Partition
from planner_service.metadata.index_file import InvalidIndexFile, Segment, int32s, sealed, tagged, unsealed, untagged
from planner_service.metadata.null_free import NullFree

ASSEMBLY = "assembly"
Slot = tuple[str, int]  # (segment name, slot)


def assembly_file(
    name: str,
    index: FileIndex,
    manifests: Sequence[str],
    core: Sequence[Slot],
    stats: Sequence[Slot] | None,
    key: bytes,
) -> bytes:
    """The assembly `name` (what it is found by: the list of manifests, with or without statistics) of `index`,
    the manifests `manifests` (by the reader's key) assembled, each in its core slot (and statistics slot, when
    the index has them)."""
    starts = index.proof_starts().tolist()
    if not len(manifests) == len(core) == len(starts) or (stats is not None and len(stats) != len(core)):
        raise ValueError(f"an assembly of {len(starts)} parts for {len(manifests)} manifests, {len(core)} slots")
    table = pa.table(
        {
            "partition_id": pa.array(index.partition_id.astype(np.int32, copy=False)),
            "directory_id": pa.array(index.directory_id.astype(np.int32, copy=False)),
        }
    )
    meta = {
        "name": name,
        "manifests": list(manifests),
        "core": [list(slot) for slot in core],
        "stats": None if stats is None else [list(slot) for slot in stats],
        "partitions": [[spec_id, [tagged(v) for v in values]] for spec_id, values in index.partitions],
        "directories": list(index.directories),
        "part-starts": starts,
        "part-null-free": [_ids(proof) for proof in index.proofs()],
        "null-free": _ids(index.null_free),
    }
    return sealed(ASSEMBLY, table, meta, key)


@dataclass(frozen=True)
class Assembly:
    """An assembly opened and checked (its ids over the file's pages)."""

    manifests: list[str]
    core: list[Slot]
    stats: list[Slot] | None
    partitions: tuple[Partition, ...]
    directories: tuple[str, ...]
    partition_id: Int32Array
    directory_id: Int32Array
    part_starts: list[int]
    part_null_free: tuple[NullFree, ...]
    null_free: NullFree

    def segments(self) -> set[tuple[str, str]]:
        """(segment name, kind) of every segment it refers to."""
        out = {(name, "core") for name, _ in self.core}
        return out | {(name, "stats") for name, _ in self.stats or ()}


def open_assembly(data: pa.Buffer, name: str, manifests: Sequence[str], key: bytes) -> Assembly:
    """The assembly `name` over `data`, of the manifests `manifests`; InvalidIndexFile unless it is one written with
    `key` as `name`, for exactly those manifests, in that order."""
    table, meta = unsealed(data, ASSEMBLY, key)
    try:
        if meta["name"] != name or meta["manifests"] != list(manifests):
            raise InvalidIndexFile("an assembly of other manifests")
        core = [(str(name), int(slot)) for name, slot in meta["core"]]
        stats = None if meta["stats"] is None else [(str(name), int(slot)) for name, slot in meta["stats"]]
        partitions = tuple((int(s), tuple(untagged(v) for v in values)) for s, values in meta["partitions"])
        assembly = Assembly(
            list(manifests),
            core,
            stats,
            partitions,
            tuple(meta["directories"]),
            int32s(table.column("partition_id")),
            int32s(table.column("directory_id")),
            [int(start) for start in meta["part-starts"]],
            tuple(_proof(ids) for ids in meta["part-null-free"]),
            _proof(meta["null-free"]),
        )
    except (KeyError, TypeError, ValueError, pa.ArrowException) as exc:
        raise InvalidIndexFile(f"an assembly that does not read: {exc}") from None
    if not len(assembly.core) == len(manifests) == len(assembly.part_starts) == len(assembly.part_null_free):
        raise InvalidIndexFile("an assembly whose parts do not match its manifests")
    return assembly


def assembled_index(assembly: Assembly, segments: Mapping[tuple[str, str], Segment]) -> FileIndex:
    """The index an assembly describes, its columns the slices of its segments (`segments`: each segment it
    refers to, opened, by (name, kind)); InvalidIndexFile when a slot holds another manifest or other rows."""
    frames = _runs(assembly, assembly.core, segments, "core")
    stats_frames = [] if assembly.stats is None else _runs(assembly, assembly.stats, segments, "stats")
    frame = _concat(frames)
    if assembly.stats is not None:
        frame = frame.with_columns(_concat(stats_frames).get_columns())
    return FileIndex(
        frame,
        assembly.partitions,
        assembly.partition_id,
        assembly.directories,
        assembly.directory_id,
        has_stats=assembly.stats is not None,
        null_free=assembly.null_free,
        part_starts=None if len(assembly.manifests) == 1 else np.asarray(assembly.part_starts, np.int64),
        part_null_free=() if len(assembly.manifests) == 1 else assembly.part_null_free,
        mapped=True,
    )


def _runs(
    assembly: Assembly, slots: list[Slot], segments: Mapping[tuple[str, str], Segment], kind: str
) -> list[pl.DataFrame]:
    """The frames of the parts' slots, each run of consecutive slots of one segment one slice (a snapshot planned
    as it was written: a slice a segment, not a manifest), once every slot is found to hold its manifest and
    its rows."""
    frames = []
    run: tuple[Segment, int, int] | None = None  # (segment, first row, rows)
    previous: Slot | None = None
    for k, (manifest, (name, slot)) in enumerate(zip(assembly.manifests, slots, strict=True)):
        segment = segments[(name, kind)]
        _, start, rows = segment.slot(slot, manifest)
        if rows != _rows_of(assembly, k):
            raise InvalidIndexFile(f"an assembly of {_rows_of(assembly, k)} rows for a slot of {rows}")
        if run is not None and previous == (name, slot - 1) and run[1] + run[2] == start:
            run = (run[0], run[1], run[2] + rows)
        else:
            if run is not None:
                frames.append(run[0].frame.slice(run[1], run[2]))
            run = (segment, start, rows)
        previous = (name, slot)
    if run is not None:
        frames.append(run[0].frame.slice(run[1], run[2]))
    return frames


def _rows_of(assembly: Assembly, part: int) -> int:
    starts = assembly.part_starts
    end = starts[part + 1] if part + 1 < len(starts) else len(assembly.partition_id)
    return end - starts[part]


def _concat(frames: list[pl.DataFrame]) -> pl.DataFrame:
    if not frames:
        raise InvalidIndexFile("an assembly of no manifests")
    try:
        return pl.concat(frames, how="vertical", rechunk=False)
    except pl.exceptions.SchemaError:  # a column no entry of some manifests has (held as Null there)
        return pl.concat(frames, how="vertical_relaxed", rechunk=False)


def _ids(proof: NullFree) -> list[int] | None:
    return None if proof is None else sorted(proof)


def _proof(ids: Any) -> NullFree:
    return None if ids is None else frozenset(int(i) for i in ids)

"""A list of manifests' assembled index on disk (a snapshot's, or those a filter may match), by reference to the
segments that hold its manifests (metadata/index_file.py): so that a process planning a snapshot another
process planned maps one file and the segments instead of assembling the index manifest by manifest (reading
each manifest's interned values, interning them again across the manifests, concatenating thousands of parts).

An assembly holds, in the envelope of index files (its MAC checked before it is parsed): each row's partition
and directory ids across the whole index (int32 columns), and as JSON the digest of its manifests in order
(the reader's keys: the reader passes them, and they must be those written), the segment and slot of each
(and of its statistics, for an assembly with them; each segment named once), the interned partitions and
directories, and each manifest's first row and null-free proof (each distinct proof once). Each slot is
checked to hold the manifest looked for; the slots' rows must add up to the assembly's.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from planner_service.metadata.file_index import FileIndex, Int32Array, Partition
from planner_service.metadata.index_file import (
    InvalidIndexFile,
    Segment,
    int32s,
    sealed,
    tagged,
    unsealed,
    untagged_column,
)
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
    proofs: dict[NullFree, int] = {}
    part_proof = [proofs.setdefault(proof, len(proofs)) for proof in index.proofs()]
    meta = {
        "name": name,
        "manifests": _digest(manifests),
        "core": _slots(core),
        "stats": None if stats is None else _slots(stats),
        "partitions": _partitions_json(index.partitions),
        "directories": list(index.directories),
        "part-starts": starts,
        "proofs": [_ids(proof) for proof in proofs],
        "part-proof": part_proof,
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

    def rows_of(self, part: int) -> int:
        """How many rows manifest `part` holds."""
        end = self.part_starts[part + 1] if part + 1 < len(self.part_starts) else len(self.partition_id)
        return end - self.part_starts[part]

    def segments(self) -> set[tuple[str, str]]:
        """(segment name, kind) of every segment it refers to."""
        out = {(name, "core") for name, _ in self.core}
        return out | {(name, "stats") for name, _ in self.stats or ()}


def open_assembly(data: pa.Buffer, name: str, manifests: Sequence[str], key: bytes) -> Assembly:
    """The assembly `name` over `data`, of the manifests `manifests`; InvalidIndexFile unless it is one written with
    `key` as `name`, for exactly those manifests, in that order."""
    table, meta = unsealed(data, ASSEMBLY, key)
    try:
        if meta["name"] != name or meta["manifests"] != _digest(manifests):
            raise InvalidIndexFile("an assembly of other manifests")
        partitions = _partitions_of(meta["partitions"])
        proofs = [_proof(ids) for ids in meta["proofs"]]
        assembly = Assembly(
            list(manifests),
            _slots_of(meta["core"]),
            None if meta["stats"] is None else _slots_of(meta["stats"]),
            partitions,
            tuple(meta["directories"]),
            int32s(table.column("partition_id")),
            int32s(table.column("directory_id")),
            [int(start) for start in meta["part-starts"]],
            tuple(proofs[k] for k in meta["part-proof"]),
            _proof(meta["null-free"]),
        )
    except (KeyError, TypeError, ValueError, IndexError, pa.ArrowException) as exc:
        raise InvalidIndexFile(f"an assembly that does not read: {exc}") from None
    if not len(assembly.core) == len(manifests) == len(assembly.part_starts) == len(assembly.part_null_free):
        raise InvalidIndexFile("an assembly whose parts do not match its manifests")
    return assembly


def assembled_index(assembly: Assembly, segments: Mapping[tuple[str, str], Segment]) -> FileIndex:
    """The index an assembly describes, its columns the slices of its segments (`segments`: each segment it
    refers to, opened, by (name, kind)); InvalidIndexFile when a slot holds another manifest or other rows."""
    frame = _concat(_runs(assembly, assembly.core, segments, "core"))
    if assembly.stats is not None:
        frame = frame.with_columns(_concat(_runs(assembly, assembly.stats, segments, "stats")).get_columns())
    return index_over(assembly, frame)


def index_over(assembly: Assembly, frame: pl.DataFrame) -> FileIndex:
    """The index of an assembly's rows with `frame` as its columns (its segments', or some of them from
    elsewhere)."""
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
        if rows != assembly.rows_of(k):
            raise InvalidIndexFile(f"an assembly of {assembly.rows_of(k)} rows for a slot of {rows}")
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


def _concat(frames: list[pl.DataFrame]) -> pl.DataFrame:
    if not frames:
        raise InvalidIndexFile("an assembly of no manifests")
    try:
        return pl.concat(frames, how="vertical", rechunk=False)
    except pl.exceptions.SchemaError:  # a column no entry of some manifests has (held as Null there)
        return pl.concat(frames, how="vertical_relaxed", rechunk=False)


def _partitions_json(partitions: Sequence[Partition]) -> dict[str, Any]:
    """Interned partitions as JSON columns: per spec (and arity) the positions of its partitions and a column of
    (tagged) values a field, which read back without a list a partition."""
    groups: dict[tuple[int, int], tuple[list[int], list[list[Any]]]] = {}
    for i, (spec_id, values) in enumerate(partitions):
        at, columns = groups.setdefault((spec_id, len(values)), ([], [[] for _ in values]))
        at.append(i)
        for column, value in zip(columns, values, strict=True):
            column.append(tagged(value))
    return {"count": len(partitions), "groups": [[spec, at, columns] for (spec, _), (at, columns) in groups.items()]}


def _partitions_of(written: dict[str, Any]) -> tuple[Partition, ...]:
    out: list[Partition | None] = [None] * int(written["count"])
    for spec_id, at, columns in written["groups"]:
        columns = [untagged_column(column) for column in columns]
        values = zip(*columns, strict=True) if columns else itertools.repeat((), len(at))
        spec = int(spec_id)
        for i, row in zip(at, values, strict=True):
            out[i] = (spec, row)
    if None in out:
        raise ValueError("partitions missing from their groups")
    return tuple(p for p in out if p is not None)


def _digest(manifests: Sequence[str]) -> str:
    """What names the list of manifests (by the reader's keys) in the assembly: their SHA-256."""
    return hashlib.sha256("\n".join(manifests).encode()).hexdigest()


def _slots(slots: Sequence[Slot]) -> dict[str, list[Any]]:
    """Slots as the segments' names once each and, per manifest, the index of its segment and its slot."""
    names: dict[str, int] = {}
    which = [names.setdefault(name, len(names)) for name, _ in slots]
    return {"segments": list(names), "segment": which, "slot": [slot for _, slot in slots]}


def _slots_of(written: dict[str, Any]) -> list[Slot]:
    names = [str(name) for name in written["segments"]]
    if len(written["segment"]) != len(written["slot"]):
        raise ValueError("slots of another length than their segments")
    return [(names[k], int(slot)) for k, slot in zip(written["segment"], written["slot"], strict=True)]


def _ids(proof: NullFree) -> list[int] | None:
    return None if proof is None else sorted(proof)


def _proof(ids: Any) -> NullFree:
    return None if ids is None else frozenset(int(i) for i in ids)

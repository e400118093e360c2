"""The delete-file index: which delete files apply to a data file (Iceberg Java DeleteFileIndex, 1.10).

Built from the delete files it is given (no I/O here). Three rules decide what applies:
1. Equality deletes apply to data files with a strictly smaller data sequence number; global ones (from
   an unpartitioned spec) to every partition, the others to the same (spec id, partition).
2. Position deletes apply to data files with a data sequence number <= theirs: file-scoped ones (by
   `referenced_data_file` or equal `file_path` bounds) to that path, the others to the same partition.
3. A deletion vector (Puffin) replaces all position deletes of its data file.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from planner_service.errors import CorruptMetadataError
from planner_service.metadata.content_file import EQUALITY_DELETES, POSITION_DELETES, ContentFile
from planner_service.metadata.conversions import compare, from_bytes, java_equality_key
from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.types import PrimitiveType, Schema

_STRING = PrimitiveType("string")

FILE_PATH_FIELD_ID = 2147483546  # the position-delete file's `file_path` column (spec: reserved ids)

PartitionKey = tuple[int, tuple[Any, ...]]


@dataclass
class _SeqGroup:
    """Delete files sorted (stably) by the sequence number they apply from."""

    seqs: list[int] = field(default_factory=list)
    files: list[ContentFile] = field(default_factory=list)

    def add_all(self, items: list[tuple[int, ContentFile]]) -> None:
        items = sorted(items, key=lambda it: it[0])  # stable: load order within equal sequence numbers
        self.seqs = [s for s, _ in items]
        self.files = [f for _, f in items]

    def from_seq(self, seq: int) -> list[ContentFile]:
        return self.files[bisect.bisect_left(self.seqs, seq) :]


class DeleteFileIndex:
    def __init__(self, specs: Mapping[int, PartitionSpec], schema: Schema, delete_files: Iterable[ContentFile]):
        """`delete_files` in load order (delete manifests in planning order, entries in file order)."""
        self._schema = schema  # specs are bound to the current schema in Java, so equality ids resolve here
        global_eq: list[tuple[int, ContentFile]] = []
        eq_by_part: dict[PartitionKey, list[tuple[int, ContentFile]]] = defaultdict(list)
        pos_by_part: dict[PartitionKey, list[tuple[int, ContentFile]]] = defaultdict(list)
        pos_by_path: dict[str, list[tuple[int, ContentFile]]] = defaultdict(list)
        self._dvs: dict[str, ContentFile] = {}
        for f in delete_files:
            seq = f.data_sequence_number or 0
            if f.content == POSITION_DELETES:
                if f.is_dv:
                    if f.referenced_data_file in self._dvs:
                        other = self._dvs[f.referenced_data_file].path
                        raise CorruptMetadataError(
                            f"Can't index multiple DVs for {f.referenced_data_file}: {f.path} and {other}"
                        )
                    self._dvs[str(f.referenced_data_file)] = f
                    continue
                path = f.referenced_data_file or _single_referenced_path(f)
                if path is not None:
                    pos_by_path[path].append((seq, f))
                else:
                    pos_by_part[_partition_key(f)].append((seq, f))
            elif f.content == EQUALITY_DELETES:
                spec = specs.get(f.spec_id)
                if spec is None:
                    raise CorruptMetadataError(f"Delete file {f.path} has unknown partition spec id {f.spec_id}")
                # equality deletes apply to data written before them: index by applySeq = seq - 1
                if spec.is_unpartitioned:
                    global_eq.append((seq - 1, f))
                else:
                    eq_by_part[_partition_key(f)].append((seq - 1, f))
        self._global = _group(global_eq)
        self._eq_by_part = {k: _group(v) for k, v in eq_by_part.items()}
        self._pos_by_part = {k: _group(v) for k, v in pos_by_part.items()}
        self._pos_by_path = {k: _group(v) for k, v in pos_by_path.items()}
        self.has_equality_deletes = bool(global_eq or eq_by_part)

    @property
    def is_empty(self) -> bool:
        return not (self._dvs or self._pos_by_part or self._pos_by_path or self.has_equality_deletes)

    def for_data_file(self, data_file: ContentFile) -> list[ContentFile]:
        """The deletes that apply, in Java's order: global eq, partition eq, then DV or partition + file pos."""
        seq = data_file.data_sequence_number or 0
        key = _partition_key(data_file)
        out = [e for e in self._global.from_seq(seq) if self._eq_may_apply(data_file, e)]
        if (group := self._eq_by_part.get(key)) is not None:
            out += [e for e in group.from_seq(seq) if self._eq_may_apply(data_file, e)]
        dv = self._dvs.get(data_file.path)
        if dv is not None:
            if (dv.data_sequence_number or 0) < seq:
                raise CorruptMetadataError(
                    f"DV data sequence number ({dv.data_sequence_number}) must be greater than or equal to "
                    f"data file sequence number ({seq}): {dv.path}"
                )
            out.append(dv)
            return out
        if (group := self._pos_by_part.get(key)) is not None:
            out += group.from_seq(seq)
        if (group := self._pos_by_path.get(data_file.path)) is not None:
            out += group.from_seq(seq)
        return out

    def _eq_may_apply(self, data: ContentFile, delete: ContentFile) -> bool:
        """False only when stats prove no row of `data` can match (Java canContainEqDeletesForFile)."""
        for fid in delete.equality_ids or ():
            fld = self._schema.find_field(fid)
            if fld is None or not isinstance(fld.type, PrimitiveType):
                continue
            if _contains_null(data.null_value_counts, fid, fld.required) and _contains_null(
                delete.null_value_counts, fid, fld.required
            ):
                continue
            if _all_null(data, fid, fld.required) and _all_non_null(delete.null_value_counts, fid, fld.required):
                return False
            if _all_null(delete, fid, fld.required) and _all_non_null(data.null_value_counts, fid, fld.required):
                return False
            bounds = (data.lower_bounds, data.upper_bounds, delete.lower_bounds, delete.upper_bounds)
            if any(b is None for b in bounds):
                continue
            raw = [b.get(fid) for b in bounds if b is not None]
            if any(r is None for r in raw):
                continue
            data_lower, data_upper, del_lower, del_upper = (from_bytes(fld.type, r) for r in raw)
            if compare(fld.type, data_lower, del_upper) > 0 or compare(fld.type, del_lower, data_upper) > 0:
                return False
        return True


def _group(items: list[tuple[int, ContentFile]]) -> _SeqGroup:
    g = _SeqGroup()
    g.add_all(items)
    return g


def _single_referenced_path(f: ContentFile) -> str | None:
    """A position-delete file whose file_path bounds are equal references exactly one data file."""
    lower = (f.lower_bounds or {}).get(FILE_PATH_FIELD_ID)
    upper = (f.upper_bounds or {}).get(FILE_PATH_FIELD_ID)
    if lower is not None and lower == upper:
        path: str = from_bytes(_STRING, bytes(lower))  # (not UTF-8: corrupt, as Java fails to decode it)
        return path
    return None


def _contains_null(counts: dict[int, Any] | None, fid: int, required: bool) -> bool:
    if required:
        return False
    if counts is None or fid not in counts:
        return True
    return bool(counts[fid] > 0)


def _all_non_null(counts: dict[int, Any] | None, fid: int, required: bool) -> bool:
    if required:
        return True
    if counts is None or fid not in counts:
        return False
    return bool(counts[fid] <= 0)


def _all_null(f: ContentFile, fid: int, required: bool) -> bool:
    if required or f.null_value_counts is None or f.value_counts is None:
        return False
    nulls, values = f.null_value_counts.get(fid), f.value_counts.get(fid)
    return nulls is not None and values is not None and nulls == values


def _partition_key(f: ContentFile) -> tuple[int, tuple[Any, ...]]:
    """The file's (spec id, partition) compared as Java's PartitionMap does (StructLikeMap: equals of each
    value), so that NaN is one partition and -0.0 is not 0.0."""
    return f.spec_id, tuple(java_equality_key(v) for v in f.partition)

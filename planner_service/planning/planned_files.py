"""The planner's outputs, as columns: the files a scan reads (planFiles) and the combined tasks (planTasks).

`FileTaskColumns` holds the kept data files as rows of the snapshot's FileIndex, each with the delete files
that apply and its residual, every delete file and residual stored once and referred to by index. The
object forms (FileScanTask, CombinedScanTask) are made on demand, for callers that want one object per
task (the REST scan pages, tests); planning and the /plan wire never need them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner_service.expressions.expression import TRUE, Expression
from planner_service.metadata.content_file import ContentFile
from planner_service.metadata.file_index import FileIndex
from planner_service.metadata.null_free import NullFree
from planner_service.splitting.combine import CombinedTasks, FileColumns

Int32Array = np.ndarray[Any, np.dtype[np.int32]]
Int64Array = np.ndarray[Any, np.dtype[np.int64]]


@dataclass(frozen=True)
class FileTaskColumns:
    """planFiles(): file i is row rows[i] of `index`; its deletes are
    delete_files[delete_refs[delete_offsets[i]:delete_offsets[i + 1]]]; its residual residuals[residual_id[i]]."""

    index: FileIndex
    rows: Int64Array
    residual_id: Int32Array
    residuals: tuple[Expression, ...]
    delete_files: tuple[ContentFile, ...] = ()
    delete_offsets: Int64Array | None = None  # None: no file has deletes
    delete_refs: Int64Array = field(default_factory=lambda: np.zeros(0, np.int64))

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def null_free(self) -> NullFree:
        """The field ids these files are proven to hold no null in: what the manifests holding exactly these
        files prove (the index may hold other files: the snapshot's, shared by every plan of it)."""
        return self.index.null_free_of(self.rows)

    def spec_ids(self) -> list[int]:
        """The partition specs of these files (not of the index's other files), ascending."""
        return np.unique(self.index.spec_id[self.rows]).tolist() if len(self.rows) else []

    def deletes_of(self, i: int) -> Int64Array:
        """Indexes into delete_files of the deletes that apply to file i, in Java's order."""
        if self.delete_offsets is None:
            return self.delete_refs[:0]
        return self.delete_refs[self.delete_offsets[i] : self.delete_offsets[i + 1]]

    def locations(self, files: Int64Array | None = None) -> list[str]:
        """The paths of files `files` (indexes into these; all by default) and of the delete files that apply
        to them: every file a reader of them opens, each once."""
        chosen = np.arange(len(self.rows)) if files is None else np.unique(files)
        paths = self.index.paths(self.rows[chosen])
        if self.delete_offsets is not None:
            refs = [self.delete_refs] if files is None else [self.deletes_of(i) for i in chosen.tolist()]
            used = np.unique(np.concatenate(refs)) if refs else self.delete_refs[:0]
            paths += [self.delete_files[j].path for j in used.tolist()]
        return paths

    def scan_bytes(self) -> int:
        """The bytes the scan reads: its files' sizes and the content of the deletes each file applies."""
        sizes = int(self.index.ints("file_size_in_bytes")[self.rows].sum())
        if self.delete_offsets is None or not len(self.delete_refs):
            return sizes
        content = np.fromiter((d.content_size for d in self.delete_files), np.int64, len(self.delete_files))
        return sizes + int(content[self.delete_refs].sum())

    def columns(self) -> FileColumns:
        """What splitting and packing need, one element per file (an index's own columns when the plan holds
        every row of it, no copies)."""
        index, rows = self.index, self.rows
        every_row = len(rows) == len(index)  # (rows ascend and are unique: then they are 0..n-1)

        def of_rows(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
            return values if every_row else values[rows]

        counts, flat = index.split_offsets(rows)
        n = len(rows)
        if self.delete_offsets is None or not len(self.delete_refs):
            delete_bytes = delete_counts = np.zeros(n, np.int64)
        else:
            content = np.fromiter((d.content_size for d in self.delete_files), np.int64, len(self.delete_files))
            delete_counts = np.diff(self.delete_offsets).astype(np.int64, copy=False)
            owner = np.repeat(np.arange(n), delete_counts)
            delete_bytes = np.bincount(owner, weights=content[self.delete_refs], minlength=n).astype(np.int64)
        return FileColumns(
            of_rows(index.ints("file_size_in_bytes")),
            of_rows(index.splittable),
            counts,
            flat,
            of_rows(index.ints("record_count")),
            delete_bytes,
            delete_counts,
        )

    def to_objects(self, with_stats: bool = False, begin: int = 0, end: int | None = None) -> list[FileScanTask]:
        """Files begin..end-1 (all by default) as FileScanTask objects."""
        files = self.index.content_files(self.rows[begin:end], with_stats=with_stats)
        out = []
        for i, f in enumerate(files, begin):
            deletes = tuple(self.delete_files[j] for j in self.deletes_of(i).tolist())
            out.append(FileScanTask(f, deletes, 0, f.file_size_in_bytes, self.residuals[self.residual_id[i]]))
        return out


def combined_objects(files: list[FileScanTask], tasks: CombinedTasks) -> list[CombinedScanTask]:
    """CombinedScanTask objects of columnar tasks over `files` (FileTaskColumns.to_objects())."""
    out = []
    for t in range(len(tasks)):
        pieces = []
        for p in tasks.pieces(t):
            f = files[int(tasks.file[p])]
            pieces.append(
                FileScanTask(
                    f.file, f.deletes, int(tasks.start[p]), int(tasks.length[p]), f.residual, bool(tasks.is_split[p])
                )
            )
        out.append(CombinedScanTask(tuple(pieces)))
    return out


@dataclass(slots=True)
class FileScanTask:
    """A byte range of a data file with the deletes that apply to it and the residual filter.

    `is_split` marks Java's SplitScanTask (the range came from splitting a splittable file); only those
    merge with their neighbours when tasks are combined.
    """

    file: ContentFile
    deletes: tuple[ContentFile, ...]
    start: int
    length: int
    residual: Expression = TRUE  # what the reader must still evaluate on the rows
    is_split: bool = False


@dataclass(slots=True)
class CombinedScanTask:
    tasks: tuple[FileScanTask, ...]

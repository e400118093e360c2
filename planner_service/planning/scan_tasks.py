"""The planner's outputs: file scan tasks (a byte range of one data file) and combined tasks."""

from __future__ import annotations

from dataclasses import dataclass

from planner_service.expressions.expression import TRUE, Expression
from planner_service.metadata.content_file import ContentFile


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

    @property
    def size_bytes(self) -> int:
        """Java ContentScanTask.sizeBytes: the range plus every delete file's content."""
        return self.length + sum(d.content_size for d in self.deletes)

    @property
    def estimated_rows(self) -> int:
        """Java ContentScanTask.estimatedRowsCount: the range's share of the file's records."""
        size = self.file.file_size_in_bytes
        if size <= 0:
            return self.file.record_count
        return int(self.length / size * self.file.record_count)


@dataclass(slots=True)
class CombinedScanTask:
    tasks: tuple[FileScanTask, ...]

    @property
    def size_bytes(self) -> int:
        return sum(t.size_bytes for t in self.tasks)

    @property
    def estimated_rows(self) -> int:
        return sum(t.estimated_rows for t in self.tasks)

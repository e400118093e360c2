"""How one row range of a data file is read into the scan's columns (reader.py, step 2 and 3): the file
columns to read, the working fields they become (the output's, plus those a filter still has to evaluate),
matched by field id with identity-partition values standing in for their source columns (projection.py),
and the rows the position and equality deletes leave; output() then keeps the output columns."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from spark_client.deletes import EqualityDeletes, equality_mask
from spark_client.formats import DataFile, RowRange
from spark_client.projection import find_by_id, project_struct
from spark_client.schema import arrow_field
from spark_client.values import iceberg_type_of, to_scalar

__all__ = ["RangeProjection"]


class RangeProjection:
    """The file columns a range is read with, and how its batches become the scan's: the working fields
    (output plus filter), less the deleted rows; output() then keeps the output columns."""

    def __init__(
        self,
        fields: list[dict[str, Any]],
        file_schema: pa.Schema,
        columns: list[str],
        constants: dict[int, pa.Scalar],
        output: list[str],
    ) -> None:
        self.fields = fields
        self.arrow = pa.schema([arrow_field(f) for f in fields])
        self.file_schema = file_schema
        self.columns = columns
        self.constants = constants
        self.output_names = [name for name in self.arrow.names if name in set(output)]
        self.output_ids = frozenset(f["id"] for f in fields if f["name"] in set(output))

    def file_batches(self, source: DataFile, rows: RowRange, batch_size: int) -> Iterator[pa.RecordBatch]:
        """The range's file columns; without any to read, its rows by count alone (no decoding)."""
        if self.columns:
            yield from source.read(rows, self.columns, batch_size)
            return
        empty = pa.record_batch({"n": pa.nulls(min(batch_size, rows.num_rows))}).select([])
        for start in range(0, rows.num_rows, batch_size):
            yield empty.slice(0, min(batch_size, rows.num_rows - start))

    def rows(
        self,
        batch: pa.RecordBatch,
        position: int,
        deleted: np.ndarray | None,
        equality: list[EqualityDeletes],
        raw_constants: dict[int, Any],
    ) -> pa.RecordBatch:
        """One batch of file rows (starting at file position `position`) projected, less the deleted rows."""
        n = batch.num_rows
        file_fields = [self.file_schema.field(name) for name in batch.schema.names]
        arrays = project_struct(batch.columns, file_fields, self.fields, n, self.constants)
        out = pa.RecordBatch.from_arrays(arrays, schema=self.arrow) if arrays else batch.select([])
        keep: np.ndarray | None = None
        if deleted is not None and len(deleted):
            mine = deleted[np.searchsorted(deleted, position) : np.searchsorted(deleted, position + n)]
            if len(mine):
                keep = np.ones(n, dtype=bool)
                keep[mine - position] = False
        for d in equality:
            keys = [self._key(i, d, out, batch, file_fields, raw_constants) for i in d.field_ids]
            mask = equality_mask(keys, d).to_numpy(zero_copy_only=False)
            keep = mask if keep is None else keep & mask
        return out if keep is None or keep.all() else out.filter(pa.array(keep))

    def output(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return batch if batch.schema.names == self.output_names else batch.select(self.output_names)

    def _key(
        self,
        field_id: int,
        deletes: EqualityDeletes,
        out: pa.RecordBatch,
        batch: pa.RecordBatch,
        file_fields: list[pa.Field],
        raw_constants: dict[int, Any],
    ) -> pa.Array:
        """A row's value of an equality field: as projected when the scan reads it, else a partition value, the
        file's column, or null (a column added after the file was written)."""
        path = find_by_id(list(self.arrow), field_id)
        if path is not None:
            return _walk(out.column(path[0]), path[1:])
        delete_type = deletes.rows.column(str(field_id)).type
        if field_id in raw_constants:
            return pa.repeat(to_scalar(raw_constants[field_id], iceberg_type_of(delete_type)), out.num_rows)
        path = find_by_id(file_fields, field_id)
        if path is not None:
            return _walk(batch.column(path[0]), path[1:])
        return pa.nulls(out.num_rows, delete_type)


def _walk(array: pa.Array, path: list[int]) -> pa.Array:
    for i in path:
        array = array.flatten()[i]  # a null struct makes its fields null
    return array

"""Small factories for the reader's unit tests: Parquet files written by pyarrow, /plan JSON around them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from spark_client import read_task
from spark_client.formats.parquet import starting_position
from spark_client.schema import arrow_schema


def field(field_id: int, name: str, typ: Any, required: bool = False) -> dict[str, Any]:
    return {"id": field_id, "name": name, "type": typ, "required": required}


def schema(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "schema-id": 0, "fields": list(fields)}


def write(path: Path, table: pa.Table, row_group_size: int | None = None) -> str:
    """Write `table` (its fields' PARQUET:field_id metadata become Parquet field ids); return the path."""
    pq.write_table(table, path, row_group_size=row_group_size)
    return str(path)


def write_rows(path: Path, iceberg_schema: dict[str, Any], rows: dict[str, list[Any]], **kw: Any) -> str:
    """Write columns given by name as the Arrow schema (with field ids) of an Iceberg schema."""
    return write(path, pa.table(rows, schema=arrow_schema(iceberg_schema)), **kw)


def split_offsets(path: str) -> list[int]:
    metadata = pq.ParquetFile(path).metadata
    return [starting_position(metadata.row_group(i)) for i in range(metadata.num_row_groups)]


def file_task(
    path: str,
    start: int | None = None,
    length: int | None = None,
    *,
    partition: list[Any] | None = None,
    spec_id: int = 0,
    residual: Any = True,
    deletes: list[int] | None = None,
    file_format: str = "parquet",
) -> dict[str, Any]:
    size = Path(path).stat().st_size if Path(path).exists() else 0
    return {
        "data-file": {
            "spec-id": spec_id,
            "content": "data",
            "file-path": path,
            "file-format": file_format,
            "partition": partition or [],
            "file-size-in-bytes": size,
            "record-count": pq.ParquetFile(path).metadata.num_rows if file_format == "parquet" else 0,
        },
        "start": 0 if start is None else start,
        "length": size if length is None else length,
        "residual-filter": residual,
        "delete-file-references": deletes or [],
    }


def plan(
    iceberg_schema: dict[str, Any],
    tasks: list[list[dict[str, Any]]],
    *,
    specs: list[dict[str, Any]] | None = None,
    delete_files: list[dict[str, Any]] | None = None,
    name_mapping: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "schema": iceberg_schema,
        "partition-specs": specs or [{"spec-id": 0, "fields": []}],
        "tasks": [{"files": files} for files in tasks],
        "delete-files": delete_files or [],
    }
    if name_mapping is not None:
        out["name-mapping"] = name_mapping
    return out


def read_all(p: dict[str, Any], **kw: Any) -> pa.Table:
    batches = [b for task in p["tasks"] for b in read_task(task, p, **kw)]
    return pa.Table.from_batches(batches, schema=arrow_schema(p["schema"]))


def wire(p: dict[str, Any]) -> dict[str, Any]:
    """plan()'s expanded tasks in the /plan response's form: files and residuals written once, tasks as
    splits (file index, start, length), the task count (what read_plan and map_tasks take)."""
    files: list[dict[str, Any]] = []
    residuals: list[Any] = []
    tasks = []
    for task in p["tasks"]:
        splits = []
        for f in task["files"]:
            if f["residual-filter"] not in residuals:
                residuals.append(f["residual-filter"])
            files.append(
                {
                    "data-file": f["data-file"],
                    "residual": residuals.index(f["residual-filter"]),
                    "delete-file-references": f["delete-file-references"],
                }
            )
            splits.append([len(files) - 1, f["start"], f["length"]])
        tasks.append({"splits": splits})
    return {**p, "files": files, "residuals": residuals, "tasks": tasks, "task-count": len(tasks)}

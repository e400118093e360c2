"""Manifests decoded into a columnar FileIndex of their live entries (polars), inheritance applied.

A manifest is decoded once into a polars DataFrame with canonical column names and types, so that the
manifests of a snapshot concatenate into one index. Decoding with polars' native Avro reader is several
times faster than building one Python dict per entry; the canonical form is made by one query for many
manifests at once (decode_manifest per file, in parallel, then live_entries for all of them).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from planner_service.errors import CorruptMetadataError
from planner_service.metadata.avro_schema import names_by_field_id, read_header, record_of
from planner_service.metadata.file_index import CANONICAL_SCHEMA, FileIndex, intern_partitions
from planner_service.metadata.manifest_list import ManifestFile

EXISTING, ADDED, DELETED = 0, 1, 2

# spec field ids of manifest_entry and data_file -> canonical column names
_ENTRY_IDS = {0: "status", 1: "snapshot_id", 3: "sequence_number", 4: "file_sequence_number"}
_FILE_IDS = {
    134: "content", 100: "file_path", 101: "file_format", 102: "partition", 103: "record_count",
    104: "file_size_in_bytes", 109: "value_counts", 110: "null_value_counts",
    137: "nan_value_counts", 125: "lower_bounds", 128: "upper_bounds", 131: "key_metadata",
    132: "split_offsets", 135: "equality_ids", 140: "sort_order_id", 142: "first_row_id",
    143: "referenced_data_file", 144: "content_offset", 145: "content_size_in_bytes",
}  # fmt: skip
_MISSING_TYPES = CANONICAL_SCHEMA | {"status": pl.Int32(), "sequence_number": pl.Int64()}


@dataclass(frozen=True)
class RawManifest:
    """A manifest's entries as its Avro file has them, before canonical names and inheritance."""

    manifest: ManifestFile
    location: str
    frame: pl.DataFrame
    entry_names: dict[int, str]
    file_names: dict[int, str]
    avro_schema: str  # manifests of one schema and spec are made canonical by one query

    @property
    def shape(self) -> tuple[int, str]:
        return self.manifest.partition_spec_id, self.avro_schema


def decode_manifest(data: bytes, manifest: ManifestFile, location: str) -> RawManifest:
    """Decode a manifest file's bytes (polars' Avro reader releases the GIL: call it from many threads)."""
    schema, meta = read_header(data, location)
    entry_names = names_by_field_id(schema)
    if 2 not in entry_names:
        raise CorruptMetadataError(f"Manifest {location} has no data_file field (field id 2)")
    data_file_field = next(f for f in schema["fields"] if f["name"] == entry_names[2])
    file_record = record_of(data_file_field["type"])
    if file_record is None:
        raise CorruptMetadataError(f"Manifest {location}: data_file is not a record")
    file_names = names_by_field_id(file_record)
    for fid, name in _FILE_IDS.items():
        if fid not in file_names and name not in _MISSING_TYPES and name != "content":
            raise CorruptMetadataError(f"Manifest {location} lacks required data_file field {name} (id {fid})")
    try:
        raw = pl.read_avro(io.BytesIO(data))
    except Exception as exc:  # polars raises ComputeError / OSError / PanicException on damaged files
        raise CorruptMetadataError(f"Cannot decode manifest {location}: {type(exc).__name__}: {exc}") from None
    return RawManifest(manifest, location, raw, entry_names, file_names, meta["avro.schema"])


def live_entries(raws: Sequence[RawManifest]) -> list[FileIndex]:
    """The live entries of each manifest, inheritance applied. Manifests of one shape are concatenated
    and made canonical by one polars query (a query per 500-entry manifest would cost more than reading
    it); the results are slices of that query's columns."""
    out: list[FileIndex | None] = [None] * len(raws)
    groups: dict[tuple[object, ...], list[int]] = {}
    for i, raw in enumerate(raws):
        groups.setdefault(raw.shape, []).append(i)
    for members in groups.values():
        batch = [raws[i] for i in members]
        for i, index in zip(members, _live_entries_of_shape(batch), strict=True):
            out[i] = index
    return [index for index in out if index is not None]


def _live_entries_of_shape(raws: list[RawManifest]) -> list[FileIndex]:
    first = raws[0]
    heights = np.fromiter((r.frame.height for r in raws), np.int64, len(raws))
    manifest_of_row = pl.Series("_manifest", np.repeat(np.arange(len(raws), dtype=np.int64), heights))
    inherited: dict[str, list[int | None]] = {  # what each row inherits from its manifest
        "_seq": [r.manifest.sequence_number for r in raws],
        "_snapshot": [r.manifest.added_snapshot_id for r in raws],
    }
    frame = pl.concat([r.frame for r in raws], how="vertical", rechunk=False) if len(raws) > 1 else first.frame
    frame = frame.with_columns(
        manifest_of_row,
        *(
            pl.Series(name, values, dtype=pl.Int64).gather(manifest_of_row).alias(name)
            for name, values in inherited.items()
        ),
    )
    where = first.location if len(raws) == 1 else f"{first.location} (or one of {len(raws) - 1} more)"
    try:
        live = _canonical(frame, first.entry_names, first.file_names).filter(pl.col("status") != DELETED)
        columns = [pl.col(name).cast(dtype) for name, dtype in CANONICAL_SCHEMA.items()]
        # each row's group of equal partitions, by its first row (partitions are interned per group)
        group = pl.col("_row").first().over("_manifest", "partition").alias("_group")
        result = live.with_row_index("_row").select(*columns, "partition", "_manifest", group).collect()
    except CorruptMetadataError:
        raise
    except Exception as exc:
        raise CorruptMetadataError(f"Cannot decode manifest {where}: {type(exc).__name__}: {exc}") from None
    spec_id = first.manifest.partition_spec_id
    partitions, partition_id = intern_partitions(spec_id, result.get_column("partition"), result["_group"].to_numpy())
    canonical = result.select(list(CANONICAL_SCHEMA))
    bounds = np.searchsorted(result.get_column("_manifest").to_numpy(), np.arange(len(raws) + 1))
    out = []
    for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        used, local = np.unique(partition_id[start:end], return_inverse=True)
        part = tuple(partitions[g] for g in used.tolist())
        out.append(FileIndex(canonical.slice(start, end - start), part, local.astype(np.int32)))
    return out


def _canonical(frame: pl.DataFrame, entry_names: dict[int, str], file_names: dict[int, str]) -> pl.LazyFrame:
    data_file = pl.col(entry_names[2])
    exprs: list[pl.Expr] = [pl.col("_manifest"), pl.col("_seq"), pl.col("_snapshot")]
    for fid, name in _ENTRY_IDS.items():
        exprs.append(pl.col(entry_names[fid]).alias(name) if fid in entry_names else _null(name))
    for fid, name in _FILE_IDS.items():
        if fid in file_names:
            exprs.append(data_file.struct.field(file_names[fid]).alias(name))
        elif name == "content":
            exprs.append(pl.lit(0, pl.Int32).alias(name))  # v1: data files only
        else:
            exprs.append(_null(name))
    data_file_type = frame.schema[entry_names[2]]
    assert isinstance(data_file_type, pl.Struct)
    partition_dtype = next(f.dtype for f in data_file_type.fields if f.name == file_names[102])
    assert isinstance(partition_dtype, pl.Struct)

    # Inheritance (spec "Manifest Entry Fields", Java InheritableMetadataFactory): a null snapshot id takes
    # the manifest's; a null sequence number takes the manifest's when the entry is ADDED or the manifest is v1.
    seq = pl.col("_seq")
    inherit_seq = (pl.col("status") == ADDED) | (seq == 0)
    return (
        frame.lazy()
        .select(exprs)
        .with_columns(
            pl.col("snapshot_id").fill_null(pl.col("_snapshot")),
            pl.when(pl.col("sequence_number").is_null() & inherit_seq)
            .then(seq)
            .otherwise(pl.col("sequence_number"))
            .alias("data_sequence_number"),
            pl.when(pl.col("file_sequence_number").is_null() & inherit_seq)
            .then(seq)
            .otherwise(pl.col("file_sequence_number"))
            .alias("file_sequence_number"),
            _internal_partition(partition_dtype),
        )
    )


def _null(name: str) -> pl.Expr:
    return pl.lit(None, _MISSING_TYPES[name]).alias(name)


def _internal_partition(dtype: pl.DataType) -> pl.Expr:
    """Rewrite partition values into Iceberg's internal form: dates as days, times and timestamps as µs."""
    assert isinstance(dtype, pl.Struct)
    fields = []
    for f in dtype.fields:
        value = pl.col("partition").struct.field(f.name)
        if isinstance(f.dtype, pl.Date):
            value = value.cast(pl.Int32)
        elif isinstance(f.dtype, pl.Datetime):
            value = value.cast(pl.Int64)  # in the column's own unit: µs for timestamp-micros
        elif isinstance(f.dtype, pl.Time):
            value = value.cast(pl.Int64) // 1000  # polars keeps ns since midnight
        fields.append(value.alias(f.name))
    if not fields:
        return pl.col("partition")
    return pl.struct(fields).alias("partition")

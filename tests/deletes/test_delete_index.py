"""DeleteFileIndex, rule by rule: which delete files apply to a data file, in which order (reference §6).

Most cases are Iceberg Java 1.10.1's DeleteFileIndexTestBase (run by TestLocalDeleteFileIndex), each
test named after the Java test it ports; the table-scan tests there are ported to the index, the
sequence numbers being what those commits give the files. The rest pin rules of §6.2 / §6.3 that the
Java tests do not reach, from DeleteFileIndex.java and ContentFileUtil.java (1.10.1)."""

from __future__ import annotations

import pytest

from planner_service.deletes.index import DeleteFileIndex
from planner_service.errors import CorruptMetadataError
from planner_service.metadata.content_file import ContentFile
from planner_service.metadata.partitioning import PartitionField, PartitionSpec, Transform
from planner_service.metadata.types import NestedField, PrimitiveType, Schema, StructType
from tests.deletes.factories import (
    FILE_PATH_ID,
    SCHEMA,
    bucket_spec,
    data_file,
    dv,
    eq_deletes,
    int_bytes,
    paths,
    pos_deletes,
    str_bytes,
    unpartitioned,
)

SPEC = bucket_spec(0)
SPECS = {0: SPEC}
A, B, C = (0,), (1,), (2,)  # data_bucket=0, 1, 2
FILE_A_PATH, FILE_B_PATH = "/path/to/data-a.parquet", "/path/to/data-b.parquet"


def file_a(seq: int = 0, spec_id: int = 0) -> ContentFile:
    return data_file(FILE_A_PATH, A, spec_id, seq)


def file_b(seq: int = 0) -> ContentFile:
    return data_file(FILE_B_PATH, B, 0, seq)


def applied(index: DeleteFileIndex, data: ContentFile) -> list[str]:
    return paths(index.for_data_file(data))


# -- DeleteFileIndexTestBase: the index built from files ----------------------------------------------------


# Java's testUnpartitionedDeletes / testPartitionedDeleteIndex, deletes eq-4, eq-6, pos-5, pos-6 (the numbers
# are their sequence numbers): what applies to a data file of each sequence number (equality deletes to
# older data only, position deletes to data of the same sequence number too)
APPLIED_BY_DATA_SEQ = {
    0: ["eq-4", "eq-6", "pos-5", "pos-6"],
    3: ["eq-4", "eq-6", "pos-5", "pos-6"],
    4: ["eq-6", "pos-5", "pos-6"],
    5: ["eq-6", "pos-5", "pos-6"],
    6: ["pos-6"],
    7: [],
    10: [],
}


def test_unpartitioned_deletes() -> None:
    """Java: testUnpartitionedDeletes. Equality deletes apply to data older than them (data seq < delete
    seq), position deletes to data as old or older (<=); an unpartitioned spec's equality deletes are
    global, its position deletes are not."""
    deletes = [
        eq_deletes("eq-4", (), 0, seq=4),
        eq_deletes("eq-6", (), 0, seq=6),
        pos_deletes("pos-5", (), 0, seq=5),
        pos_deletes("pos-6", (), 0, seq=6),
    ]
    index = DeleteFileIndex({0: unpartitioned(0), 1: bucket_spec(1)}, SCHEMA, deletes)
    assert index.has_equality_deletes and not index.is_empty
    for seq, want in APPLIED_BY_DATA_SEQ.items():
        assert applied(index, data_file("/path/to/data-unpartitioned.parquet", (), 0, seq)) == want, seq
    # FILE_A copied with spec id 1: only the global equality deletes apply
    assert applied(index, file_a(0, spec_id=1)) == ["eq-4", "eq-6"]


def test_partitioned_delete_index() -> None:
    """Java: testPartitionedDeleteIndex. Partition-scoped deletes apply to the same (spec id, partition)."""
    deletes = [
        eq_deletes("eq-4", A, 0, seq=4),
        eq_deletes("eq-6", A, 0, seq=6),
        pos_deletes("pos-5", A, 0, seq=5),
        pos_deletes("pos-6", A, 0, seq=6),
    ]
    index = DeleteFileIndex({0: SPEC, 1: unpartitioned(1)}, SCHEMA, deletes)
    for seq, want in APPLIED_BY_DATA_SEQ.items():
        assert applied(index, file_a(seq)) == want, seq
    assert applied(index, file_b(0)) == []  # partition not in the index
    assert applied(index, data_file("/path/to/data-c.parquet", C, 0, 0)) == []
    assert applied(index, file_a(0, spec_id=1)) == []  # same partition values, another spec id


def test_position_deletes_group() -> None:
    """Java: testPositionDeletesGroup. Added out of order, indexed by data sequence number: a data file
    gets those with a sequence number >= its own, in ascending order."""
    deletes = [pos_deletes(f"pos-{s}", A, 0, seq=s) for s in (4, 2, 1, 3)]
    index = DeleteFileIndex(SPECS, SCHEMA, deletes)
    expected = {0: [1, 2, 3, 4], 1: [1, 2, 3, 4], 2: [2, 3, 4], 3: [3, 4], 4: [4], 5: []}
    for seq, want in expected.items():
        assert applied(index, file_a(seq)) == [f"pos-{s}" for s in want], seq


def test_equality_deletes_group() -> None:
    """Java: testEqualityDeletesGroup. Indexed by data sequence number - 1: a data file gets those with a
    sequence number > its own."""
    deletes = [eq_deletes(f"eq-{s}", A, 0, seq=s) for s in (4, 2, 1, 3)]
    index = DeleteFileIndex(SPECS, SCHEMA, deletes)
    expected = {0: [1, 2, 3, 4], 1: [2, 3, 4], 2: [3, 4], 3: [4], 4: []}
    for seq, want in expected.items():
        assert applied(index, file_a(seq)) == [f"eq-{s}" for s in want], seq


def test_mix_delete_files_and_dvs() -> None:
    """Java: testMixDeleteFilesAndDVs. A DV replaces the position delete files of its data file."""
    a, b = file_a(0), file_b(0)
    deletes = [
        pos_deletes("pos-a-1", A, 0, seq=1),
        dv(a, seq=2, path="dv-a-2.puffin"),
        pos_deletes("pos-b-1", B, 0, seq=1),
        pos_deletes("pos-b-2", B, 0, seq=2),
    ]
    index = DeleteFileIndex(SPECS, SCHEMA, deletes)
    assert applied(index, a) == ["dv-a-2.puffin"]
    assert applied(index, b) == ["pos-b-1", "pos-b-2"]


def test_multiple_dvs() -> None:
    """Java: testMultipleDVs."""
    a = file_a()
    with pytest.raises(CorruptMetadataError, match=f"Can't index multiple DVs for {FILE_A_PATH}"):
        DeleteFileIndex(SPECS, SCHEMA, [dv(a, 1, "dv-1.puffin"), dv(a, 2, "dv-2.puffin")])


def test_invalid_dv_sequence_number() -> None:
    """Java: testInvalidDVSequenceNumber."""
    index = DeleteFileIndex(SPECS, SCHEMA, [dv(file_a(), seq=1)])
    with pytest.raises(CorruptMetadataError, match="must be greater than or equal to data file sequence number"):
        index.for_data_file(file_a(2))


# -- DeleteFileIndexTestBase's table scans, as the index sees them ------------------------------------------
# Each commit takes the next sequence number; a file added in a commit has that commit's number.


@pytest.mark.parametrize("v3", [False, True], ids=["v2 position deletes", "v3 DV"])
def test_partitioned_table_with_partition_pos_deletes(v3: bool) -> None:
    """Java: testPartitionedTableWithPartitionPosDeletes (fileADeletes() is a DV in v3)."""
    a = file_a(1)
    delete = dv(a, 2) if v3 else pos_deletes("/path/to/data-a-deletes.parquet", A, 0, seq=2)
    assert index_of(delete).for_data_file(a) == [delete]


def test_partitioned_table_with_partition_eq_deletes() -> None:
    """Java: testPartitionedTableWithPartitionEqDeletes."""
    delete = eq_deletes("/path/to/data-a-eq-deletes.parquet", A, 0, seq=2)
    assert index_of(delete).for_data_file(file_a(1)) == [delete]


def test_partitioned_table_with_unrelated_partition_deletes() -> None:
    """Java: testPartitionedTableWithUnrelatedPartitionDeletes."""
    index = index_of(pos_deletes("pos-a", A, 0, seq=2), eq_deletes("eq-a", A, 0, seq=2))
    assert applied(index, file_b(1)) == []


def test_partitioned_table_with_older_partition_deletes() -> None:
    """Java: testPartitionedTableWithOlderPartitionDeletes (deletes committed before the data)."""
    index = index_of(pos_deletes("pos-a", A, 0, seq=1), eq_deletes("eq-a", A, 0, seq=1))
    assert applied(index, file_a(2)) == []


def test_partitioned_table_scan_with_global_deletes() -> None:
    """Java: testPartitionedTableScanWithGlobalDeletes. After the spec changes to unpartitioned (spec 1),
    its equality deletes are global; its position deletes stay in the unpartitioned partition of spec 1."""
    specs = {0: SPEC, 1: unpartitioned(1)}
    index = DeleteFileIndex(specs, SCHEMA, [pos_deletes("pos-global", (), 1, seq=2), eq_deletes("eq-global", (), 1, 2)])
    assert applied(index, file_a(1)) == ["eq-global"]


def test_partitioned_table_scan_with_global_and_partition_deletes() -> None:
    """Java: testPartitionedTableScanWithGlobalAndPartitionDeletes; the order is §6.3's (global first)."""
    specs = {0: SPEC, 1: unpartitioned(1)}
    deletes = [
        eq_deletes("eq-a", A, 0, seq=2),
        pos_deletes("pos-global", (), 1, seq=3),
        eq_deletes("eq-global", (), 1, 3),
    ]
    assert applied(DeleteFileIndex(specs, SCHEMA, deletes), file_a(1)) == ["eq-global", "eq-a"]


@pytest.mark.parametrize("v3", [False, True], ids=["v2 position deletes", "v3 DV"])
def test_partitioned_table_sequence_numbers(v3: bool) -> None:
    """Java: testPartitionedTableSequenceNumbers. Data and deletes of one commit: the position deletes (or
    DV) apply, the equality deletes do not."""
    a = file_a(1)
    position = dv(a, 1) if v3 else pos_deletes("pos-a", A, 0, seq=1)
    index = index_of(eq_deletes("eq-a", A, 0, seq=1), position)
    assert index.for_data_file(a) == [position]


def test_unpartitioned_table_sequence_numbers() -> None:
    """Java: testUnpartitionedTableSequenceNumbers."""
    specs = {0: unpartitioned(0)}
    index = DeleteFileIndex(specs, SCHEMA, [pos_deletes("pos", (), 0, seq=1), eq_deletes("eq", (), 0, seq=1)])
    assert applied(index, data_file("/path/to/data-unpartitioned.parquet", (), 0, 1)) == ["pos"]


def test_unpartitioned_table_scan() -> None:
    """Java: testUnpartitionedTableScan: data (seq 1), then position deletes (2), then equality deletes (3)."""
    specs = {0: unpartitioned(0)}
    data = data_file("/path/to/data-unpartitioned.parquet", (), 0, 1)
    pos = pos_deletes("pos", (), 0, seq=2)
    assert applied(DeleteFileIndex(specs, SCHEMA, [pos]), data) == ["pos"]
    assert applied(DeleteFileIndex(specs, SCHEMA, [pos, eq_deletes("eq", (), 0, seq=3)]), data) == ["eq", "pos"]


def index_of(*deletes: ContentFile) -> DeleteFileIndex:
    return DeleteFileIndex(SPECS, SCHEMA, deletes)


# -- §6.2 / §6.3 rules the Java tests do not reach ----------------------------------------------------------


def test_an_empty_index() -> None:
    index = DeleteFileIndex(SPECS, SCHEMA, [])
    assert index.is_empty and not index.has_equality_deletes
    assert index.for_data_file(file_a(0)) == []
    assert not index_of(pos_deletes("pos", A)).has_equality_deletes


def test_deletes_come_in_java_order() -> None:
    """§6.3: global equality, partition equality, partition position, then file-scoped position deletes,
    whatever order they were loaded in."""
    a = file_a(1)
    loaded = [
        pos_deletes("pos-file", B, 0, seq=2, referenced_data_file=FILE_A_PATH),
        pos_deletes("pos-partition", A, 0, seq=2),
        eq_deletes("eq-partition", A, 0, seq=2),
    ]
    specs = {0: SPEC, 1: unpartitioned(1)}
    assert applied(DeleteFileIndex(specs, SCHEMA, loaded), a) == ["eq-partition", "pos-partition", "pos-file"]
    with_global = DeleteFileIndex(specs, SCHEMA, [*loaded, eq_deletes("eq-global", (), 1, seq=2)])
    assert applied(with_global, a) == ["eq-global", "eq-partition", "pos-partition", "pos-file"]


def test_equal_sequence_numbers_keep_the_load_order() -> None:
    """§6.2: each group is stably sorted by sequence number, so files with equal numbers stay in load order."""
    first, second, third = (pos_deletes(name, A, 0, seq=s) for name, s in (("x", 3), ("y", 2), ("z", 3)))
    assert applied(index_of(first, second, third), file_a(1)) == ["y", "x", "z"]
    assert applied(index_of(third, second, first), file_a(1)) == ["y", "z", "x"]
    eq_x, eq_y = eq_deletes("eq-x", A, 0, seq=5), eq_deletes("eq-y", A, 0, seq=5)
    assert applied(index_of(eq_y, eq_x), file_a(1)) == ["eq-y", "eq-x"]


def test_file_scoped_position_deletes_apply_to_their_file_only() -> None:
    """§6.2 / ContentFileUtil.referencedDataFile: a position delete file with referenced_data_file applies
    to that path (an exact string match, with no partition check in 1.10), not to its partition."""
    index = index_of(pos_deletes("pos-of-a", B, 0, seq=2, referenced_data_file=FILE_A_PATH))
    assert applied(index, file_a(1)) == ["pos-of-a"]
    assert applied(index, data_file("/path/to/data-a2.parquet", A, 0, 1)) == []
    assert applied(index, file_b(1)) == []
    assert applied(index, data_file(FILE_A_PATH + " ", A, 0, 1)) == []
    assert applied(index, file_a(3)) == []  # still bounded by sequence number (2 < 3)


def test_position_deletes_with_equal_file_path_bounds_are_file_scoped() -> None:
    """ContentFileUtil.referencedDataFile: equal lower and upper file_path bounds (field 2147483546) name
    the one data file the deletes are for; different bounds, or only one of them, leave them
    partition-scoped."""
    path = str_bytes(FILE_A_PATH)
    scoped = pos_deletes("scoped", A, 0, seq=2, lower_bounds={FILE_PATH_ID: path}, upper_bounds={FILE_PATH_ID: path})
    ranged = pos_deletes(
        "ranged", A, 0, seq=2, lower_bounds={FILE_PATH_ID: path}, upper_bounds={FILE_PATH_ID: str_bytes("/path/to/z")}
    )
    lower_only = pos_deletes("lower-only", A, 0, seq=2, lower_bounds={FILE_PATH_ID: path}, upper_bounds={})
    index = index_of(scoped, ranged, lower_only)
    assert applied(index, file_a(1)) == ["ranged", "lower-only", "scoped"]  # partition ones, then by path
    assert applied(index, data_file("/path/to/data-a2.parquet", A, 0, 1)) == ["ranged", "lower-only"]


def test_a_dv_applies_with_the_equality_deletes_and_without_a_sequence_bound() -> None:
    """§6.3: with a DV, the result is global + partition equality deletes + the DV; position delete files
    of the partition or the path are ignored. A DV newer than the data applies like an equal one."""
    a = file_a(2)
    deletes = [
        eq_deletes("eq-a", A, 0, seq=5),
        pos_deletes("pos-a", A, 0, seq=5),
        pos_deletes("pos-of-a", A, 0, seq=5, referenced_data_file=FILE_A_PATH),
        dv(a, seq=5, path="dv-a.puffin"),
    ]
    assert applied(index_of(*deletes), a) == ["eq-a", "dv-a.puffin"]
    assert applied(index_of(dv(a, seq=2, path="dv-same-seq.puffin")), a) == ["dv-same-seq.puffin"]


def test_a_dv_applies_by_path_only() -> None:
    """DeleteFileIndex.findDV looks the data file up by location; 1.10 checks no partition (§6.3)."""
    a = file_a(1)
    elsewhere = data_file(FILE_A_PATH, B, 0, 1)  # the same path in another partition
    index = index_of(dv(a, seq=2, path="dv-a.puffin"))
    assert applied(index, elsewhere) == ["dv-a.puffin"]
    assert applied(index, data_file("/path/to/data-a2.parquet", A, 0, 1)) == []


def test_a_spec_of_void_fields_is_unpartitioned() -> None:
    """PartitionSpec.isUnpartitioned (§6.2): a spec whose fields are all void makes global equality
    deletes, whatever partition tuple they carry."""
    void_spec = PartitionSpec(1, (PartitionField(4, 1000, "data_bucket", Transform("void")),))
    index = DeleteFileIndex({0: SPEC, 1: void_spec}, SCHEMA, [eq_deletes("eq-void", (None,), 1, seq=2)])
    assert applied(index, file_a(1)) == ["eq-void"]
    assert applied(index, file_b(1)) == ["eq-void"]


# -- equality deletes and the data file's column stats (DeleteFileIndex.canContainEqDeletesForFile) --------

STATS_SCHEMA = Schema(
    0,
    StructType(
        (
            NestedField(1, "id", PrimitiveType("int"), False),
            NestedField(2, "data", PrimitiveType("string"), False),
            NestedField(3, "req", PrimitiveType("int"), True),
        )
    ),
)


def _ints(lower: int, upper: int, field_id: int = 1) -> tuple[dict[int, bytes], dict[int, bytes]]:
    return {field_id: int_bytes(lower)}, {field_id: int_bytes(upper)}


def _eq_applies(data: ContentFile, delete: ContentFile) -> bool:
    index = DeleteFileIndex({0: unpartitioned(0)}, STATS_SCHEMA, [delete])
    return index.for_data_file(data) == [delete]


def _data(
    lower_upper: tuple[dict[int, bytes], dict[int, bytes]] | None,
    nulls: dict[int, int] | None = None,
    values: dict[int, int] | None = None,
) -> ContentFile:
    lower, upper = lower_upper if lower_upper is not None else (None, None)
    return data_file("/data.parquet", (), 0, 1, values, nulls, lower, upper)


def _delete(
    lower_upper: tuple[dict[int, bytes], dict[int, bytes]] | None,
    nulls: dict[int, int] | None = None,
    values: dict[int, int] | None = None,
    ids: tuple[int, ...] = (1,),
) -> ContentFile:
    lower, upper = lower_upper if lower_upper is not None else (None, None)
    return eq_deletes("/eq.parquet", (), 0, 2, ids, values, nulls, lower, upper)


def test_equality_deletes_whose_range_misses_the_data_do_not_apply() -> None:
    """rangesOverlap: data [1, 10] and deletes [20, 30] (or [-5, 0]) cannot share a value; touching
    ranges can."""
    no_nulls = {1: 0}
    data = _data(_ints(1, 10), no_nulls, {1: 5})
    assert not _eq_applies(data, _delete(_ints(20, 30), no_nulls, {1: 3}))
    assert not _eq_applies(data, _delete(_ints(-5, 0), no_nulls, {1: 3}))
    assert _eq_applies(data, _delete(_ints(10, 30), no_nulls, {1: 3}))
    assert _eq_applies(data, _delete(_ints(-5, 1), no_nulls, {1: 3}))


def test_equality_deletes_apply_when_a_bound_is_missing() -> None:
    """checkRanges is off without the four bound maps, and a missing bound for the field assumes a match."""
    no_nulls = {1: 0}
    data = _data(_ints(1, 10), no_nulls)
    assert _eq_applies(data, _delete(None, no_nulls))
    assert _eq_applies(_data(None, no_nulls), _delete(_ints(20, 30), no_nulls))
    assert _eq_applies(data, _delete(({1: int_bytes(20)}, {}), no_nulls))
    assert _eq_applies(data, _delete(_ints(20, 30, field_id=2), no_nulls))  # bounds of another column


def test_equality_deletes_of_null_apply_to_data_with_nulls_whatever_the_ranges() -> None:
    """containsNull on both sides: the deletes may remove the data's nulls, so they apply before any range
    check; a missing null count counts as "may contain null" for an optional field."""
    data = _data(_ints(1, 10), {1: 2}, {1: 5})
    assert _eq_applies(data, _delete(_ints(20, 30), {1: 1}, {1: 3}))
    assert _eq_applies(_data(_ints(1, 10), None), _delete(_ints(20, 30), None))


def test_all_null_data_and_non_null_deletes_do_not_meet() -> None:
    """allNull(data) && allNonNull(deletes), and the converse, rule the delete file out."""
    all_null_data = _data(None, {1: 5}, {1: 5})
    assert not _eq_applies(all_null_data, _delete(_ints(1, 10), {1: 0}, {1: 3}))
    assert _eq_applies(all_null_data, _delete(_ints(1, 10), None, {1: 3}))  # unknown null count: may delete nulls
    all_null_deletes = _delete(None, {1: 3}, {1: 3})
    assert not _eq_applies(_data(_ints(1, 10), {1: 0}, {1: 5}), all_null_deletes)
    assert _eq_applies(_data(_ints(1, 10), {1: 1}, {1: 5}), all_null_deletes)


def test_required_equality_fields_never_hold_nulls() -> None:
    """For a required field containsNull is false and allNonNull true whatever the counts say, so only
    the ranges decide."""
    data = _data(_ints(1, 10, field_id=3), {3: 4}, {3: 4})
    assert not _eq_applies(data, _delete(_ints(20, 30, field_id=3), {3: 2}, {3: 2}, ids=(3,)))
    assert _eq_applies(data, _delete(_ints(5, 30, field_id=3), {3: 2}, {3: 2}, ids=(3,)))


def test_every_equality_field_must_overlap() -> None:
    """The loop returns false at the first field whose values cannot meet."""
    no_nulls = {1: 0, 2: 0}
    data = _data(({1: int_bytes(1), 2: str_bytes("a")}, {1: int_bytes(10), 2: str_bytes("m")}), no_nulls)
    overlapping_id = ({1: int_bytes(5), 2: str_bytes("n")}, {1: int_bytes(6), 2: str_bytes("z")})
    assert not _eq_applies(data, _delete(overlapping_id, no_nulls, ids=(1, 2)))
    assert _eq_applies(data, _delete(overlapping_id, no_nulls, ids=(1,)))


# -- partition keys compare as Java's StructLikeMap does (Comparators.forType, JavaHash) -------------------

FLOAT_SCHEMA = Schema(0, StructType((NestedField(1, "x", PrimitiveType("double"), False),)))
FLOAT_SPEC = PartitionSpec(0, (PartitionField(1, 1000, "x", Transform("identity")),))


def _float_index(delete_partition: float) -> DeleteFileIndex:
    deletes = [eq_deletes("eq", (delete_partition,), 0, seq=2), pos_deletes("pos", (delete_partition,), 0, seq=2)]
    return DeleteFileIndex({0: FLOAT_SPEC}, FLOAT_SCHEMA, deletes)


def test_partitions_compare_by_value() -> None:
    """StructLikeMap: equal partition values are one partition, whichever objects hold them."""
    index = _float_index(1.5)
    assert applied(index, data_file("/d.parquet", (float("1.5"),), 0, 1)) == ["eq", "pos"]


def test_nan_partitions_are_one_partition() -> None:
    """StructLikeMap (Double.compare, Double.hashCode): NaN partition values are one partition."""
    index = _float_index(float("nan"))
    assert applied(index, data_file("/d.parquet", (float("nan"),), 0, 1)) == ["eq", "pos"]


def test_negative_zero_is_another_partition() -> None:
    """StructLikeMap: Double.compare(-0.0, 0.0) < 0, so -0.0 and 0.0 are different partitions."""
    index = _float_index(-0.0)
    assert applied(index, data_file("/d.parquet", (0.0,), 0, 1)) == []

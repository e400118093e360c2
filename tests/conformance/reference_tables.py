"""How generate.py builds each reference table: Spark SQL, plus the Java API where SQL cannot (equality deletes).

Data is deterministic (fixed seeds, fixed dates); only snapshot timestamps and file names (UUIDs) vary
from run to run. Each builder's docstring says what the table exercises.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

CATALOG = "cat"
NAMESPACE = "db"

STD_COLUMNS = "id bigint, category string, name string, ts timestamp, amount double"
MERGE_ON_READ = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}
_WORDS = ("apple", "apricot", "banana", "band", "bandit", "cherry", "chess", "date", "delta", "elder")
_EPOCH = dt.datetime(2024, 1, 1)


def std_rows(
    seed: int, start: int, count: int, categories: Sequence[str | None] = ("a", "b", "c", None), days: int = 4
) -> list[tuple[Any, ...]]:
    """Rows for STD_COLUMNS: ids start..start+count-1, the rest drawn from random.Random(seed)."""
    rng = random.Random(seed)
    return [
        (
            i,
            rng.choice(categories),
            f"{rng.choice(_WORDS)}-{i}",
            _EPOCH + dt.timedelta(seconds=rng.randrange(days * 86400)),
            round(rng.uniform(0, 1000), 2),
        )
        for i in range(start, start + count)
    ]


def sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value!r}D"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value:%Y-%m-%d %H:%M:%S}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    raise TypeError(f"no SQL literal for {value!r}")


class Writer:
    """Writes tables of the Hadoop catalog CATALOG, namespace NAMESPACE."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.jvm: Any = spark.sparkContext._jvm
        self._gateway: Any = spark.sparkContext._gateway
        self._delete_files = 0

    def ident(self, name: str) -> str:
        return f"{CATALOG}.{NAMESPACE}.{name}"

    def sql(self, statement: str) -> None:
        self.spark.sql(statement).collect()

    def create(
        self,
        name: str,
        columns: str,
        partitioned_by: str | None = None,
        properties: dict[str, str] | None = None,
        format_version: int = 2,
    ) -> None:
        props = {"format-version": str(format_version), **(properties or {})}
        tblprops = ", ".join(f"'{k}'='{v}'" for k, v in props.items())
        partitioning = f" PARTITIONED BY ({partitioned_by})" if partitioned_by else ""
        self.sql(f"CREATE TABLE {self.ident(name)} ({columns}) USING iceberg{partitioning} TBLPROPERTIES ({tblprops})")

    def set_properties(self, name: str, properties: dict[str, str]) -> None:
        tblprops = ", ".join(f"'{k}'='{v}'" for k, v in properties.items())
        self.sql(f"ALTER TABLE {self.ident(name)} SET TBLPROPERTIES ({tblprops})")

    def insert(self, name: str, rows: Sequence[Sequence[Any]], branch: str | None = None) -> None:
        target = self.ident(name) + (f".branch_{branch}" if branch else "")
        values = ", ".join("(" + ", ".join(sql_literal(v) for v in row) + ")" for row in rows)
        self.sql(f"INSERT INTO {target} VALUES {values}")

    def load(self, name: str) -> Any:
        """The Java org.apache.iceberg.Table, freshly loaded."""
        return self.jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            self.spark._jsparkSession, self.ident(name)
        )

    def commit_equality_deletes(
        self,
        name: str,
        spec_id: int,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        partition: dict[str, Any] | None = None,
        file_format: str = "parquet",
    ) -> None:
        """Write an equality-delete file (Parquet, ORC or Avro) with Iceberg's own writer (field ids, metrics)
        and commit it. The file is scoped to `partition` of spec `spec_id`; with an unpartitioned spec it is
        global.
        """
        jvm = self.jvm
        iceberg = jvm.org.apache.iceberg
        table = self.load(name)
        spec = table.specs().get(spec_id)
        schema = table.schema()
        delete_schema = schema.select(list(columns))
        field_ids = self._gateway.new_array(jvm.int, len(columns))
        for i, column in enumerate(columns):
            field_ids[i] = schema.findField(column).fieldId()
        factory = iceberg.data.GenericAppenderFactory(schema, spec, field_ids, delete_schema, None)
        partition_data = None
        directory = f"{table.location()}/data"
        if partition is not None:
            partition_data = iceberg.data.GenericRecord.create(spec.partitionType())
            for field, value in partition.items():
                partition_data.setField(field, value)
            directory += "/" + spec.partitionToPath(partition_data)
        self._delete_files += 1
        output = table.io().newOutputFile(f"{directory}/eq-delete-{self._delete_files:03d}.{file_format}")
        writer = factory.newEqDeleteWriter(
            iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(output),
            iceberg.FileFormat.fromString(file_format),
            partition_data,
        )
        try:
            for row in rows:
                record = iceberg.data.GenericRecord.create(delete_schema)
                for column, value in zip(columns, row, strict=True):
                    record.setField(column, value)
                writer.write(record)
        finally:
            writer.close()
        table.newRowDelta().addDeletes(writer.toDeleteFile()).commit()


# --- The tables -------------------------------------------------------------------------------------------


def unpartitioned(w: Writer) -> None:
    """Three appends, two files each (VALUES run as two Spark tasks)."""
    w.create("unpartitioned", STD_COLUMNS)
    for batch in range(3):
        w.insert("unpartitioned", std_rows(seed=batch, start=batch * 20, count=20))


def identity_part(w: Writer) -> None:
    """identity(category), including a null partition; three appends."""
    w.create("identity_part", STD_COLUMNS, "category")
    for batch in range(3):
        w.insert("identity_part", std_rows(seed=10 + batch, start=batch * 30, count=30))


def day_part(w: Writer) -> None:
    """days(ts) over four days."""
    w.create("day_part", STD_COLUMNS, "days(ts)")
    for batch in range(2):
        w.insert("day_part", std_rows(seed=20 + batch, start=batch * 30, count=30))


def bucket_part(w: Writer) -> None:
    """bucket(8, id)."""
    w.create("bucket_part", STD_COLUMNS, "bucket(8, id)")
    for batch in range(2):
        w.insert("bucket_part", std_rows(seed=30 + batch, start=batch * 40, count=40))


def truncate_part(w: Writer) -> None:
    """truncate(3, name): names share prefixes (apple/apricot, band/bandit, ...)."""
    w.create("truncate_part", STD_COLUMNS, "truncate(3, name)")
    for batch in range(2):
        w.insert("truncate_part", std_rows(seed=40 + batch, start=batch * 25, count=25))


def time_part(w: Writer) -> None:
    """years(d), months(created), hours(ts) together."""
    w.create("time_part", "id bigint, d date, created timestamp, ts timestamp", "years(d), months(created), hours(ts)")
    rng = random.Random(50)
    rows = [
        (
            i,
            dt.date(2022 + rng.randrange(2), 1 + rng.randrange(12), 1 + rng.randrange(28)),
            dt.datetime(2024, 1 + rng.randrange(2), 1 + rng.randrange(28), rng.randrange(24)),
            _EPOCH + dt.timedelta(hours=rng.randrange(3), minutes=rng.randrange(60)),
        )
        for i in range(24)
    ]
    w.insert("time_part", rows)


def spec_evolution(w: Writer) -> None:
    """Spec 0 identity(category); spec 1 adds bucket(4, id); spec 2 drops category. Data under each."""
    name = "spec_evolution"
    w.create(name, STD_COLUMNS, "category")
    w.insert(name, std_rows(seed=60, start=0, count=20))
    w.sql(f"ALTER TABLE {w.ident(name)} ADD PARTITION FIELD bucket(4, id)")
    w.insert(name, std_rows(seed=61, start=20, count=20))
    w.sql(f"ALTER TABLE {w.ident(name)} DROP PARTITION FIELD category")
    w.insert(name, std_rows(seed=62, start=40, count=20))


def schema_evolution(w: Writer) -> None:
    """identity(grp); then rename a column, promote int->bigint, add, drop and rename the partition source."""
    name, t = "schema_evolution", w.ident("schema_evolution")
    w.create(name, "id int, grp string, name string, value double", "grp")
    rng = random.Random(70)

    def rows(start: int, width: int) -> list[tuple[Any, ...]]:
        return [(i, rng.choice("xy"), f"n{i}", float(i), f"e{i}")[:width] for i in range(start, start + 10)]

    w.insert(name, rows(0, 4))
    w.sql(f"ALTER TABLE {t} RENAME COLUMN name TO label")
    w.sql(f"ALTER TABLE {t} ALTER COLUMN id TYPE bigint")
    w.insert(name, rows(10, 4))
    w.sql(f"ALTER TABLE {t} ADD COLUMN extra string")
    w.insert(name, rows(20, 5))
    w.sql(f"ALTER TABLE {t} DROP COLUMN value")
    w.sql(f"ALTER TABLE {t} RENAME COLUMN grp TO grp2")
    w.insert(name, [(i, g, label, extra) for i, g, label, _, extra in rows(30, 5)])


def mor_position_deletes(w: Writer) -> None:
    """Merge-on-read v2: partition-scoped, then (default) file-scoped position deletes, an UPDATE, more data."""
    name, t = "mor_position_deletes", w.ident("mor_position_deletes")
    w.create(name, STD_COLUMNS, "category", {**MERGE_ON_READ, "write.delete.granularity": "partition"})
    w.insert(name, std_rows(seed=80, start=0, count=40))
    w.insert(name, std_rows(seed=81, start=40, count=40))
    w.sql(f"DELETE FROM {t} WHERE id % 7 = 0")
    # Spark's own default granularity from here on: file-scoped in Iceberg 1.10 (the smoke test checks it)
    w.sql(f"ALTER TABLE {t} UNSET TBLPROPERTIES ('write.delete.granularity')")
    w.sql(f"DELETE FROM {t} WHERE id % 5 = 1")
    w.sql(f"UPDATE {t} SET amount = -1.0D WHERE id % 11 = 2")
    w.insert(name, std_rows(seed=82, start=0, count=20))


def equality_deletes(w: Writer) -> None:
    """Spec 0 unpartitioned, spec 1 identity(category); global and partition-scoped equality deletes.

    Sequence numbers: 1 data (spec 0), 2 data (spec 1), 3 global delete on id (spec 0; its id bounds
    match only one file), 4 global delete on name, 5 delete on (id, name) in category=a, 6 data again
    (newer than those deletes), 7 delete on id in category=b.
    """
    name, t = "equality_deletes", w.ident("equality_deletes")
    w.create(name, "id int, category string, name string")
    rng = random.Random(90)

    def rows(start: int, count: int) -> list[tuple[Any, ...]]:
        return [(i, rng.choice("abc"), f"n{i}") for i in range(start, start + count)]

    w.insert(name, rows(0, 30))
    w.sql(f"ALTER TABLE {t} ADD PARTITION FIELD category")
    second = rows(30, 30)
    w.insert(name, second)
    w.commit_equality_deletes(name, 0, ["id"], [(3,), (12,)])
    w.commit_equality_deletes(name, 0, ["name"], [("n45",), ("n46",)])
    in_a = [(i, n) for i, c, n in second if c == "a"][:3]
    w.commit_equality_deletes(name, 1, ["id", "name"], in_a, partition={"category": "a"})
    w.insert(name, rows(0, 60))
    w.commit_equality_deletes(name, 1, ["id"], [(1,), (2,), (50,)], partition={"category": "b"})


def v3_dv(w: Writer) -> None:
    """Format v3 merge-on-read: deletion vectors (Puffin), a second DELETE rewriting them, an UPDATE."""
    name, t = "v3_dv", w.ident("v3_dv")
    w.create(name, STD_COLUMNS, "category", MERGE_ON_READ, format_version=3)
    w.insert(name, std_rows(seed=100, start=0, count=40))
    w.insert(name, std_rows(seed=101, start=40, count=40))
    w.sql(f"DELETE FROM {t} WHERE id % 7 = 0")
    w.sql(f"DELETE FROM {t} WHERE id % 5 = 1")
    w.sql(f"UPDATE {t} SET amount = -1.0D WHERE id % 11 = 2")
    w.insert(name, std_rows(seed=102, start=80, count=20))


def upgrade_v3(w: Writer) -> None:
    """v2 partition-scoped position deletes, then upgraded to v3 and deleted again in category=a only.

    Files of category=a then have a DV (which hides the legacy deletes); the others keep the legacy ones.
    """
    name, t = "upgrade_v3", w.ident("upgrade_v3")
    w.create(name, STD_COLUMNS, "category", {**MERGE_ON_READ, "write.delete.granularity": "partition"})
    w.insert(name, std_rows(seed=110, start=0, count=40))
    w.insert(name, std_rows(seed=111, start=40, count=40))
    w.sql(f"DELETE FROM {t} WHERE id % 7 = 0")
    w.set_properties(name, {"format-version": "3"})
    w.sql(f"DELETE FROM {t} WHERE id % 5 = 1 AND category = 'a'")
    w.insert(name, std_rows(seed=112, start=80, count=20))


def row_groups(w: Writer) -> None:
    """8 KiB Parquet row groups: files with many split offsets."""
    name = "row_groups"
    w.create(
        name,
        "id bigint, payload string",
        properties={
            "write.parquet.row-group-size-bytes": "8192",
            "write.parquet.row-group-check-min-record-count": "10",
            "write.parquet.row-group-check-max-record-count": "50",
        },
    )
    for start, end in ((0, 4000), (4000, 5000)):
        w.sql(f"INSERT INTO {w.ident(name)} SELECT id, sha2(CAST(id AS STRING), 256) FROM range({start}, {end}, 1, 2)")


def avro_format(w: Writer) -> None:
    """Avro data files: no split offsets, so files are cut in fixed-size splits."""
    name = "avro_format"
    w.create(name, "id bigint, payload string", properties={"write.format.default": "avro"})
    for start, end in ((0, 600), (600, 700)):
        w.sql(f"INSERT INTO {w.ident(name)} SELECT id, sha2(CAST(id AS STRING), 256) FROM range({start}, {end}, 1, 2)")


def _format_evolved(w: Writer, name: str, file_format: str) -> None:
    """`file_format` data and delete files (write.format.default; delete files follow it): identity(category);
    partition-scoped position deletes; a rename, an int -> bigint promotion and an added column; file-scoped
    position deletes, an UPDATE; equality deletes written by Iceberg's writer in the format."""
    t = w.ident(name)
    properties = {**MERGE_ON_READ, "write.format.default": file_format, "write.delete.granularity": "partition"}
    w.create(name, "id int, category string, name string, ts timestamp, amount double", "category", properties)
    w.insert(name, std_rows(seed=200, start=0, count=40))
    w.sql(f"DELETE FROM {t} WHERE id % 7 = 0")
    w.sql(f"ALTER TABLE {t} RENAME COLUMN name TO label")
    w.sql(f"ALTER TABLE {t} ALTER COLUMN id TYPE bigint")
    w.sql(f"ALTER TABLE {t} ADD COLUMN extra string")
    w.insert(name, [(*row, f"e{row[0]}") for row in std_rows(seed=201, start=40, count=40)])
    w.sql(f"ALTER TABLE {t} UNSET TBLPROPERTIES ('write.delete.granularity')")
    w.sql(f"DELETE FROM {t} WHERE id % 5 = 1")
    w.sql(f"UPDATE {t} SET amount = -1.0D WHERE id % 11 = 2")
    w.commit_equality_deletes(
        name,
        0,
        ["label"],
        [("apple-3",), ("banana-44",), ("cherry-45",), ("date-46",)],
        partition={"category": "a"},
        file_format=file_format,
    )


def orc_evolved(w: Writer) -> None:
    """ORC data and delete files (see _format_evolved)."""
    _format_evolved(w, "orc_evolved", "orc")


def avro_evolved(w: Writer) -> None:
    """Avro data and delete files (see _format_evolved)."""
    _format_evolved(w, "avro_evolved", "avro")


def mixed_formats(w: Writer) -> None:
    """One table, three data formats: Parquet, ORC and Avro appends (days(ts)); Avro position deletes over all
    three, then Parquet ones, then an ORC equality delete in one day."""
    name, t = "mixed_formats", w.ident("mixed_formats")
    w.create(name, STD_COLUMNS, "days(ts)", MERGE_ON_READ)
    for i, file_format in enumerate(("parquet", "orc", "avro")):
        w.set_properties(name, {"write.format.default": file_format})
        w.insert(name, std_rows(seed=210 + i, start=i * 30, count=30))
    w.sql(f"DELETE FROM {t} WHERE id % 4 = 0")
    w.set_properties(name, {"write.format.default": "parquet"})
    w.sql(f"DELETE FROM {t} WHERE id % 9 = 1")
    day = (dt.date(2024, 1, 2) - dt.date(1970, 1, 1)).days  # days(ts) of 2024-01-02: only its rows go
    names = [(row[2],) for row in std_rows(seed=210, start=0, count=30)[::3]]  # every third Parquet row's name
    names += [(row[2],) for row in std_rows(seed=211, start=30, count=30)[::3]]  # and ORC row's
    w.commit_equality_deletes(name, 0, ["name"], names, {"ts_day": day}, file_format="orc")


def mixed_v3(w: Writer) -> None:
    """Format v3 over ORC and Avro data files: deletion vectors (Puffin) and an UPDATE."""
    name, t = "mixed_v3", w.ident("mixed_v3")
    w.create(name, STD_COLUMNS, "category", {**MERGE_ON_READ, "write.format.default": "orc"}, format_version=3)
    w.insert(name, std_rows(seed=220, start=0, count=40))
    w.set_properties(name, {"write.format.default": "avro"})
    w.insert(name, std_rows(seed=221, start=40, count=40))
    w.sql(f"DELETE FROM {t} WHERE id % 7 = 0")
    w.sql(f"UPDATE {t} SET amount = -1.0D WHERE id % 11 = 2")


def _types_in(w: Writer, name: str, file_format: str) -> None:
    """all_types' rows in another data format."""
    w.create(name, ALL_TYPES_COLUMNS, "b", {"write.format.default": file_format})
    floats = ("CAST('NaN' AS FLOAT)", "CAST(1.5 AS FLOAT)", "CAST('-Infinity' AS FLOAT)", "CAST(-0.0 AS FLOAT)")
    doubles = ("CAST('NaN' AS DOUBLE)", "2.25D", "CAST('Infinity' AS DOUBLE)", "0.0D")
    rows = [_all_types_row(i, ("TRUE", "FALSE", "NULL")[i % 3], floats[i % 4], doubles[(i + 1) % 4]) for i in range(9)]
    w.sql(f"INSERT INTO {w.ident(name)} VALUES {', '.join(rows)}")


def orc_types(w: Writer) -> None:
    """Every type of all_types, in ORC."""
    _types_in(w, "orc_types", "orc")


def avro_types(w: Writer) -> None:
    """Every type of all_types, in Avro."""
    _types_in(w, "avro_types", "avro")


def orc_stripes(w: Writer) -> None:
    """ORC files of many small stripes (their offsets are the split offsets); small splits cut them."""
    name = "orc_stripes"
    w.create(
        name,
        "id bigint, payload string",
        properties={
            "write.format.default": "orc",
            "write.orc.stripe-size-bytes": "16384",
            "write.orc.block-size-bytes": "16384",
        },
    )
    for start, end in ((0, 20000), (20000, 25000)):
        w.sql(f"INSERT INTO {w.ident(name)} SELECT id, sha2(CAST(id AS STRING), 256) FROM range({start}, {end}, 1, 2)")


def many_manifests(w: Writer) -> None:
    """16 appends, one manifest each: the manifests are read in Java HashSet order."""
    w.create("many_manifests", "id bigint, name string")
    for batch in range(16):
        w.insert("many_manifests", [(batch * 3 + i, f"m{batch}-{i}") for i in range(3)])


def snapshots(w: Writer) -> None:
    """Main: append, append (tag_x), delete (copy-on-write; branch_x forks here), append, delete.

    branch_x then gets its own append.
    """
    name, t = "snapshots", w.ident("snapshots")
    w.create(name, STD_COLUMNS)
    w.insert(name, std_rows(seed=120, start=0, count=20))
    w.insert(name, std_rows(seed=121, start=20, count=20))
    w.sql(f"ALTER TABLE {t} CREATE TAG tag_x")
    w.sql(f"DELETE FROM {t} WHERE id % 3 = 0")
    w.sql(f"ALTER TABLE {t} CREATE BRANCH branch_x")
    w.insert(name, std_rows(seed=122, start=1000, count=15), branch="branch_x")
    w.insert(name, std_rows(seed=123, start=40, count=20))
    w.sql(f"DELETE FROM {t} WHERE id = 5")


def nested_nan(w: Writer) -> None:
    """A struct column, NaN and null floating-point values; three appends with different stats."""
    name = "nested_nan"
    w.create(name, "id bigint, info struct<a: int, b: string>, f float, d double")
    nan, inf = float("nan"), float("inf")
    batches = (
        [(1, (1, "x"), 1.0, 0.5), (2, (2, "y"), 2.5, None), (3, None, None, -1.0)],
        [(4, (10, "z"), nan, nan), (5, (11, None), nan, nan)],
        [(6, (None, "x"), 0.0, inf), (7, (20, "w"), -0.0, -inf), (8, (21, "x"), None, None)],
    )
    for rows in batches:
        values = ", ".join(
            f"({i}, {_struct_sql(st)}, {_float_sql(f, 'FLOAT')}, {_float_sql(d, 'DOUBLE')})" for i, st, f, d in rows
        )
        w.sql(f"INSERT INTO {w.ident(name)} VALUES {values}")


def _struct_sql(value: tuple[Any, Any] | None) -> str:
    if value is None:
        return "NULL"
    return f"named_struct('a', {sql_literal(value[0])}, 'b', {sql_literal(value[1])})"


def _float_sql(value: float | None, typ: str) -> str:
    if value is None:
        return "NULL"
    if value != value or value in (float("inf"), -float("inf")):
        return f"CAST('{value}' AS {typ})"  # 'nan', 'inf', '-inf'
    return f"CAST({value!r} AS {typ})"


# Timestamps around 1970-01-01, including Java's DateTimeUtil quirk: x.999999 just before a unit boundary
PRE_EPOCH_TIMES = (
    "1969-12-31 23:00:00.999999",
    "1969-12-31 23:59:59.999999",
    "1969-12-31 00:00:00.999999",
    "1969-12-01 00:00:00.999999",
    "1969-01-01 00:00:00.999999",
    "1969-12-31 22:59:59.999999",
    "1969-11-30 23:59:59.999999",
    "1968-12-31 23:59:59.999999",
    "1970-01-01 00:00:00",
    "1970-01-01 00:59:59.999999",
    "1969-06-15 12:00:00",
    "1971-03-01 01:00:00",
)


def pre_epoch(w: Writer) -> None:
    """The same timestamps partitioned by hours, days, months and years (one column per transform)."""
    name = "pre_epoch"
    w.create(
        name,
        "id bigint, ts_h timestamp, ts_d timestamp, ts_m timestamp, ts_y timestamp",
        "hours(ts_h), days(ts_d), months(ts_m), years(ts_y)",
    )
    values = ", ".join(f"({i}, " + ", ".join([f"TIMESTAMP '{t}'"] * 4) + ")" for i, t in enumerate(PRE_EPOCH_TIMES))
    w.sql(f"INSERT INTO {w.ident(name)} VALUES {values}")


def v1_gzip(w: Writer) -> None:
    """Format v1 (no sequence numbers: everything inherits 0) with gzip-compressed metadata.json files
    (v<N>.gz.metadata.json); identity(category), two appends and a copy-on-write delete."""
    name = "v1_gzip"
    w.create(name, STD_COLUMNS, "category", {"write.metadata.compression-codec": "gzip"}, format_version=1)
    w.insert(name, std_rows(seed=130, start=0, count=30))
    w.insert(name, std_rows(seed=131, start=30, count=30))
    w.sql(f"DELETE FROM {w.ident(name)} WHERE category = 'a'")


def v1_inline(w: Writer) -> None:
    """Format v1 whose snapshots list their manifests themselves (`manifests`, no manifest list), as tables
    written before manifest lists did: a v1 table (identity(category), two appends, a copy-on-write delete)
    whose latest metadata file is rewritten so, then made current (version-hint.text)."""
    name = "v1_inline"
    w.create(name, STD_COLUMNS, "category", format_version=1)
    w.insert(name, std_rows(seed=140, start=0, count=30))
    w.insert(name, std_rows(seed=141, start=30, count=30))
    w.sql(f"DELETE FROM {w.ident(name)} WHERE category = 'b'")
    table = w.load(name)
    manifests: dict[int, list[str]] = {}
    snapshots = table.snapshots().iterator()
    while snapshots.hasNext():
        snapshot = snapshots.next()
        manifests[snapshot.snapshotId()] = [m.path() for m in snapshot.allManifests(table.io())]
    metadata = Path(urllib.parse.urlparse(table.location()).path) / "metadata"
    version = int((metadata / "version-hint.text").read_text().strip())
    current = json.loads((metadata / f"v{version}.metadata.json").read_text())
    for entry in current["snapshots"]:
        del entry["manifest-list"]
        entry["manifests"] = manifests[entry["snapshot-id"]]
    (metadata / f"v{version + 1}.metadata.json").write_text(json.dumps(current, indent=2))
    (metadata / "version-hint.text").write_text(str(version + 1))


def sized_files(w: Writer, name: str = "sized_files", properties: dict[str, str] | None = None) -> None:
    """Metadata only: 40 data files of 10 MiB each (400 MiB) that do not exist, committed through Iceberg
    Java's API: what Spark's split size adapts to is the scan's size, so only planning is recorded."""
    w.create(name, "id bigint, data string", properties=properties)
    table = w.load(name)
    append = table.newFastAppend()
    for i in range(40):
        builder = w.jvm.org.apache.iceberg.DataFiles.builder(table.spec())
        builder = builder.withPath(f"{table.location()}/data/sized-{i:02d}.parquet").withFormat("PARQUET")
        append = append.appendFile(builder.withFileSizeInBytes(10 * 1024 * 1024).withRecordCount(10_000).build())
    append.commit()


def sized_unadapted(w: Writer) -> None:
    """sized_files with read.split.adaptive-size.enabled=false: Spark keeps the 128 MiB split size."""
    sized_files(w, "sized_unadapted", {"read.split.adaptive-size.enabled": "false"})


def empty(w: Writer) -> None:
    """Created, never written: no snapshot."""
    w.create("empty", STD_COLUMNS, "category")


# --- Tables for the read cases (read_cases.py): every type Spark writes, and files without field ids ---

ALL_TYPES_COLUMNS = (
    "b boolean, i int, l bigint, f float, d double, dec9 decimal(9,2), dec38 decimal(38,10), dt date, "
    "ts_ntz timestamp_ntz, ts timestamp, s string, bin binary, st struct<x: int, y: string>, "
    "lst array<struct<k: string, v: double>>, m map<string, int>"
)


def _all_types_row(i: int, b: str, f: str, d: str) -> str:
    """One row of ALL_TYPES_COLUMNS as SQL; i = 0 gives nulls in every nullable column but b."""
    if i == 0:
        return f"({b}, " + ", ".join(["NULL"] * 14) + ")"
    return (
        f"({b}, {i * 7 - 20}, {i * 10_000_000_000 - 1}, {f}, {d}, CAST('{i * 11 - 30}.{i:02d}' AS DECIMAL(9,2)), "
        f"CAST('-{i}2345678901234567890.01234567{i:02d}' AS DECIMAL(38,10)), DATE '1969-12-{20 + i:02d}', "
        f"TIMESTAMP_NTZ '2024-01-0{i} 1{i}:30:00.00000{i}', TIMESTAMP '1969-12-31 23:5{i}:59.99999{i}', "
        f"'s{i}-é', X'0{i}FF', named_struct('x', {i if i % 3 else 'NULL'}, 'y', 'y{i}'), "
        f"array(named_struct('k', 'k{i}', 'v', {i}.5D), named_struct('k', NULL, 'v', NULL)), "
        f"map('a', {i}, 'b', NULL))"
    )


def all_types(w: Writer) -> None:
    """Every Iceberg type Spark writes, with nulls, NaN and infinities next to numbers; identity(b)."""
    name = "all_types"
    w.create(name, ALL_TYPES_COLUMNS, "b")
    floats = ("CAST('NaN' AS FLOAT)", "CAST(1.5 AS FLOAT)", "CAST('-Infinity' AS FLOAT)", "CAST(-0.0 AS FLOAT)")
    doubles = ("CAST('NaN' AS DOUBLE)", "2.25D", "CAST('Infinity' AS DOUBLE)", "0.0D")
    rows = [_all_types_row(i, ("TRUE", "FALSE", "NULL")[i % 3], floats[i % 4], doubles[(i + 1) % 4]) for i in range(9)]
    w.sql(f"INSERT INTO {w.ident(name)} VALUES {', '.join(rows)}")


def identity_types(w: Writer) -> None:
    """identity() partitions on one column of each type with a JSON single-value form; a null partition."""
    name = "identity_types"
    w.create(
        name,
        "id int, l bigint, dec9 decimal(9,2), dt date, ts_ntz timestamp_ntz, ts timestamp, s string, bin binary",
        "l, dec9, dt, ts_ntz, ts, s, bin",
    )
    w.sql(
        f"INSERT INTO {w.ident(name)} VALUES "
        "(1, -5, CAST('-0.50' AS DECIMAL(9,2)), DATE '1969-12-31', TIMESTAMP_NTZ '1969-12-31 23:59:59.999999', "
        "TIMESTAMP '1969-12-31 23:59:59.999999', 'a/b c=d', X'00FF'), "
        "(2, 9000000000, CAST('1234567.89' AS DECIMAL(9,2)), DATE '2024-02-29', "
        "TIMESTAMP_NTZ '2024-02-29 12:00:00.000001', TIMESTAMP '2024-02-29 12:00:00.000001', 'ü', X''), "
        "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
    )


def name_mapped(w: Writer) -> None:
    """Parquet written by plain Spark (no field ids, columns in another order, one column the table lacks)
    added with add_files, which sets schema.name-mapping.default; then a rename (the mapping keeps the old
    name) and an Iceberg append (with field ids). identity(category) comes only from the partition path."""
    name, t = "name_mapped", w.ident("name_mapped")
    w.create(
        name, "id bigint, category string, score double, info struct<a: int, b: string>, tags array<string>", "category"
    )
    source = f"{w.load(name).location()}/imported"
    rows = [
        (float(i) / 4, i, (i, f"b{i}") if i % 4 else None, [f"t{i}", None] if i % 3 else None, f"x{i}", "ab"[i % 2])
        for i in range(12)
    ]
    schema = (
        "score double, id bigint, info struct<a: int, b: string>, tags array<string>, extra string, category string"
    )
    w.spark.createDataFrame(rows, schema).coalesce(1).write.partitionBy("category").parquet(source)
    w.sql(f"CALL {CATALOG}.system.add_files(table => '{NAMESPACE}.{name}', source_table => '`parquet`.`{source}`')")
    w.sql(f"ALTER TABLE {t} RENAME COLUMN score TO points")
    w.sql(f"INSERT INTO {t} VALUES (100, 'a', 1.5D, named_struct('a', 100, 'b', 'b100'), array('t100'))")


def metrics_modes(w: Writer) -> None:
    """One column per metrics mode: s and bin full, c counts, n none, t the default truncate(16); strings and
    binary values longer than 16 that differ only past their 16th character or byte."""
    name = "metrics_modes"
    w.create(
        name,
        "id bigint, s string, t string, c bigint, n bigint, bin binary",
        properties={
            "write.metadata.metrics.column.s": "full",
            "write.metadata.metrics.column.bin": "full",
            "write.metadata.metrics.column.c": "counts",
            "write.metadata.metrics.column.n": "none",
        },
    )
    prefix = "a-long-common-prefix-"
    for batch in range(2):
        rows = ", ".join(
            f"({i}, '{prefix}{i:03d}', '{prefix}{i:03d}', {i * 3}, {i * 5}, X'{'AB' * 18}{i:04X}')"
            for i in range(batch * 10, batch * 10 + 10)
        )
        w.sql(f"INSERT INTO {w.ident(name)} VALUES {rows}")


def fixed_types(w: Writer) -> None:
    """fixed[2] (identity partition, a null one too) and fixed[4] columns, which Spark SQL cannot declare: the
    table is created with Iceberg Java's API, then written by Spark SQL from BINARY values of the right length
    (Iceberg's Spark writer turns them into fixed); two appends with different bounds."""
    name = "fixed_types"
    types = w.jvm.org.apache.iceberg.types.Types
    fields = w.jvm.java.util.ArrayList()
    fields.add(types.NestedField.optional(1, "id", types.LongType.get()))
    fields.add(types.NestedField.optional(2, "part", types.FixedType.ofLength(2)))
    fields.add(types.NestedField.optional(3, "fx", types.FixedType.ofLength(4)))
    schema = w.jvm.org.apache.iceberg.Schema(fields)
    spec = w.jvm.org.apache.iceberg.PartitionSpec.builderFor(schema).identity("part").build()
    properties = w.jvm.java.util.HashMap()
    properties.put("format-version", "2")
    catalog = w.jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergCatalog(w.spark._jsparkSession, CATALOG)
    identifier = w.jvm.org.apache.iceberg.catalog.TableIdentifier.parse(f"{NAMESPACE}.{name}")
    catalog.createTable(identifier, schema, spec, properties)
    w.sql(
        f"INSERT INTO {w.ident(name)} VALUES (1, X'00FF', X'00000001'), (2, X'00FF', X'0000FFFF'), "
        "(3, X'0A0B', X'00010000')"
    )
    w.sql(f"INSERT INTO {w.ident(name)} VALUES (4, X'0A0B', X'7F000000'), (5, X'FFFF', X'FFFFFFFF'), (6, NULL, NULL)")


def _ordered_by(w: Writer, name: str, order: str) -> None:
    w.sql(f"ALTER TABLE {w.ident(name)} WRITE ORDERED BY {order}")


def _std_values(rows: Sequence[Sequence[Any]]) -> str:
    """STD_COLUMNS rows as SQL VALUES, the amount (a double) by _float_sql (NaN, -0.0)."""
    return ", ".join(
        "(" + ", ".join([*(sql_literal(v) for v in row[:4]), _float_sql(row[4], "DOUBLE")]) + ")" for row in rows
    )


def sorted_ids(w: Writer) -> None:
    """Unpartitioned, WRITE ORDERED BY id (ascending, nulls first): each append is range-distributed into
    sorted files that do not overlap; the second append's ids overlap the first's, the third's do not; null
    ids; a last append with id's metrics off (a file without bounds)."""
    name = "sorted_ids"
    w.create(name, STD_COLUMNS)
    _ordered_by(w, name, "id")
    w.insert(name, std_rows(61, 0, 120))
    w.insert(name, std_rows(62, 60, 120))
    w.insert(name, std_rows(63, 400, 80))
    w.insert(name, [(None, "a", "null-1", _EPOCH, 1.0), (None, "b", "null-2", _EPOCH, 2.0), *std_rows(64, 300, 6)])
    w.set_properties(name, {"write.metadata.metrics.column.id": "none"})
    w.insert(name, std_rows(65, 150, 40))


def sorted_multi(w: Writer) -> None:
    """Partitioned by days(ts), WRITE ORDERED BY category ASC NULLS LAST, amount DESC NULLS FIRST: a string
    and a double key with null, NaN, -0.0 and 0.0 amounts; three appends whose files overlap on category."""
    name = "sorted_multi"
    w.create(name, STD_COLUMNS, "days(ts)")
    _ordered_by(w, name, "category ASC NULLS LAST, amount DESC NULLS FIRST")
    specials = (float("nan"), -0.0, 0.0, None, 1000.0)
    for batch in range(3):
        rows = std_rows(70 + batch, batch * 100, 90, categories=("a", "b", "c", None) if batch != 1 else ("b", "c"))
        rows = [(*r[:4], specials[i % 5] if i % 7 == 0 else r[4]) for i, r in enumerate(rows)]
        w.sql(f"INSERT INTO {w.ident(name)} VALUES {_std_values(rows)}")


def sorted_transforms(w: Writer) -> None:
    """Unpartitioned, WRITE ORDERED BY days(ts) DESC, name: a transformed key in descending order, then names
    that share a 21-character prefix in some appends (their bounds are truncated to 16 characters)."""
    name = "sorted_transforms"
    w.create(name, STD_COLUMNS)
    _ordered_by(w, name, "days(ts) DESC, name")
    for batch in range(4):
        rows = std_rows(80 + batch, batch * 50, 50, days=2 + batch)
        if batch % 2:
            rows = [(*r[:2], f"a-long-common-prefix-{r[0]:04d}", *r[3:]) for r in rows]
        w.insert(name, rows)


def sorted_bucket(w: Writer) -> None:
    """WRITE ORDERED BY bucket(4, id), id: an order whose first field file bounds cannot order."""
    name = "sorted_bucket"
    w.create(name, STD_COLUMNS)
    _ordered_by(w, name, "bucket(4, id), id")
    w.insert(name, std_rows(90, 0, 20))


TABLE_BUILDERS: dict[str, Callable[[Writer], None]] = {
    builder.__name__: builder
    for builder in (
        unpartitioned,
        identity_part,
        day_part,
        bucket_part,
        truncate_part,
        time_part,
        spec_evolution,
        schema_evolution,
        mor_position_deletes,
        equality_deletes,
        v3_dv,
        upgrade_v3,
        row_groups,
        avro_format,
        orc_evolved,
        avro_evolved,
        mixed_formats,
        mixed_v3,
        orc_types,
        avro_types,
        orc_stripes,
        many_manifests,
        snapshots,
        nested_nan,
        pre_epoch,
        v1_gzip,
        v1_inline,
        sized_files,
        sized_unadapted,
        empty,
        all_types,
        identity_types,
        name_mapped,
        metrics_modes,
        fixed_types,
        sorted_ids,
        sorted_multi,
        sorted_transforms,
        sorted_bucket,
    )
}

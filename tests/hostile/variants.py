"""Hostile variants of one table Iceberg Java wrote: each case changes one thing in its metadata.json, its
current manifest list or one of its manifests, as an attacker (or a broken writer) who can write files into a
served warehouse would.

java_verdicts.py (run with Iceberg Java 1.10.2) writes every case as a table of its own and records what Java
does with it: refuses to load it, refuses to plan it, or plans it (which files, which splits).
test_java_verdicts.py plans each through the service and holds it to that verdict. The mutations are plain
functions over the parsed JSON, the Avro records (fastavro's dicts) or the raw bytes, so that both sides
build exactly the same files from this one module (standard library and fastavro only: it runs in the Java
environment's venv too).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MISSING_ID = 1234567890123  # a snapshot id no snapshot has

Json = dict[str, Any]
Records = list[dict[str, Any]]


@dataclass(frozen=True)
class Case:
    """`target`: "metadata" (mutate takes and returns the metadata.json object, or returns its text),
    "manifest-list" or "manifest" (mutate takes the file's records and returns new ones, written with the
    file's own schema and codec), or "manifest-list-bytes" / "manifest-bytes" (mutate takes and returns the
    file's bytes). Manifest cases change the first data manifest of the current snapshot, "delete-manifest"
    and "delete-manifest-bytes" cases its first delete manifest."""

    name: str
    target: str
    mutate: Callable[[Any], Any]
    why: str = ""  # why we refuse what Java plans (only where we are stricter than Java), or ""


# --- metadata.json --------------------------------------------------------------------------------------


def current_schema(meta: Json) -> Json:
    return next(s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"])


def field(meta: Json, name: str) -> Json:
    return next(f for f in current_schema(meta)["fields"] if f["name"] == name)


def default_spec(meta: Json) -> Json:
    return next(s for s in meta["partition-specs"] if s["spec-id"] == meta["default-spec-id"])


def partition_field(meta: Json, transform_prefix: str) -> Json:
    return next(f for f in default_spec(meta)["fields"] if f["transform"].startswith(transform_prefix))


def current_snapshot(meta: Json) -> Json:
    return next(s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"])


def _set(path: tuple[Any, ...], value: Any) -> Callable[[Json], Json]:
    """A mutation setting meta[path...] = value (a path of keys; a callable key picks a nested object)."""

    def mutate(meta: Json) -> Json:
        target: Any = meta
        for key in path[:-1]:
            target = key(target) if callable(key) else target[key]
        target[path[-1]] = value
        return meta

    return mutate


def _drop(key: str) -> Callable[[Json], Json]:
    def mutate(meta: Json) -> Json:
        del meta[key]
        return meta

    return mutate


def _with(edit: Callable[[Json], None]) -> Callable[[Json], Json]:
    def mutate(meta: Json) -> Json:
        edit(meta)
        return meta

    return mutate


def _text(edit: Callable[[Json], str]) -> Callable[[Json], str]:
    return edit


def nested_structs(depth: int, first_id: int) -> str:
    """The JSON text of a field `deep` nesting `depth` structs (built as text: json.dumps would recurse)."""
    head = "".join(
        f'{{"id": {first_id + i}, "name": "f{i}", "required": false, "type": {{"type": "struct", "fields": ['
        for i in range(depth)
    )
    leaf = f'{{"id": {first_id + depth}, "name": "leaf", "required": false, "type": "int"}}'
    return head.replace('"name": "f0"', '"name": "deep"', 1) + leaf + "]}}" * depth


def nested_lists(depth: int, first_id: int) -> str:
    inner = '"int"'
    for i in range(depth):
        inner = f'{{"type": "list", "element-id": {first_id + i + 1}, "element": {inner}, "element-required": false}}'
    return f'{{"id": {first_id}, "name": "deep", "required": false, "type": {inner}}}'


def _with_deep_field(make: Callable[[int, int], str], depth: int) -> Callable[[Json], str]:
    """The metadata with a new top-level field nesting `depth` levels, in a new current schema."""

    def mutate(meta: Json) -> str:
        first_id = int(meta["last-column-id"]) + 1
        schema = current_schema(meta)
        marker = "__DEEP_FIELD__"
        schema["fields"].append(marker)
        meta["last-column-id"] = first_id + depth + 1
        return json.dumps(meta).replace(json.dumps(marker), make(depth, first_id))

    return mutate


def _with_deep_json(depth: int) -> Callable[[Json], str]:
    """The metadata with an unknown key holding `depth` nested arrays (readers ignore unknown keys)."""

    def mutate(meta: Json) -> str:
        text = json.dumps(meta)
        return text[:-1] + ', "x-deep": ' + "[" * depth + "]" * depth + "}"

    return mutate


def _dup_field_id(meta: Json) -> None:
    field(meta, "s")["id"] = field(meta, "id")["id"]


def _dup_nested_id(meta: Json) -> None:
    nested = field(meta, "nested")["type"]
    nested["fields"][0]["id"] = field(meta, "id")["id"]


def _dup_name(meta: Json) -> None:
    field(meta, "d")["name"] = "s"


def _unsorted_log(meta: Json) -> None:
    meta["snapshot-log"] = list(reversed(meta["snapshot-log"]))
    for i, entry in enumerate(meta["snapshot-log"]):  # apart by more than Java's minute of tolerance
        entry["timestamp-ms"] = 1_700_000_000_000 + (len(meta["snapshot-log"]) - i) * 3_600_000


def _dangling_ref(meta: Json) -> None:
    meta["refs"]["dangling"] = {"snapshot-id": MISSING_ID, "type": "tag"}


def _sort_source_missing(meta: Json) -> None:
    meta["sort-orders"].append(
        {
            "order-id": 1,
            "fields": [{"transform": "identity", "source-id": 999, "direction": "asc", "null-order": "nulls-first"}],
        }
    )
    meta["default-sort-order-id"] = 1


def _dup_partition_name(meta: Json) -> None:
    fields = default_spec(meta)["fields"]
    fields[1]["name"] = fields[0]["name"]


def _unsorted_metadata_log(meta: Json) -> None:
    meta["metadata-log"] = [
        {"timestamp-ms": 1_700_000_000_000 + (5 - i) * 3_600_000, "metadata-file": f"/m/v{i}.json"} for i in range(3)
    ]


def _partition_source(transform: str, column: str) -> Callable[[Json], Json]:
    """The day field of the spec, changed to `transform` of `column`."""

    def edit(meta: Json) -> None:
        target = partition_field(meta, "day")
        target.update(transform=transform, **{"source-id": field(meta, column)["id"]})

    return _with(edit)


def _old_spec(transform: str, source_id: int) -> Callable[[Json], Json]:
    """A second, older spec (not the default) with one field of `transform` on `source_id`."""

    def edit(meta: Json) -> None:
        meta["partition-specs"].append(
            {
                "spec-id": 1,
                "fields": [{"name": "old", "transform": transform, "source-id": source_id, "field-id": 1100}],
            }
        )
        meta["last-partition-id"] = 1100

    return _with(edit)


def _old_schema_with_duplicate_ids(meta: Json) -> None:
    old = json.loads(json.dumps(current_schema(meta)))
    old["schema-id"] = 5
    old["fields"][1]["id"] = old["fields"][0]["id"]
    meta["schemas"].insert(0, old)


def _spec_field_without_id(meta: Json) -> None:
    del default_spec(meta)["fields"][0]["field-id"]


def _first_sort_field(meta: Json) -> None:
    meta["sort-orders"].append({"order-id": 1, "fields": [[1]]})


def _duplicate_snapshot(meta: Json) -> None:
    meta["snapshots"].append(json.loads(json.dumps(meta["snapshots"][0])))


def _no_manifest_list(meta: Json) -> None:
    del current_snapshot(meta)["manifest-list"]


def _current_and_main_missing(meta: Json) -> None:
    meta["current-snapshot-id"] = MISSING_ID
    meta["refs"]["main"]["snapshot-id"] = MISSING_ID


def _type_of(name: str, text: str) -> Callable[[Json], Json]:
    return _with(lambda meta: field(meta, name).__setitem__("type", text))


METADATA_CASES = [
    Case("intact", "metadata", lambda meta: meta),
    Case("current_snapshot_missing", "metadata", _set(("current-snapshot-id",), MISSING_ID)),
    Case("main_ref_missing", "metadata", _set(("refs", "main", "snapshot-id"), MISSING_ID)),
    Case(
        "current_and_main_missing",
        "metadata",
        _with(_current_and_main_missing),
    ),
    Case("ref_missing", "metadata", _with(_dangling_ref)),
    Case("ref_type_unknown", "metadata", _set(("refs", "t1", "type"), "leaf")),
    Case("ref_without_snapshot", "metadata", _set(("refs", "t1"), {"type": "tag"})),
    Case("current_schema_missing", "metadata", _set(("current-schema-id",), 99)),
    Case("default_spec_missing", "metadata", _set(("default-spec-id",), 99)),
    Case("sort_order_missing", "metadata", _set(("default-sort-order-id",), 99)),
    Case("sort_source_missing", "metadata", _with(_sort_source_missing)),
    Case("field_id_duplicate", "metadata", _with(_dup_field_id)),
    Case("nested_field_id_duplicate", "metadata", _with(_dup_nested_id)),
    Case("field_name_duplicate", "metadata", _with(_dup_name)),
    Case("identifier_field_missing", "metadata", _set((current_schema, "identifier-field-ids"), [999])),
    Case("bucket_zero", "metadata", _set((lambda m: partition_field(m, "bucket"), "transform"), "bucket[0]")),
    Case("bucket_negative", "metadata", _set((lambda m: partition_field(m, "bucket"), "transform"), "bucket[-4]")),
    Case("truncate_zero", "metadata", _set((lambda m: partition_field(m, "truncate"), "transform"), "truncate[0]")),
    Case("transform_unknown", "metadata", _set((lambda m: partition_field(m, "day"), "transform"), "zorder")),
    Case(
        "transform_source_type",
        "metadata",
        _with(lambda m: partition_field(m, "day").__setitem__("source-id", field(m, "s")["id"])),
    ),
    Case("identity_of_struct", "metadata", _partition_source("identity", "nested")),
    Case("bucket_of_map", "metadata", _partition_source("bucket[4]", "m")),
    Case("truncate_of_timestamp", "metadata", _partition_source("truncate[4]", "ts")),
    Case("year_of_decimal", "metadata", _partition_source("year", "d")),
    Case("hour_of_string", "metadata", _partition_source("hour", "s")),
    Case("void_of_struct", "metadata", _partition_source("void", "nested")),
    Case("partition_source_missing", "metadata", _set((lambda m: partition_field(m, "day"), "source-id"), 999)),
    Case("old_spec_source_missing", "metadata", _old_spec("day", 999)),
    Case("old_spec_bucket_zero", "metadata", _old_spec("bucket[0]", 1)),
    Case("old_spec_day_of_string", "metadata", _old_spec("day", 2)),
    Case("old_schema_duplicate_ids", "metadata", _with(_old_schema_with_duplicate_ids)),
    Case("partition_name_duplicate", "metadata", _with(_dup_partition_name)),
    Case("decimal_precision_39", "metadata", _type_of("d", "decimal(39, 2)")),
    Case("decimal_scale_over_precision", "metadata", _type_of("d", "decimal(9, 12)")),
    Case("type_unknown", "metadata", _type_of("s", "varchar")),
    Case("format_version_0", "metadata", _set(("format-version",), 0)),
    Case("format_version_4", "metadata", _set(("format-version",), 4)),
    Case("format_version_9", "metadata", _set(("format-version",), 9)),
    Case("format_version_text", "metadata", _set(("format-version",), "2")),
    Case("format_version_3_without_row_id", "metadata", _set(("format-version",), 3)),
    Case("uuid_missing", "metadata", _drop("table-uuid")),
    Case("location_missing", "metadata", _drop("location")),
    Case("last_sequence_number_low", "metadata", _set(("last-sequence-number",), 1)),
    Case("snapshot_log_unsorted", "metadata", _with(_unsorted_log)),
    Case("metadata_log_unsorted", "metadata", _with(_unsorted_metadata_log)),
    Case("last_updated_before_log", "metadata", _set(("last-updated-ms",), 1)),
    Case("manifest_list_missing", "metadata", _with(_no_manifest_list)),
    Case("snapshot_schema_missing", "metadata", _set((current_snapshot, "schema-id"), 99)),
    Case("schemas_not_array", "metadata", _set(("schemas",), {"0": 1})),
    Case("snapshots_not_array", "metadata", _set(("snapshots",), {"0": 1})),
    Case("required_not_boolean", "metadata", _set((lambda m: field(m, "s"), "required"), "no")),
    Case("field_id_text", "metadata", _set((lambda m: field(m, "s"), "id"), "2")),
    Case("snapshot_id_fraction", "metadata", _set(("current-snapshot-id",), 1.5)),
    Case("snapshot_id_too_big", "metadata", _set(("current-snapshot-id",), 2**70)),
    Case("properties_not_strings", "metadata", _set(("properties",), {"a": {"b": 1}})),
    Case("metadata_not_object", "metadata", _text(lambda meta: "[1, 2]")),
    # found by the fuzzer (mutations.py), kept here with Java's verdicts
    Case(
        "partition_source_of_another_type",
        "metadata",
        _with(lambda m: partition_field(m, "truncate").__setitem__("source-id", field(m, "d")["id"])),
    ),
    Case("spec_field_without_id", "metadata", _with(_spec_field_without_id)),
    Case("sort_field_not_object", "metadata", _with(_first_sort_field)),
    Case("schema_type_not_struct", "metadata", _set((current_schema, "type"), "identity")),
    Case("statistics_null", "metadata", _set(("statistics",), None)),
    Case("partition_field_id_of_status", "metadata", _set((lambda m: partition_field(m, "day"), "field-id"), 0)),
    Case("partition_field_ids_twice", "metadata", _set((lambda m: partition_field(m, "day"), "field-id"), 1000)),
    Case("snapshot_ids_twice", "metadata", _with(_duplicate_snapshot)),
    Case("metadata_cut", "metadata", _text(lambda meta: json.dumps(meta)[:200])),
    Case("deep_struct_60", "metadata", _with_deep_field(nested_structs, 60)),
    Case("deep_struct_300", "metadata", _with_deep_field(nested_structs, 300)),
    Case("deep_list_300", "metadata", _with_deep_field(nested_lists, 300)),
    Case("deep_struct_3000", "metadata", _with_deep_field(nested_structs, 3000)),
    Case("deep_list_3000", "metadata", _with_deep_field(nested_lists, 3000)),
    Case("deep_json_900", "metadata", _with_deep_json(900)),
    Case("deep_json_200000", "metadata", _with_deep_json(200_000)),
]


# --- manifest lists and manifests -----------------------------------------------------------------------


def _first(edit: Callable[[dict[str, Any]], None]) -> Callable[[Records], Records]:
    """A mutation of the first record of a file."""

    def mutate(records: Records) -> Records:
        edit(records[0])
        return records

    return mutate


def _first_file(key: str, value: Any) -> Callable[[Records], Records]:
    return _first(lambda r: r["data_file"].__setitem__(key, value))


def _cut(data: bytes) -> bytes:
    return data[: len(data) * 2 // 3]


def _flip(data: bytes) -> bytes:
    """One byte flipped in the middle of the first data block (after the header's schema and sync marker)."""
    middle = len(data) - (len(data) - data.index(b"avro.codec") - 200) // 2
    return data[:middle] + bytes([data[middle] ^ 0x5A]) + data[middle + 1 :]


def _replace(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    return lambda data: data.replace(old, new, 1)


def _twice(records: Records) -> Records:
    return [*records, records[0]]


def _existing_without_sequence(record: dict[str, Any]) -> None:
    record.update(status=0, sequence_number=None, file_sequence_number=None)


def _min_over(record: dict[str, Any]) -> None:
    record["min_sequence_number"] = record["sequence_number"] + 10


MANIFEST_CASES = [
    Case("list_spec_unknown", "manifest-list", _first(lambda r: r.__setitem__("partition_spec_id", 7))),
    Case("list_content_unknown", "manifest-list", _first(lambda r: r.__setitem__("content", 5))),
    Case("list_path_empty", "manifest-list", _first(lambda r: r.__setitem__("manifest_path", ""))),
    Case(
        "list_path_absent",
        "manifest-list",
        _first(lambda r: r.__setitem__("manifest_path", r["manifest_path"] + ".gone.avro")),
    ),
    Case("list_length_negative", "manifest-list", _first(lambda r: r.__setitem__("manifest_length", -1))),
    Case("list_counts_negative", "manifest-list", _first(lambda r: r.__setitem__("added_files_count", -5))),
    Case("list_sequence_negative", "manifest-list", _first(lambda r: r.__setitem__("sequence_number", -3))),
    Case("list_min_sequence_over", "manifest-list", _first(_min_over)),
    Case("list_cut", "manifest-list-bytes", _cut),
    Case("list_manifest_twice", "manifest-list", _twice),
    Case("list_data_manifest_as_deletes", "manifest-list", _first(lambda r: r.__setitem__("content", 1))),
    Case("list_count_past_int", "manifest-list", _first(lambda r: r.__setitem__("existing_files_count", 2**62))),
    Case("manifest_existing_without_sequence", "manifest", _first(_existing_without_sequence)),
    Case("manifest_entry_ahead", "manifest", _first(lambda r: r.update(sequence_number=99, file_sequence_number=99))),
    Case("manifest_map_not_a_map", "manifest-bytes", _replace(b'"logicalType":"map"', b'"logicalVype":"map"')),
    Case("manifest_field_without_name", "manifest-bytes", _replace(b'{"name":"value"', b'{"naee":"value"')),
    Case("deletes_equality_without_ids", "delete-manifest", _first_file("content", 2)),
    Case("list_flipped", "manifest-list-bytes", _flip),
    Case("manifest_status_unknown", "manifest", _first(lambda r: r.__setitem__("status", 7))),
    Case("manifest_content_unknown", "manifest", _first_file("content", 9)),
    Case("manifest_content_deletes", "manifest", _first_file("content", 1)),
    Case("manifest_path_empty", "manifest", _first_file("file_path", "")),
    Case("manifest_format_unknown", "manifest", _first_file("file_format", "CSV")),
    Case("manifest_record_count_negative", "manifest", _first_file("record_count", -1)),
    Case("manifest_size_negative", "manifest", _first_file("file_size_in_bytes", -1)),
    Case("manifest_split_offsets_bad", "manifest", _first_file("split_offsets", [4, 10**15])),
    Case("manifest_sequence_negative", "manifest", _first(lambda r: r.__setitem__("sequence_number", -1))),
    Case("manifest_cut", "manifest-bytes", _cut),
    Case("manifest_flipped", "manifest-bytes", _flip),
]

CASES = {case.name: case for case in (*METADATA_CASES, *MANIFEST_CASES)}

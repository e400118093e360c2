"""null_free_fields: per manifest, the field ids every live entry's null_value_counts gives 0 (the spec's
field 110: a missing count, or a missing map, says nothing). Each case runs both ways an entry's bitmap is
made: by the compiled decoder reading real Avro (a plan without statistics) and from decoded counts (a plan
that reads them), which must agree."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import fastavro
import numpy as np
import orjson
import pyarrow as pa
import pytest

from planner_service.metadata.avro_columns import compile_schema, decode, read_container
from planner_service.metadata.null_free import (
    DEFAULT_WORDS,
    ZeroKeys,
    intersect,
    mask_words,
    null_free_fields,
    zero_keys_from_counts,
    zero_keys_of,
)
from tests.planning.factories import map_type

Rows = tuple[dict[int, int] | list[tuple[int, int]] | None, ...]
COUNTS = pa.large_list(pa.struct([("key", pa.int32()), ("value", pa.int64())]))
PATH = (2, 110)


def _schema(value: Any = "long") -> dict[str, Any]:
    """A manifest entry holding only data_file.null_value_counts, its values of Avro type `value` (Iceberg
    writes long)."""
    counts = {
        "name": "null_value_counts",
        "field-id": 110,
        "default": None,
        "type": map_type("k121_v122", 121, 122, value),
    }
    data_file = {"type": "record", "name": "r2", "fields": [counts]}
    return {
        "type": "record",
        "name": "manifest_entry",
        "fields": [{"name": "data_file", "field-id": 2, "type": data_file}],
    }


SCHEMA = _schema()


def _pairs(row: dict[int, int] | list[tuple[int, int]]) -> list[tuple[int, int]]:
    return list(row.items()) if isinstance(row, dict) else row


def by_decoder(rows: Rows, words: int = DEFAULT_WORDS) -> ZeroKeys | None:
    records = [
        {"data_file": {"null_value_counts": None if r is None else [{"key": k, "value": v} for k, v in _pairs(r)]}}
        for r in rows
    ]
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(SCHEMA), records, codec="deflate")
    container = read_container(out.getvalue())
    program = compile_schema(orjson.dumps(SCHEMA).decode(), frozenset({PATH}), False, (PATH, words))
    return zero_keys_of(decode(program, container.blocks).get(PATH), len(rows))


def by_counts(rows: Rows, words: int = DEFAULT_WORDS) -> ZeroKeys | None:
    values = [None if r is None else [{"key": k, "value": v} for k, v in _pairs(r)] for r in rows]
    return zero_keys_from_counts(pa.array(values, COUNTS), words)


PROVERS = pytest.mark.parametrize("prove", [by_decoder, by_counts], ids=["decoder", "counts"])


@PROVERS
def test_a_field_is_proven_when_every_live_file_counts_no_null(prove: Callable[..., ZeroKeys | None]) -> None:
    rows = prove(({1: 0, 2: 0, 3: 5}, {1: 0, 2: 0, 3: 0}, {1: 0, 3: 0}))
    assert null_free_fields(rows, np.array([True, True, True]), np.zeros(3, np.int64), 1) == [frozenset({1})]


@PROVERS
def test_deleted_entries_do_not_count(prove: Callable[..., ZeroKeys | None]) -> None:
    rows = prove(({1: 0}, {1: 7}, {1: 0}))
    live = np.array([True, False, True])  # the file with nulls is a DELETED entry
    assert null_free_fields(rows, live, np.zeros(3, np.int64), 1) == [frozenset({1})]


@PROVERS
def test_a_file_without_the_map_proves_nothing(prove: Callable[..., ZeroKeys | None]) -> None:
    rows = prove(({1: 0, 2: 0}, None))
    assert null_free_fields(rows, np.array([True, True]), np.zeros(2, np.int64), 1) == [frozenset()]


@PROVERS
def test_each_manifest_has_its_own_set_and_one_without_live_files_none(
    prove: Callable[..., ZeroKeys | None],
) -> None:
    rows = prove(({1: 0, 2: 0}, {1: 0, 2: 3}, {2: 0}, {1: 0}, {1: 0, 2: 0}))
    live = np.array([True, True, True, False, True])
    manifest = np.array([0, 0, 1, 2, 3], np.int64)
    per_manifest = null_free_fields(rows, live, manifest, 4)
    assert per_manifest == [frozenset({1}), frozenset({2}), None, frozenset({1, 2})]
    assert intersect(per_manifest) == frozenset()
    assert intersect([per_manifest[0], per_manifest[2]]) == frozenset({1})
    assert intersect([None, None]) is None


@PROVERS
def test_a_key_given_twice_with_another_count_is_not_proven(prove: Callable[..., ZeroKeys | None]) -> None:
    rows = prove(([(1, 0), (1, 3), (2, 0)], [(4, 2), (4, 0), (2, 0), (2, 0)]))
    assert null_free_fields(rows, np.array([True, True]), np.zeros(2, np.int64), 1) == [frozenset({2})]


@PROVERS
def test_ids_up_to_the_width_and_none_past_it(prove: Callable[..., ZeroKeys | None]) -> None:
    """Bits across words (0, 63, 64, 127); ids past 64 x words and negative ids are left unproven."""
    rows = prove(({0: 0, 63: 0, 64: 0, 127: 0, 128: 0, -1: 0},), 2)
    assert null_free_fields(rows, np.array([True]), np.zeros(1, np.int64), 1) == [frozenset({0, 63, 64, 127})]


def test_no_counts_at_all() -> None:
    live = np.array([True])
    assert null_free_fields(None, live, np.zeros(1, np.int64), 1) == [frozenset()]
    assert zero_keys_from_counts(pa.nulls(1), 1) is None
    assert zero_keys_of(pa.nulls(1), 1) is None


def test_a_map_of_another_shape_is_left_out_not_misread() -> None:
    """Values that may be null (a union) are not the map the decoder reduces: no output, no proof."""
    program = compile_schema(orjson.dumps(_schema(["null", "long"])).decode(), frozenset({PATH}), False, (PATH, 1))
    assert PATH not in program.fields


def test_the_width_follows_the_table_schema_in_the_header() -> None:
    schema = '{"type":"struct","fields":[{"id":1,"name":"a"},{"id":130,"name":"m","type":{"key-id":131}}]}'
    assert mask_words(schema) == 3  # ids up to 131: words 0..2
    assert mask_words(None) == DEFAULT_WORDS
    assert mask_words('{"fields":[{"id":70000}]}') == 1024  # capped: ids past 65,535 unproven


def test_the_decoder_checks_a_mask_program() -> None:
    """The compiled loop refuses a mask whose width is out of range or whose entries are not (int, long)."""
    from planner_service import _kernels

    program = compile_schema(orjson.dumps(SCHEMA).decode(), frozenset({PATH}), False, (PATH, 1))
    nodes = np.frombuffer(program.nodes, np.int32).reshape(-1, 4).copy()
    array = int(np.flatnonzero(nodes[:, 1] >= 0)[0])
    for width in (0, 1025):
        nodes[array, 3] = width
        with pytest.raises(ValueError, match="a bad mask width"):
            _kernels.decode_avro(nodes.tobytes(), program.children, program.kinds, [])
    nodes[array, 3] = 1
    nodes[nodes[:, 0] == 3, 0] = 2  # the value a long -> an int
    with pytest.raises(ValueError, match="not of \\(int, long\\) records"):
        _kernels.decode_avro(nodes.tobytes(), program.children, program.kinds, [])

"""spark_reads.spark_filter: an Iceberg JSON filter as Spark SQL of the same rows, or Untranslatable when a
literal is one Iceberg converts (an int out of range, a number for a decimal, a zoned timestamp for one
without zone) or a term Spark SQL cannot write (a transform); and the restricted reads: which masks each type
takes, each mask as Spark SQL, the restricted query, the choice of a restriction. No JVM: the differential
run uses them."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from read_restrictions import ACTIONS, applicable
from tests.differential.histories import PRIMITIVES
from tests.differential.spark_reads import (
    RESTRICTED_VIEW,
    Untranslatable,
    choose_restriction,
    mask_actions,
    mask_sql,
    restricted_query,
    rows_read,
    spark_filter,
)

TYPES = {"i": "int", "d": "decimal(9, 2)", "t": "timestamp", "tz": "timestamptz", "s": "string", "s.f": "long"}


@pytest.mark.parametrize(
    ("node", "sql"),
    [
        ({"type": "lt", "term": "i", "value": 3}, "(`i` < CAST(3 AS INT))"),
        ({"type": "not-in", "term": "d", "values": ["1.50"]}, "(`d` NOT IN (CAST('1.50' AS DECIMAL(9, 2))))"),
        ({"type": "not", "child": {"type": "is-null", "term": "I"}}, "(NOT (`I` IS NULL))"),
        (
            {"type": "eq", "term": "tz", "value": "2024-01-01T00:00:00-05:30"},
            "(`tz` = CAST('2024-01-01 00:00:00-05:30' AS TIMESTAMP))",
        ),
        ({"type": "starts-with", "term": "s", "value": "it's"}, "(startswith(`s`, 'it\\'s'))"),
        ({"type": "gt", "term": "s.f", "value": 2}, "(`s`.`f` > CAST(2 AS BIGINT))"),
    ],
)
def test_filters_spark_sql_writes_alike(node: Any, sql: str) -> None:
    assert spark_filter(node, TYPES) == sql


@pytest.mark.parametrize(
    "node",
    [
        {"type": "eq", "term": "i", "value": 2**40},
        {"type": "eq", "term": "i", "value": True},
        {"type": "eq", "term": "d", "value": 1.5},
        {"type": "eq", "term": "d", "value": "1.5"},
        {"type": "eq", "term": "t", "value": "2024-01-01T00:00:00+00:00"},
        {"type": "eq", "term": {"type": "transform", "transform": "day", "term": "t"}, "value": 3},
        {"type": "is-nan", "term": "i"},
        {"type": "eq", "term": "no_such_column", "value": 1},
    ],
)
def test_filters_whose_sql_would_mean_other_rows_are_left_out(node: Any) -> None:
    with pytest.raises(Untranslatable):
        spark_filter(node, TYPES)


def test_rows_are_read_for_snapshots_and_top_level_selects_only() -> None:
    schema = [{"id": 1, "name": "i", "type": "int"}, {"id": 2, "name": "s", "type": "string"}]
    request = {"snapshot": {"kind": "current"}, "filter": None, "select": ["i"]}
    assert rows_read(request, schema) == {"filter": None, "select": ["i"], "restricted": None}
    assert rows_read({**request, "select": ["i", "no_such_column"]}, schema) is None
    assert rows_read({**request, "snapshot": {"kind": "as_of", "value": 1}}, schema) is None


# --- restricted reads -------------------------------------------------------------------------------------

SCHEMA = [
    {"id": 1, "name": "i", "type": "int", "required": True},
    {"id": 2, "name": "s", "type": "string", "required": False},
    {"id": 3, "name": "n", "type": {"type": "struct", "fields": [{"id": 4, "name": "f", "type": "long"}]}},
]


@pytest.mark.parametrize("type_", PRIMITIVES)
def test_the_mask_table_is_read_restrictions_own(type_: str) -> None:
    """MASK_KINDS (stdlib only, for java_side.py) gives each type of the histories exactly the actions
    read_restrictions applies to it, but sha-256-query-local (a salt random per query)."""
    nullable = {"id": 1, "name": "c", "type": type_, "required": False}
    expected = [a for a in ACTIONS if a != "sha-256-query-local" and applicable(a, type_, required=False) is None]
    assert mask_actions(nullable) == expected
    required = [a for a in ACTIONS if a != "sha-256-query-local" and applicable(a, type_, required=True) is None]
    assert mask_actions({**nullable, "required": True}) == required


@pytest.mark.parametrize(
    ("action", "type_", "sql"),
    [
        ("mask-alphanum", "string", r"regexp_replace(regexp_replace(`c`, '[^0-9(),.\\-@]', 'x'), '[0-9]', 'n')"),
        (
            "show-last-4",
            "string",
            r"CASE WHEN char_length(`c`) <= 4 THEN `c` ELSE concat(regexp_replace(regexp_replace("
            r"substring(`c`, 1, char_length(`c`) - 4), '[^0-9(),.\\-@]', 'x'), '[0-9]', 'n'), substring(`c`, -4)) END",
        ),
        ("mask-to-default", "decimal(9, 2)", "CASE WHEN `c` IS NULL THEN NULL ELSE CAST(0 AS DECIMAL(9, 2)) END"),
        (
            "mask-to-default",
            "timestamp",
            "CASE WHEN `c` IS NULL THEN NULL ELSE CAST(TIMESTAMP_NTZ '9999-12-31 00:00:00' AS TIMESTAMP_NTZ) END",
        ),
        ("replace-with-null", "timestamptz", "CAST(NULL AS TIMESTAMP)"),
        ("truncate-to-month", "date", "trunc(`c`, 'MM')"),
        ("truncate-to-year", "timestamp", "CAST(date_trunc('YEAR', `c`) AS TIMESTAMP_NTZ)"),
        ("sha-256-global", "binary", "unhex(sha2(`c`, 256))"),
        (
            "sha-256-global",
            "int",
            "CAST(shiftright(shiftleft(CAST(conv(regexp_replace(substr(sha2(unhex(regexp_replace("
            "substr(lpad(hex(`c`), 16, '0'), 9, 8), '(..)(..)(..)(..)', '$4$3$2$1')), 256), 1, 8), "
            "'(..)(..)(..)(..)', '$4$3$2$1'), 16, 10) AS BIGINT), 32), 32) AS INT)",
        ),
    ],
)
def test_masks_are_written_as_the_spec_defines_them(action: str, type_: str, sql: str) -> None:
    """Each action as Spark SQL (what the differential run checks against our reader's masks, row by row)."""
    assert mask_sql(action, "`c`", type_) == sql


def test_a_restricted_read_filters_raw_values_then_masks_then_filters_masked_values() -> None:
    restriction = {
        "required-row-filter": {"type": "gt", "term": "i", "value": 3},
        "required-column-projections": [{"action": "replace-with-null", "field-id": 2}],
    }
    request = {"snapshot": {"kind": "current"}, "filter": {"type": "is-null", "term": "S"}, "select": ["s"]}
    assert restricted_query(restriction, request, SCHEMA) == (
        f"SELECT `s` FROM (SELECT `i`, CAST(NULL AS STRING) AS `s`, `n` FROM {RESTRICTED_VIEW} "
        "WHERE (`i` > CAST(3 AS INT))) AS masked WHERE (`S` IS NULL)"
    )
    assert rows_read({**request, "restriction": restriction}, SCHEMA) == {
        "filter": "(`S` IS NULL)",
        "select": ["s"],
        "restricted": restricted_query(restriction, request, SCHEMA),
    }
    required = {"required-column-projections": [{"action": "replace-with-null", "field-id": 1}]}
    read = rows_read({**request, "restriction": required}, SCHEMA)  # (a mask the column cannot take)
    assert read is not None and read["restricted"] is None


def test_a_restriction_takes_the_first_row_filter_spark_sql_can_write() -> None:
    unwritable = {"type": "eq", "term": {"type": "transform", "transform": "day", "term": "i"}, "value": 3}
    writable = {"type": "not-null", "term": "s"}
    chosen = [choose_restriction(random.Random(seed), SCHEMA, iter([unwritable, writable])) for seed in range(40)]
    assert {json.dumps(c.get("required-row-filter")) for c in chosen} == {json.dumps(writable), "null"}
    for restriction in chosen:
        masks = restriction["required-column-projections"]
        assert 1 <= len(masks) <= 2 and len({m["field-id"] for m in masks}) == len(masks)
        assert all(m["action"] in mask_actions(SCHEMA[m["field-id"] - 1]) for m in masks)

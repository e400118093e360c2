"""Residual filters keep the rows Spark keeps: SQL nulls, NaN ordering, transforms."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from spark_client.residual import UnsupportedResidual, referenced_names
from tests.conformance.cases import p, transform
from tests.spark_client.plans import field, file_task, plan, read_all, schema, write_rows

S = schema(field(1, "id", "long"), field(2, "f", "double"), field(3, "s", "string"), field(4, "ts", "timestamptz"))
ROWS: dict[str, list[Any]] = {
    "id": [0, 1, 2, 3, 4, 5, -11],
    "f": [math.nan, 2.0, 0.5, None, -0.0, 0.0, 1.0],
    "s": ["apple", "banana", None, "band", "cherry", "Banana", "b"],
    "ts": [-1, 0, 3_599_999_999, -3_600_000_000, 86_400_000_000, -86_400_000_001, None],
}


@pytest.fixture
def path(tmp_path: Path) -> str:
    ts = pa.array(ROWS["ts"], pa.int64()).cast(pa.timestamp("us", "UTC"))
    return write_rows(tmp_path / "f.parquet", S, {**ROWS, "ts": ts})


def ids(path: str, residual: Any) -> list[int]:
    return sorted(read_all(plan(S, [[file_task(path, residual=residual)]])).column("id").to_pylist())


NAN_CASES = [
    (p("gt", "f", 1.0), [0, 1]),  # Spark: NaN is above every number
    (p("gt-eq", "f", 1.0), [-11, 0, 1]),
    (p("lt", "f", 1.0), [2, 4, 5]),
    (p("lt-eq", "f", 0.0), [4, 5]),  # -0.0 = 0.0
    (p("eq", "f", 0.0), [4, 5]),
    (p("not-eq", "f", 2.0), [-11, 0, 2, 4, 5]),  # NaN != 2.0; null is dropped
    (p("in", "f", values=[2.0, 0.5]), [1, 2]),
    (p("not-in", "f", values=[2.0]), [-11, 0, 2, 4, 5]),
    (p("is-nan", "f"), [0]),
    (p("not-nan", "f"), [-11, 1, 2, 3, 4, 5]),  # not-nan keeps null, as Spark's NOT isnan()
    ({"type": "not", "child": p("gt", "f", 1.0)}, [-11, 2, 4, 5]),
]


@pytest.mark.parametrize(("residual", "expected"), NAN_CASES, ids=[str(c[0]) for c in NAN_CASES])
def test_floating_point_follows_spark(path: str, residual: Any, expected: list[int]) -> None:
    assert ids(path, residual) == expected


NULL_CASES = [
    (p("not-eq", "s", "band"), [-11, 0, 1, 4, 5]),
    (p("not-in", "s", values=["apple", "band"]), [-11, 1, 4, 5]),
    (p("not-starts-with", "s", "ban"), [-11, 0, 4, 5]),
    (p("starts-with", "s", "ban"), [1, 3]),
    ({"type": "not", "child": p("eq", "s", "apple")}, [-11, 1, 3, 4, 5]),
    ({"type": "or", "left": p("is-null", "s"), "right": p("eq", "s", "b")}, [-11, 2]),
    (
        {"type": "not", "child": {"type": "and", "left": p("eq", "s", "x"), "right": p("gt", "id", 0)}},
        [-11, 0, 1, 3, 4, 5],
    ),
    (p("in", "id", values=list(range(2, 200))), [2, 3, 4, 5]),  # a long in-list: is_in, nulls kept null
    (p("not-in", "s", values=[f"v{i}" for i in range(100)]), [-11, 0, 1, 3, 4, 5]),
    (False, []),
    ({"type": "true"}, [-11, 0, 1, 2, 3, 4, 5]),
    (p("eq", "S", "band"), [3]),  # a case-insensitive plan's residual
]


@pytest.mark.parametrize(("residual", "expected"), NULL_CASES, ids=[str(c[0]) for c in NULL_CASES])
def test_nulls_follow_sql(path: str, residual: Any, expected: list[int]) -> None:
    assert ids(path, residual) == expected


TRANSFORM_CASES = [
    (p("eq", transform("day", "ts"), "1969-12-31"), [0, 3]),  # -1 µs and -1 h are on 1969-12-31 (floor)
    (p("eq", transform("hour", "ts"), -1), [0, 3]),
    (p("eq", transform("hour", "ts"), 0), [1, 2]),
    (p("lt", transform("month", "ts"), 0), [0, 3, 5]),
    (p("eq", transform("year", "ts"), 0), [1, 2, 4]),
    (p("eq", transform("truncate[10]", "id"), -20), [-11]),  # floor, not towards zero
    (p("eq", transform("truncate[2]", "s"), "ba"), [1, 3]),
    (p("gt", {"type": "reference", "term": "ts"}, "1970-01-01T01:00:00+01:00"), [2, 4]),  # offset -> UTC
]


@pytest.mark.parametrize(("residual", "expected"), TRANSFORM_CASES, ids=[str(c[0]) for c in TRANSFORM_CASES])
def test_transform_terms(path: str, residual: Any, expected: list[int]) -> None:
    assert ids(path, residual) == expected


def test_a_bucket_term_is_refused(path: str) -> None:
    with pytest.raises(UnsupportedResidual, match="bucket"):
        ids(path, p("eq", transform("bucket[16]", "id"), 3))


def test_an_unknown_column_is_refused(path: str) -> None:
    with pytest.raises(UnsupportedResidual, match="'nope'"):
        ids(path, p("eq", "nope", 3))


def test_referenced_names() -> None:
    expr = {
        "type": "and",
        "left": p("eq", transform("day", "ts"), 3),
        "right": {"type": "not", "child": p("is-null", "s")},
    }
    assert referenced_names(expr) == {"ts", "s"}

"""Residual filters per partition, as Iceberg Java 1.10's ResidualEvaluator computes them (reference §5).
Each expectation is reasoned from the strict/inclusive projections of §4.2 evaluated with nulls-first
comparisons; day numbers: 2020-01-01 is day 18262, so 2020-01-01T00:00 is 18262 * 86400e6 µs."""

from __future__ import annotations

from decimal import Decimal

import pytest

from planner_service.expressions.binding import InvalidFilterError
from planner_service.expressions.expression import (
    FALSE,
    TRUE,
    Expression,
    Not,
    Op,
    Reference,
    UnboundTransform,
    and_,
    or_,
    predicate,
)
from planner_service.expressions.literals import Literal
from planner_service.expressions.residuals import ResidualEvaluator
from planner_service.metadata.partitioning import PartitionField, PartitionSpec, Transform, parse_transform
from planner_service.metadata.types import NestedField, Schema, StructType, parse_primitive

COLUMNS = [
    (1, "x", "int"),
    (2, "y", "int"),
    (3, "ts", "timestamp"),
    (4, "s", "string"),
    (5, "id", "long"),
    (6, "d", "decimal(9, 2)"),
    (7, "f", "double"),
]
_FIELDS = [NestedField(fid, name, parse_primitive(typ), required=False) for fid, name, typ in COLUMNS]
_FIELDS.append(NestedField(8, "req", parse_primitive("int"), required=True))
SCHEMA = Schema(0, StructType(tuple(_FIELDS)))
SOURCE_IDS = {name: fid for fid, name, _ in COLUMNS}

DAY_2020_01_01 = 18262
HOUR_2020_01_01 = DAY_2020_01_01 * 24  # 438288


def _spec(*fields: tuple[str, str, str]) -> PartitionSpec:
    """A spec from (source column, transform, partition name) triples."""
    return PartitionSpec(
        1,
        tuple(
            PartitionField(SOURCE_IDS[column], 1000 + pos, name, parse_transform(transform))
            for pos, (column, transform, name) in enumerate(fields)
        ),
    )


def _residual(spec: PartitionSpec, expr: Expression, *partition: object) -> Expression:
    return ResidualEvaluator(spec, SCHEMA, expr).residual_for(tuple(partition))


# --- identity partitions ------------------------------------------------------------------------------------

IDENTITY_X = _spec(("x", "identity", "x"))


@pytest.mark.parametrize(
    ("expr", "value", "expected"),
    [
        # a null partition value is below every literal: x < 5 is decided TRUE by the strict projection
        (predicate(Op.LT, "x", 5), None, TRUE),
        (predicate(Op.LT_EQ, "x", 5), None, TRUE),
        (predicate(Op.NOT_EQ, "x", 5), None, TRUE),
        (predicate(Op.GT, "x", 5), None, FALSE),
        (predicate(Op.EQ, "x", 5), None, FALSE),
        (predicate(Op.LT, "x", 5), 3, TRUE),
        (predicate(Op.LT, "x", 5), 7, FALSE),
        (predicate(Op.LT_EQ, "x", 5), 5, TRUE),
        (predicate(Op.IS_NULL, "x"), None, TRUE),
        (predicate(Op.IS_NULL, "x"), 1, FALSE),
        (predicate(Op.IN, "x", 1, 2), 2, TRUE),
        (predicate(Op.IN, "x", 1, 2), 3, FALSE),
        (predicate(Op.NOT_IN, "x", 1, 2), 3, TRUE),
    ],
)
def test_identity_partition_decides_its_column(expr: Expression, value: int | None, expected: Expression) -> None:
    assert _residual(IDENTITY_X, expr, value) is expected


def test_predicates_on_other_columns_stay_as_written() -> None:
    y_eq_1 = predicate(Op.EQ, "y", 1)
    assert _residual(IDENTITY_X, y_eq_1, 3) is y_eq_1  # the original unbound predicate, not a bound one
    assert _residual(IDENTITY_X, and_(predicate(Op.LT, "x", 5), y_eq_1), 3) is y_eq_1
    assert _residual(IDENTITY_X, and_(predicate(Op.LT, "x", 5), y_eq_1), 7) is FALSE
    assert _residual(IDENTITY_X, or_(predicate(Op.LT, "x", 5), y_eq_1), 7) is y_eq_1
    assert _residual(IDENTITY_X, or_(predicate(Op.LT, "x", 5), y_eq_1), 3) is TRUE


def test_not_is_kept_and_simplified_not_rewritten() -> None:
    y_eq_1 = predicate(Op.EQ, "y", 1)
    assert _residual(IDENTITY_X, Not(predicate(Op.LT, "x", 5)), 3) is FALSE  # not(TRUE)
    assert _residual(IDENTITY_X, Not(y_eq_1), 3) == Not(y_eq_1)  # no RewriteNot: stays not(y == 1)
    assert _residual(IDENTITY_X, Not(and_(predicate(Op.LT, "x", 5), y_eq_1)), 3) == Not(y_eq_1)


def test_binding_can_fold_a_predicate() -> None:
    assert _residual(IDENTITY_X, predicate(Op.IS_NULL, "req"), 3) is FALSE  # a required column
    assert _residual(IDENTITY_X, predicate(Op.LT, "x", 2**40), 3) is TRUE  # aboveMax for an int column


def test_case_insensitive_filter() -> None:
    evaluator = ResidualEvaluator(IDENTITY_X, SCHEMA, predicate(Op.LT, "X", 5), case_sensitive=False)
    assert evaluator.residual_for((3,)) is TRUE
    with pytest.raises(InvalidFilterError):
        ResidualEvaluator(IDENTITY_X, SCHEMA, predicate(Op.LT, "X", 5))


# --- day(ts) partitions -------------------------------------------------------------------------------------

DAY_TS = _spec(("ts", "day", "ts_day"))
FROM_2020_01_01 = predicate(Op.GT_EQ, "ts", "2020-01-01T00:00:00")  # strict: day > 18261, inclusive: >= 18262
TO_2020_01_03 = predicate(Op.LT, "ts", "2020-01-03T00:00:00")  # strict: day < 18264, inclusive: <= 18263
FROM_NOON = predicate(Op.GT_EQ, "ts", "2020-01-01T12:00:00")  # strict: day > 18262, inclusive: >= 18262


@pytest.mark.parametrize(
    ("day", "expected"),
    [
        (DAY_2020_01_01 - 1, FALSE),  # entirely before
        (DAY_2020_01_01, TRUE),  # entirely inside
        (DAY_2020_01_01 + 1, TRUE),
        (DAY_2020_01_01 + 2, FALSE),  # entirely after
    ],
)
def test_day_partitions_inside_or_outside_a_range(day: int, expected: Expression) -> None:
    assert _residual(DAY_TS, and_(FROM_2020_01_01, TO_2020_01_03), day) is expected


def test_day_partition_straddling_a_bound_keeps_that_predicate() -> None:
    assert _residual(DAY_TS, FROM_NOON, DAY_2020_01_01) is FROM_NOON
    assert _residual(DAY_TS, FROM_NOON, DAY_2020_01_01 + 1) is TRUE
    assert _residual(DAY_TS, FROM_NOON, DAY_2020_01_01 - 1) is FALSE
    assert _residual(DAY_TS, and_(FROM_NOON, TO_2020_01_03), DAY_2020_01_01) is FROM_NOON


def test_null_day_partition() -> None:
    assert _residual(DAY_TS, FROM_2020_01_01, None) is FALSE
    # Java: the strict projection ts_day < 18264 is true for null (nulls first), so the residual is TRUE
    assert _residual(DAY_TS, TO_2020_01_03, None) is TRUE


def test_pre_epoch_fix_keeps_the_predicate_for_day_zero() -> None:
    before_epoch = predicate(Op.LT, "ts", "1970-01-01T00:00:00")
    assert _residual(DAY_TS, before_epoch, -1) is TRUE  # strict: ts_day < 0
    # inclusive: t(-1 µs) = -1, fixed to ts_day <= 0 (values Iceberg <= 0.10 wrote one too large)
    assert _residual(DAY_TS, before_epoch, 0) is before_epoch
    assert _residual(DAY_TS, before_epoch, 1) is FALSE


def test_fields_are_tried_in_spec_order() -> None:
    spec = _spec(("ts", "day", "ts_day"), ("ts", "hour", "ts_hour"))
    # hour: strict ts_hour > 438299, inclusive ts_hour >= 438300
    assert _residual(spec, FROM_NOON, DAY_2020_01_01, HOUR_2020_01_01 + 12) is TRUE
    assert _residual(spec, FROM_NOON, DAY_2020_01_01, HOUR_2020_01_01 + 11) is FALSE
    assert _residual(spec, FROM_NOON, DAY_2020_01_01 + 1, HOUR_2020_01_01 + 30) is TRUE


# --- bucket partitions: bucket[16](34L) = 3 (hash 2017239379, spec Appendix B) -------------------------------

BUCKET_ID = _spec(("id", "bucket[16]", "id_bucket"))


def test_bucket_partitions() -> None:
    eq, not_eq, lt = predicate(Op.EQ, "id", 34), predicate(Op.NOT_EQ, "id", 34), predicate(Op.LT, "id", 34)
    assert _residual(BUCKET_ID, eq, 3) is eq  # no strict projection for eq; inclusive id_bucket == 3 holds
    assert _residual(BUCKET_ID, eq, 4) is FALSE
    assert _residual(BUCKET_ID, not_eq, 4) is TRUE  # strict id_bucket != 3
    assert _residual(BUCKET_ID, not_eq, 3) is not_eq
    assert _residual(BUCKET_ID, lt, 3) is lt  # no projection at all


def test_transform_term_on_the_same_transform() -> None:
    in_bucket_3 = predicate(Op.EQ, UnboundTransform(Reference("id"), Transform("bucket", 16)), 3)
    assert _residual(BUCKET_ID, in_bucket_3, 3) is TRUE  # projected unchanged: strict and inclusive
    assert _residual(BUCKET_ID, in_bucket_3, 4) is FALSE


def test_projection_binding_errors_surface_only_where_java_reaches_them() -> None:
    bucket_of_s = predicate(Op.EQ, UnboundTransform(Reference("s"), Transform("bucket", 16)), 3)
    # Identity.projectStrict copies the int literal 3 onto s_part, a string: binding it throws
    evaluator = ResidualEvaluator(_spec(("s", "identity", "s_part")), SCHEMA, bucket_of_s)
    with pytest.raises(InvalidFilterError):
        evaluator.residual_for(("a",))
    # with the bucket field first, Java decides before it reaches the identity field
    spec = _spec(("s", "bucket[16]", "s_bucket"), ("s", "identity", "s_part"))
    assert _residual(spec, bucket_of_s, 3, "a") is TRUE
    assert _residual(spec, bucket_of_s, 4, "a") is FALSE


# --- specs without fields, void fields ----------------------------------------------------------------------


def test_unpartitioned_spec_returns_the_filter_unchanged() -> None:
    unknown_column = predicate(Op.EQ, "nope", 1)  # never bound, as in Java's UnpartitionedResidualEvaluator
    assert ResidualEvaluator(PartitionSpec(0, ()), SCHEMA, unknown_column).residual_for(()) is unknown_column


def test_void_only_spec_still_binds() -> None:
    void_x = _spec(("x", "void", "x_null"))
    x_lt_5 = predicate(Op.LT, "x", 5)
    assert _residual(void_x, x_lt_5, None) is x_lt_5  # void has no projection
    assert _residual(void_x, predicate(Op.IS_NULL, "req"), None) is FALSE
    with pytest.raises(InvalidFilterError):
        ResidualEvaluator(void_x, SCHEMA, predicate(Op.EQ, "nope", 1))


# --- Java value semantics -----------------------------------------------------------------------------------


def test_decimal_sets_compare_with_scale() -> None:
    identity_d = _spec(("d", "identity", "d"))
    one_and_a_half = Literal("decimal", Decimal("1.5"))
    assert _residual(identity_d, predicate(Op.EQ, "d", one_and_a_half), Decimal("1.50")) is TRUE  # compareTo
    # BigDecimal.equals includes the scale, so HashSet{1.5, 2.5} does not contain 1.50
    in_set = predicate(Op.IN, "d", one_and_a_half, Literal("decimal", Decimal("2.5")))
    assert _residual(identity_d, in_set, Decimal("1.50")) is FALSE


def test_signed_zero_partitions_are_not_conflated() -> None:
    evaluator = ResidualEvaluator(_spec(("f", "identity", "f")), SCHEMA, predicate(Op.EQ, "f", 0.0))
    assert evaluator.residual_for((0.0,)) is TRUE
    assert evaluator.residual_for((-0.0,)) is FALSE  # Double.compare(-0.0, 0.0) < 0
    assert evaluator.residual_for((0.0,)) is TRUE


def test_starts_with_on_a_null_partition() -> None:
    identity_s = _spec(("s", "identity", "s"))
    assert _residual(identity_s, predicate(Op.STARTS_WITH, "s", "a"), None) is FALSE
    # Java throws a NullPointerException here; we answer like Java's row Evaluator (not-starts-with null)
    assert _residual(identity_s, predicate(Op.NOT_STARTS_WITH, "s", "a"), None) is TRUE
    assert _residual(identity_s, predicate(Op.NOT_STARTS_WITH, "s", "a"), "abc") is FALSE

"""The row filter's three pruning steps and the residuals, as ManifestGroup applies them (Java 1.10).

1. a manifest is skipped when its partition summaries cannot match the filter's inclusive projection;
2. a live entry is dropped when its partition tuple cannot match that projection, or when its column
   metrics cannot match the filter (which also drops files with record_count == 0);
3. each kept data file carries the residual: what its partition does not already guarantee.
With no filter (exactly TRUE) nothing is pruned and every residual is TRUE, as in Java.
Evaluators are made once per partition spec; files are pruned a whole FileIndex at a time, partitions
and residuals once per distinct partition.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner_service.expressions.binding import bind
from planner_service.expressions.evaluator import Evaluator
from planner_service.expressions.expression import TRUE, Expression, Op
from planner_service.expressions.expression_json import expression_to_json
from planner_service.expressions.projections import inclusive_projection
from planner_service.expressions.residuals import ResidualEvaluator
from planner_service.expressions.visitor import bound_predicates, rewrite_not
from planner_service.json_text import dumps
from planner_service.metadata.content_file import ContentFile
from planner_service.metadata.conversions import java_equality_key
from planner_service.metadata.file_index import FileIndex
from planner_service.metadata.manifest_list import ManifestFile
from planner_service.metadata.partitioning import PartitionSpec
from planner_service.metadata.types import PrimitiveType, Schema, StructType
from planner_service.pruning.manifest_evaluator import ManifestEvaluator
from planner_service.pruning.metrics_evaluator import InclusiveMetricsEvaluator

BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
Int32Array = np.ndarray[Any, np.dtype[np.int32]]
Int64Array = np.ndarray[Any, np.dtype[np.int64]]


class RowFilter:
    def __init__(
        self,
        row_filter: Expression,
        schema: Schema,
        specs: dict[int, PartitionSpec],
        case_sensitive: bool,
        metrics_filter: Expression | None = None,
    ):
        """Binds the filter against `schema` (the table's current schema) at once, so a bad filter fails here.
        With `metrics_filter`, column metrics judge that one instead (a wider filter of the same rows: under
        read restrictions, planning/read_restriction.py)."""
        self.expr = row_filter
        self.is_true = row_filter is TRUE
        self._schema, self._specs, self._cs = schema, specs, case_sensitive
        judged = row_filter if metrics_filter is None else metrics_filter
        self._metrics = None if self.is_true else InclusiveMetricsEvaluator(schema, judged, case_sensitive)
        self._manifest: dict[int, ManifestEvaluator] = {}
        self._partition: dict[int, tuple[Evaluator, StructType, dict[tuple[Any, ...], bool]]] = {}
        self._residual: dict[int, ResidualEvaluator] = {}

    def _spec(self, spec_id: int) -> PartitionSpec:
        return self._specs[spec_id]

    def manifest_might_match(self, manifest: ManifestFile) -> bool:
        if self.is_true:
            return True
        spec_id = manifest.partition_spec_id
        evaluator = self._manifest.get(spec_id)
        if evaluator is None:
            spec = self._spec(spec_id)
            evaluator = self._manifest[spec_id] = ManifestEvaluator.for_row_filter(
                self.expr, spec, self._schema, self._cs
            )
        return evaluator.eval(manifest)

    def file_mask(self, index: FileIndex) -> BoolArray:
        """Might each file of `index` hold matching rows? Its partition, then its column metrics (which
        also rule out files with record_count == 0), for all rows at once."""
        if self.is_true:
            return np.ones(len(index), dtype=bool)
        assert self._metrics is not None
        might = self.partition_mask(index)
        if might.any():
            might &= self._metrics.eval(index.stats)
        return might

    def partition_filter(self, spec_id: int) -> tuple[Expression, StructType]:
        """The filter's inclusive projection onto a spec, bound to its partition type."""
        evaluator, partition_type, _ = self._partition_state(spec_id)
        return evaluator.expr, partition_type

    def _partition_state(self, spec_id: int) -> tuple[Evaluator, StructType, dict[tuple[Any, ...], bool]]:
        cached = self._partition.get(spec_id)
        if cached is None:
            spec = self._spec(spec_id)
            partition_type = spec.partition_type(self._schema)
            projected = inclusive_projection(spec, self._schema, self.expr, self._cs)
            bound = bind(Schema(0, partition_type), rewrite_not(projected), self._cs)
            cached = self._partition[spec_id] = (Evaluator(partition_type, bound), partition_type, {})
        return cached

    def partition_mask(self, index: FileIndex) -> BoolArray:
        """Might each file's partition tuple match? (Java's partition Evaluator, nulls first.) Evaluated once
        per distinct partition of the index; not at all when the filter projects to true on every spec (it
        reads no partition source)."""
        spec_ids = {spec_id for spec_id, _ in index.partitions}
        if all(self._partition_state(spec_id)[0].expr.op == Op.TRUE for spec_id in spec_ids):
            return np.ones(len(index), dtype=bool) if len(index.partitions) else np.zeros(len(index), dtype=bool)
        ok = np.fromiter(
            (self._partition_might_match(spec_id, values) for spec_id, values in index.partitions),
            dtype=bool,
            count=len(index.partitions),
        )
        return ok[index.partition_id] if len(index.partitions) else np.zeros(len(index), dtype=bool)

    def _partition_might_match(self, spec_id: int, values: tuple[Any, ...]) -> bool:
        evaluator, _, memo = self._partition_state(spec_id)
        key = tuple(java_equality_key(v) for v in values)  # Java equality: -0.0 is not 0.0
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = evaluator.eval(values)
        return hit

    @property
    def field_ids(self) -> set[int]:
        """The field ids the filter reads (Java Binder.boundReferences), bound to the current schema."""
        return set() if self._metrics is None else {p.term.field_id for p in bound_predicates(self._metrics.expr)}

    @property
    def bound_fields(self) -> list[tuple[int, PrimitiveType]]:
        """(field id, type as bound) of each column whose statistics the filter's metrics pruning reads; none
        when one of them is not a primitive."""
        if self._metrics is None:
            return []
        fields = {p.term.field_id: p.term.ref.type for p in bound_predicates(self._metrics.expr)}
        primitive = [(field_id, typ) for field_id, typ in sorted(fields.items()) if isinstance(typ, PrimitiveType)]
        return primitive if len(primitive) == len(fields) else []

    @property
    def metrics_evaluator(self) -> InclusiveMetricsEvaluator | None:
        return self._metrics

    def residuals(self, index: FileIndex, rows: Int64Array) -> tuple[Int32Array, tuple[Expression, ...]]:
        """The residual of each of `rows`, as an index into a table of distinct residuals (Java: what the
        file's partition does not already guarantee; TRUE throughout without a filter)."""
        if self.is_true or not len(rows):
            return np.zeros(len(rows), dtype=np.int32), (TRUE,)
        pids = index.partition_id[rows]
        of_partition = np.zeros(len(index.partitions), dtype=np.int32)
        table: list[Expression] = []
        seen: dict[bytes, int] = {}
        for pid in np.unique(pids).tolist():
            spec_id, values = index.partitions[pid]
            residual = self._residual_evaluator(spec_id).residual_for(values)
            key = dumps(expression_to_json(residual), sort_keys=True)
            rid = seen.get(key)
            if rid is None:
                rid = seen[key] = len(table)
                table.append(residual)
            of_partition[pid] = rid
        return of_partition[pids], tuple(table)

    def residual(self, f: ContentFile) -> Expression:
        if self.is_true:
            return TRUE
        return self._residual_evaluator(f.spec_id).residual_for(f.partition)

    def _residual_evaluator(self, spec_id: int) -> ResidualEvaluator:
        evaluator = self._residual.get(spec_id)
        if evaluator is None:
            evaluator = self._residual[spec_id] = ResidualEvaluator(
                self._spec(spec_id), self._schema, self.expr, self._cs
            )
        return evaluator

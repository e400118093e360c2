"""Why a scan reads what it reads: for each manifest and each data file, kept or skipped and what decided
(the partition summary, the partition value, or the column bound), for `explain` on /plan.

Reasons are computed with the same evaluators that pruned, one conjunct of the filter at a time, so the
explanation names the predicate that ruled a file out and the statistics it was ruled out by. They are
words for people, with filters and values written as filter strings (`column statistics cannot match
id < 5: id: 33..57, 10 values, 0 nulls`); the rule codes and the JSON filter are what programs read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np

from planner_service.expressions.expression import Expression, Op
from planner_service.expressions.expression_json import expression_to_json
from planner_service.expressions.filter_text import filter_text, name_text, value_text
from planner_service.expressions.visitor import bound_predicates
from planner_service.metadata.content_file import ContentFile
from planner_service.metadata.conversions import from_bytes
from planner_service.metadata.file_index import FileIndex
from planner_service.metadata.manifest_list import DATA_MANIFEST, FieldSummary, ManifestFile
from planner_service.metadata.stats_columns import StatsColumns
from planner_service.metadata.types import IcebergType, NestedField, StructType
from planner_service.planning.row_filter import RowFilter
from planner_service.pruning.metrics_evaluator import LOWER, NAN_COUNTS, NULL_COUNTS, UPPER, VALUE_COUNTS

# What decided a data file, one code per file (the summaries count them; the words are made only for the
# files shown): kept without a filter or because it might match; skipped by its partition value, because it
# is empty, or by its column statistics (bounds, null counts, NaN counts: what the failing conjunct reads).
FileRule = Literal[
    "no-filter", "might-match", "partition-value", "empty-file", "column-bounds", "null-counts", "nan-counts"
]
FILE_RULES: tuple[FileRule, ...] = get_args(FileRule)
KEPT_RULES = frozenset({"no-filter", "might-match"})
_NULL_OPS = frozenset({Op.IS_NULL, Op.NOT_NULL})
_NAN_OPS = frozenset({Op.IS_NAN, Op.NOT_NAN})
RuleArray = np.ndarray[Any, np.dtype[np.int8]]


@dataclass
class ExplainedFiles:
    """The files of one index of kept manifests, with the rule that decided each."""

    index: FileIndex
    rules: RuleArray


@dataclass
class Explain:
    """The decisions of one plan, in planning order."""

    row_filter: Expression
    manifests: list[dict[str, Any]] = field(default_factory=list)
    files: list[ExplainedFiles] = field(default_factory=list)
    _filter: RowFilter | None = None

    def manifest(self, m: ManifestFile, kept: bool, rule: str, reason: str) -> None:
        self.manifests.append(
            {
                "manifest-path": m.manifest_path,
                "content": "data" if m.content == DATA_MANIFEST else "deletes",
                "partition-spec-id": m.partition_spec_id,
                "kept": kept,
                "rule": rule,
                "reason": reason,
            }
        )

    def data_files_of(self, index: FileIndex, row_filter: RowFilter) -> None:
        """Every file of the kept manifests (`index`), with the rule that kept or skipped it."""
        self._filter = row_filter
        self.files.append(ExplainedFiles(index, file_rules(index, row_filter)))

    @property
    def nbytes(self) -> int:
        """What the explanation holds: the indexes of the kept manifests and a rule a file."""
        return sum(part.index.nbytes + part.rules.nbytes for part in self.files)

    @property
    def file_count(self) -> int:
        return sum(len(part.rules) for part in self.files)

    def rule_counts(self) -> dict[str, int]:
        """How many files each rule decided."""
        counts = np.zeros(len(FILE_RULES), np.int64)
        for part in self.files:
            counts += np.bincount(part.rules, minlength=len(FILE_RULES))
        return {rule: int(n) for rule, n in zip(FILE_RULES, counts, strict=True) if n}

    def data_files(self, start: int = 0, stop: int | None = None, rule: str | None = None) -> list[dict[str, Any]]:
        """Files start..stop-1 in planning order (of those `rule` decided, when given), each with its reason
        in words."""
        wanted = None if rule is None else FILE_RULES.index(rule)
        out: list[dict[str, Any]] = []
        skip, left = start, (stop - start if stop is not None else None)
        for part in self.files:
            if left is not None and left <= 0:
                break
            rows = np.arange(len(part.rules)) if wanted is None else np.flatnonzero(part.rules == wanted)
            if skip >= len(rows):
                skip -= len(rows)
                continue
            rows = rows[skip : None if left is None else skip + left]
            skip = 0
            out += _described(part, rows, self._filter)
            if left is not None:
                left -= len(rows)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "filter": expression_to_json(self.row_filter),
            "manifests": self.manifests,
            "data-files": self.data_files(),
        }


def _described(part: ExplainedFiles, rows: np.ndarray[Any, Any], row_filter: RowFilter | None) -> list[dict[str, Any]]:
    """The files of `rows` with their reasons in words (made one file at a time: only for the files shown)."""
    if not len(rows):
        return []
    assert row_filter is not None
    index = part.index.take(rows.astype(np.int64))
    files = index.content_files()
    sizes, records = index.ints("file_size_in_bytes"), index.stats.record_count
    return [
        {
            "file-path": f.path,
            "kept": kept,
            "rule": FILE_RULES[int(code)],
            "reason": reason,
            "file-size-in-bytes": int(sizes[i]),
            "record-count": int(records[i]),
        }
        for i, (f, (kept, reason), code) in enumerate(
            zip(files, file_reasons(index, files, row_filter), part.rules[rows], strict=True)
        )
    ]


def file_rules(index: FileIndex, row_filter: RowFilter) -> RuleArray:
    """The rule that decided each file of `index` (FILE_RULES codes), as file_reasons decides them, for all
    files at once."""
    if row_filter.is_true:
        return np.zeros(len(index), np.int8)
    codes = np.full(len(index), FILE_RULES.index("might-match"), np.int8)
    undecided = row_filter.partition_mask(index)
    codes[~undecided] = FILE_RULES.index("partition-value")
    records = index.stats.record_count
    empty = undecided & (records == 0)
    codes[empty] = FILE_RULES.index("empty-file")
    undecided &= ~empty
    evaluator = row_filter.metrics_evaluator
    assert evaluator is not None
    for conjunct, mask in evaluator.eval_conjuncts(index.stats):
        failed = undecided & (records > 0) & ~mask
        codes[failed] = FILE_RULES.index(_metrics_rule(conjunct))
        undecided &= ~failed
    return codes


def _metrics_rule(conjunct: Expression) -> str:
    ops = {pred.op for pred in bound_predicates(conjunct)}
    if ops and ops <= _NULL_OPS:
        return "null-counts"
    if ops and ops <= _NAN_OPS:
        return "nan-counts"
    return "column-bounds"


def manifest_reason(m: ManifestFile, row_filter: RowFilter) -> tuple[bool, str, str]:
    """(kept, rule, why) for one manifest, in ManifestGroup's order of checks; the filter is the inclusive
    projection bound to the spec's partition fields, as a filter string."""
    if not m.has_added_or_existing_files:
        return False, "no-live-files", "no added or existing files (only deleted entries)"
    if row_filter.is_true:
        return True, "no-filter", "no filter"
    bound, partition_type = row_filter.partition_filter(m.partition_spec_id)
    if row_filter.manifest_might_match(m):
        return True, "might-match", f"partition summaries might match {filter_text(bound)}"
    summaries = "; ".join(
        _summary_text(fld, summary) for fld, summary in zip(partition_type.fields, m.partitions or (), strict=False)
    )
    return (
        False,
        "partition-summaries",
        f"partition summaries ({summaries or 'none'}) cannot match {filter_text(bound)}",
    )


def _summary_text(fld: NestedField, summary: FieldSummary) -> str:
    """One partition field's summary: `category: 'a'..'c', may hold nulls` (or `no bounds`, `no nulls`)."""
    lower = None if summary.lower_bound is None else from_bytes(fld.type, summary.lower_bound)
    upper = None if summary.upper_bound is None else from_bytes(fld.type, summary.upper_bound)
    parts = [_range_text(fld.type, lower, upper), "may hold nulls" if summary.contains_null else "no nulls"]
    if summary.contains_nan:
        parts.append("may hold NaNs")
    return f"{name_text(fld.name)}: {', '.join(parts)}"


def _range_text(typ: IcebergType, lower: Any, upper: Any) -> str:
    """`lower..upper` as filter values; a missing side left empty, `no bounds` when both are."""
    if lower is None and upper is None:
        return "no bounds"
    return "..".join("" if v is None else value_text(typ, v) for v in (lower, upper))


def file_reasons(index: FileIndex, files: list[ContentFile], row_filter: RowFilter) -> list[tuple[bool, str]]:
    """(kept, why) for each file of `index` (`files` = index.content_files()), filters and values written as
    filter strings."""
    if row_filter.is_true:
        return [(True, "no filter")] * len(files)
    partition_ok = row_filter.partition_mask(index)
    evaluator = row_filter.metrics_evaluator
    assert evaluator is not None
    stats = index.stats
    records = stats.record_count
    conjuncts = evaluator.eval_conjuncts(stats)
    out: list[tuple[bool, str]] = []
    for i, f in enumerate(files):
        if not partition_ok[i]:
            bound, partition_type = row_filter.partition_filter(f.spec_id)
            values = _partition_text(partition_type, f.partition)
            out.append((False, f"partition {values} cannot match {filter_text(bound)}"))
        elif records[i] == 0:
            out.append((False, "record_count is 0 (a filtered scan drops empty files)"))
        elif records[i] > 0 and (failed := next((c for c, mask in conjuncts if not mask[i]), None)):
            out.append(
                (False, f"column statistics cannot match {filter_text(failed)}: {_stats_text(stats, failed, i)}")
            )
        else:
            out.append((True, f"might match; residual {filter_text(row_filter.residual(f))}"))
    return out


def _partition_text(partition_type: StructType, values: Sequence[Any]) -> str:
    """A partition tuple as `(category = 'a', ts_day = DATE '2024-01-02')`, null as `null`."""
    fields = zip(partition_type.fields, values, strict=False)
    return "(" + ", ".join(f"{name_text(fld.name)} = {value_text(fld.type, v)}" for fld, v in fields) + ")"


def _stats_text(stats: StatsColumns, expr: Expression, row: int) -> str:
    """The statistics of the columns a (bound) conjunct reads, for one file: `id: 33..57, 10 values, 0 nulls`
    (and `, N NaNs` where counted; `no bounds` without bounds), a column at a time."""
    parts = []
    for pred in bound_predicates(expr):
        fid, typ = pred.term.field_id, pred.term.ref.type
        lower, upper = (_bound_of(stats, column, fid, typ, row) for column in (LOWER, UPPER))
        text = [_range_text(typ, lower, upper)]
        for word, name in (("value", VALUE_COUNTS), ("null", NULL_COUNTS), ("NaN", NAN_COUNTS)):
            counts, present = stats.counts(name, fid)
            if present[row]:
                text.append(_count_text(int(counts[row]), word))
        parts.append(f"{name_text(pred.term.ref.name)}: {', '.join(text)}")
    return "; ".join(dict.fromkeys(parts)) or "no statistics"


def _bound_of(stats: StatsColumns, column: str, field_id: int, typ: IcebergType, row: int) -> Any:
    """One file's lower or upper bound of a column, decoded; None when it has none."""
    entries_of_row = stats.frame.get_column(column).slice(row, 1).to_list()[0] or ()
    raw = next((e["value"] for e in entries_of_row if e["key"] == field_id), None)
    return None if raw is None else from_bytes(typ, raw)


def _count_text(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"

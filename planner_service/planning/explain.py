"""Why a scan reads what it reads: for each manifest and each data file, kept or skipped and what decided
(the partition summary, the partition value, or the column bound), for `explain` on /plan.

Reasons are computed with the same evaluators that pruned, one conjunct of the filter at a time, so the
explanation names the predicate that ruled a file out and the statistics it was ruled out by; a kept file's
reason names its evidence the same way: the partition value and the column statistics that leave a match
possible, and what its rows are still checked against (`may match id < 100: id: 3..250, 50 values, 0 nulls;
each row is checked against id < 100`), or the partition that decides every row. They are words for people,
with filters and values written as filter strings (`column statistics cannot match id < 5: id: 33..57, 10
values, 0 nulls`); the rule codes and the JSON filter are what programs read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np

from planner_service.expressions.expression import TRUE, BoundPredicate, Expression, Op, Reference
from planner_service.expressions.expression_json import expression_to_json
from planner_service.expressions.filter_text import filter_text, name_text, value_text
from planner_service.expressions.visitor import bound_predicates, predicates
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
    # manifest path -> where its entries came from: "memory" (the planner's cache), "index-tier" (the disk
    # tier: a file another process, or this one before a restart, wrote) or "decoded" (read and decoded now)
    read_from: dict[str, str] = field(default_factory=dict)
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

    def data_files(
        self, start: int = 0, stop: int | None = None, rule: str | None = None, kept_first: bool = False
    ) -> list[dict[str, Any]]:
        """Files start..stop-1 in planning order, of those `rule` decided when given; with `kept_first` (and no
        rule), the kept files before the skipped ones, each group in planning order. Each file with its reason
        in words."""
        if rule is not None:
            groups: list[RuleArray | None] = [np.array([FILE_RULES.index(rule)], np.int8)]
        elif kept_first:
            kept = np.array([code for code, name in enumerate(FILE_RULES) if name in KEPT_RULES], np.int8)
            skipped = np.array([code for code, name in enumerate(FILE_RULES) if name not in KEPT_RULES], np.int8)
            groups = [kept, skipped]
        else:
            groups = [None]
        out: list[dict[str, Any]] = []
        skip, left = start, (stop - start if stop is not None else None)
        for part, rows in self._selected(groups):
            if left is not None and left <= 0:
                break
            if skip >= len(rows):
                skip -= len(rows)
                continue
            rows = rows[skip : None if left is None else skip + left]
            skip = 0
            out += _described(part, rows, self._filter)
            if left is not None:
                left -= len(rows)
        return out

    def _selected(self, groups: list[RuleArray | None]) -> Iterator[tuple[ExplainedFiles, np.ndarray[Any, Any]]]:
        """The rows of each part whose rule is one of a group's (None: every row), a group after the other."""
        for codes in groups:
            for part in self.files:
                rows = np.arange(len(part.rules)) if codes is None else np.flatnonzero(np.isin(part.rules, codes))
                yield part, rows

    def manifest_entries(self, start: int = 0, stop: int | None = None) -> list[dict[str, Any]]:
        """Manifests start..stop-1 in planning order, each kept one with where its entries were read from."""
        read_from = self.read_from
        return [
            {**m, "read-from": read_from[m["manifest-path"]]} if m["manifest-path"] in read_from else m
            for m in self.manifests[start:stop]
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "filter": expression_to_json(self.row_filter),
            "manifests": self.manifest_entries(),
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
    summaries = "; ".join(
        _summary_text(fld, summary) for fld, summary in zip(partition_type.fields, m.partitions or (), strict=False)
    )
    if not row_filter.manifest_might_match(m):
        return (
            False,
            "partition-summaries",
            f"partition summaries ({summaries or 'none'}) cannot match {filter_text(bound)}",
        )
    if not partition_type.fields:
        return True, "might-match", "unpartitioned: no partition summaries to rule it out"
    if bound is TRUE:  # (the filter's inclusive projection onto this spec says nothing of its partitions)
        return True, "might-match", f"the filter sets no condition on the partition ({summaries or 'no summaries'})"
    return True, "might-match", f"partition summaries ({summaries or 'none'}) may match {filter_text(bound)}"


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
    kept = _KeptWords(row_filter, stats)
    out: list[tuple[bool, str]] = []
    for i, f in enumerate(files):
        if not partition_ok[i]:
            bound, partition_type = row_filter.partition_filter(f.spec_id)
            values = _partition_text(partition_type, f.partition)
            out.append((False, f"partition {values} cannot match {filter_text(bound)}"))
        elif records[i] == 0:
            out.append((False, "record_count is 0 (a filtered scan drops empty files)"))
        elif records[i] > 0 and (failed := next((c for c, mask in conjuncts if not mask[i]), None)):
            evidence = _stats_text(stats, bound_predicates(failed), i)
            out.append((False, f"column statistics cannot match {filter_text(failed)}: {evidence}"))
        else:
            out.append((True, kept.reason(f, i)))
    return out


class _KeptWords:
    """A kept file's reason with its evidence: `may match F: partition (...); id: 3..250, 50 values, 0 nulls;
    each row is checked against R` (R its residual; the partition when the filter limits it, the statistics of
    the columns R reads), or, when the partition decides every row (R is true), `every row matches F:
    partition (...) decides it; rows are not checked`. F is the bound filter, written as the skipped files'
    conjuncts are."""

    def __init__(self, row_filter: RowFilter, stats: StatsColumns) -> None:
        evaluator = row_filter.metrics_evaluator
        assert evaluator is not None
        self._row_filter, self._stats, self._bound = row_filter, stats, evaluator.expr
        self._filter_text = filter_text(evaluator.expr)

    def reason(self, f: ContentFile, row: int) -> str:
        residual = self._row_filter.residual(f)
        projected, partition_type = self._row_filter.partition_filter(f.spec_id)
        partition = _partition_text(partition_type, f.partition) if partition_type.fields else None
        if residual is TRUE:
            decides = f"partition {partition} decides it" if partition else "the filter holds for every row"
            return f"every row matches {self._filter_text}: {decides}; rows are not checked"
        evidence = [f"partition {partition}"] if partition and projected is not TRUE else []
        read = _column_names(residual)
        checked = [pred for pred in bound_predicates(self._bound) if pred.ref.name in read]
        if checked:
            evidence.append(_stats_text(self._stats, checked, row))
        said = f": {'; '.join(evidence)}" if evidence else ""
        return f"may match {self._filter_text}{said}; each row is checked against {filter_text(residual)}"


def _column_names(expr: Expression) -> set[str]:
    """The columns an expression reads, by the names its filter used (a bound reference keeps that name)."""
    names = set()
    for pred in predicates(expr):
        term = pred.term
        names.add(term.name if isinstance(term, Reference) else term.ref.name)
    return names


def _partition_text(partition_type: StructType, values: Sequence[Any]) -> str:
    """A partition tuple as `(category = 'a', ts_day = DATE '2024-01-02')`, null as `null`."""
    fields = zip(partition_type.fields, values, strict=False)
    return "(" + ", ".join(f"{name_text(fld.name)} = {value_text(fld.type, v)}" for fld, v in fields) + ")"


def _stats_text(stats: StatsColumns, preds: Iterable[BoundPredicate], row: int) -> str:
    """The statistics of the columns bound predicates read, for one file: `id: 33..57, 10 values, 0 nulls`
    (and `, N NaNs` where counted; `no bounds` without bounds), a column at a time."""
    parts = []
    for pred in preds:
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

"""Why a scan reads what it reads: for each manifest and each data file, kept or skipped and what decided
(the partition summary, the partition value, or the column bound), for `explain` on /plan.

Reasons are computed with the same evaluators that pruned, one conjunct of the filter at a time, so the
explanation names the predicate that ruled a file out and the statistics it was ruled out by.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner_service.expressions.expression import Expression
from planner_service.expressions.expression_json import expression_to_json
from planner_service.expressions.visitor import bound_predicates
from planner_service.metadata.content_file import ContentFile
from planner_service.metadata.conversions import from_bytes
from planner_service.metadata.file_index import FileIndex
from planner_service.metadata.json_values import to_json_value
from planner_service.metadata.manifest_list import DATA_MANIFEST, ManifestFile
from planner_service.metadata.stats_columns import StatsColumns
from planner_service.planning.row_filter import RowFilter
from planner_service.pruning.metrics_evaluator import LOWER, NAN_COUNTS, NULL_COUNTS, UPPER, VALUE_COUNTS


@dataclass
class Explain:
    """The decisions of one plan, in planning order."""

    row_filter: Expression
    manifests: list[dict[str, Any]] = field(default_factory=list)
    data_files: list[dict[str, Any]] = field(default_factory=list)

    def manifest(self, m: ManifestFile, kept: bool, reason: str) -> None:
        self.manifests.append(
            {
                "manifest-path": m.manifest_path,
                "content": "data" if m.content == DATA_MANIFEST else "deletes",
                "partition-spec-id": m.partition_spec_id,
                "kept": kept,
                "reason": reason,
            }
        )

    def data_files_of(self, index: FileIndex, row_filter: RowFilter) -> None:
        """Every file of the kept manifests (`index`), with why it was kept or skipped."""
        files = index.content_files()
        for f, (kept, reason) in zip(files, file_reasons(index, files, row_filter), strict=True):
            self.data_files.append({"file-path": f.path, "kept": kept, "reason": reason})

    def to_json(self) -> dict[str, Any]:
        return {
            "filter": expression_to_json(self.row_filter),
            "manifests": self.manifests,
            "data-files": self.data_files,
        }


def manifest_reason(m: ManifestFile, row_filter: RowFilter) -> tuple[bool, str]:
    """(kept, why) for one manifest, in ManifestGroup's order of checks."""
    if not m.has_added_or_existing_files:
        return False, "no added or existing files (only deleted entries)"
    if row_filter.is_true:
        return True, "no filter"
    bound, partition_type = row_filter.partition_filter(m.partition_spec_id)
    if row_filter.manifest_might_match(m):
        return True, f"partition summaries might match {bound}"
    summaries = []
    for fld, summary in zip(partition_type.fields, m.partitions or (), strict=False):
        lower = to_json_value(fld.type, from_bytes(fld.type, summary.lower_bound))
        upper = to_json_value(fld.type, from_bytes(fld.type, summary.upper_bound))
        summaries.append(f"{fld.name} in [{lower}, {upper}] contains_null={summary.contains_null}")
    return False, f"partition summaries ({'; '.join(summaries)}) cannot match {bound}"


def file_reasons(index: FileIndex, files: list[ContentFile], row_filter: RowFilter) -> list[tuple[bool, str]]:
    """(kept, why) for each file of `index` (`files` = index.content_files())."""
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
            values = {
                fld.name: to_json_value(fld.type, v) for fld, v in zip(partition_type.fields, f.partition, strict=False)
            }
            out.append((False, f"partition {values} cannot match {bound}"))
        elif records[i] == 0:
            out.append((False, "record_count is 0 (a filtered scan drops empty files)"))
        elif records[i] > 0 and (failed := next((c for c, mask in conjuncts if not mask[i]), None)):
            out.append((False, f"column metrics cannot match {failed}: {_stats_text(stats, failed, i)}"))
        else:
            out.append((True, f"might match; residual {_json_text(row_filter.residual(f))}"))
    return out


def _stats_text(stats: StatsColumns, expr: Expression, row: int) -> str:
    """The statistics of the columns a (bound) conjunct reads, for one file."""
    parts = []
    for pred in bound_predicates(expr):
        fid, typ = pred.term.field_id, pred.term.ref.type
        text = [f"{pred.term.ref.name}:"]
        for label, column in (("lower", LOWER), ("upper", UPPER)):
            entries_of_row = stats.frame.get_column(column).slice(row, 1).to_list()[0] or ()
            raw = next((e["value"] for e in entries_of_row if e["key"] == fid), None)
            if raw is not None:
                text.append(f"{label}={to_json_value(typ, from_bytes(typ, raw))}")
        for label, name in (("values", VALUE_COUNTS), ("nulls", NULL_COUNTS), ("nans", NAN_COUNTS)):
            counts, present = stats.counts(name, fid)
            if present[row]:
                text.append(f"{label}={int(counts[row])}")
        parts.append(" ".join(text))
    return "; ".join(dict.fromkeys(parts)) or "no statistics"


def _json_text(expr: Expression) -> str:
    value = expression_to_json(expr)
    return "true" if value is True else ("false" if value is False else str(value))

"""What every inclusive evaluator answers, and the limit they share (Java ManifestEvaluator and
InclusiveMetricsEvaluator: "might this manifest / file hold a row the filter matches?")."""

from __future__ import annotations

ROWS_MIGHT_MATCH, ROWS_CANNOT_MATCH = True, False
IN_PREDICATE_LIMIT = 200  # Java: an IN list longer than this is not checked against bounds (it might match)
